r"""Positions at inference: a key-value cache, left-padded batches and packed rows for a rotary LM.

Shape legend: ``batch`` rows, ``new`` tokens fed in this call, ``cached`` tokens already in the
cache, ``total = cached + new``; ``kv_heads`` key-value heads of ``head_dim`` channels.

* :func:`position_ids_from_mask`: each row's positions counted from its first real token, the
  attention mask's cumulative sum minus one (padding at 0), as transformers' ``generate``
  computes them (``_prepare_position_ids_for_generation`` in ``generation/utils.py``).
* :func:`causal_mask`: which key each new query may attend to, from a padding mask.
* :func:`packed_positions` and :func:`packed_causal_mask`: several documents in one row,
  positions restarting at 0 for each and a block-diagonal causal mask, the convention of
  transformers' ``DataCollatorWithFlattening`` (``data/data_collator.py``), whose masks are read
  back from where the positions restart (``find_packed_sequence_indices`` in
  ``masking_utils.py``).
* :class:`KVCache` and :func:`run_cached`: :class:`pe_lib.models.llama.RotaryLlama` fed a few
  tokens at a time. Each layer's keys are kept either *rotated* at their own positions when
  they are written (the usual cache: nothing cached is rotated again), or *unrotated*, rotated
  at every read at the positions the caller gives (by default their slot in the cache).
* :meth:`KVCache.keep`: an eviction. A cache that evicts tokens puts each key at its slot in
  the cache (StreamingLLM, Xiao et al., 2024, section 3.2), which two designs give: unrotated
  keys, rotated at their slots at every read (StreamingLLM's own code), or rotated keys that
  are rotated again by minus the number of slots they moved at each eviction, since rotations
  compose (llama.cpp's K-shift, ``build_rope_shift`` in ``src/llama-kv-cache.cpp``;
  transformers' ``SinkCache`` up to release 4.52).

With an empty cache, :func:`run_cached` is a full forward pass with any positions and any mask
(:meth:`RotaryLlama.forward <pe_lib.models.llama.RotaryLlama.forward>` with a causal mask is the
special case it is tested against).
"""

from __future__ import annotations

import numbers
import reprlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch.nn import functional as F

from .._validation import (
    check_bool,
    check_has_values,
    check_ids_below,
    check_instance,
    check_int64_tensor,
    check_memory,
    check_position_entries,
    check_positive_int,
    check_table_size,
    naming_allocation,
)
from ..rope import apply_rope, rope_angles, rotate
from ..rope.scaling import resolve_scaling
from .llama import RotaryLlama, block_qkv, block_rest, rms_norm

__all__ = [
    "KVCache",
    "causal_mask",
    "packed_causal_mask",
    "packed_positions",
    "position_ids_from_mask",
    "run_cached",
]


def _check_padding_mask(name: str, mask: object) -> torch.Tensor:
    """A 2-d mask of 0s and 1s (bool or integer) as a bool tensor ``(batch, seq_len)``."""
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of 0s and 1s, got {type(mask).__name__}")
    if mask.dim() != 2 or mask.shape[1] == 0:
        raise ValueError(
            f"{name} must have shape (batch, seq_len) with seq_len >= 1, got {tuple(mask.shape)}"
        )
    if mask.dtype != torch.bool:
        if mask.is_floating_point() or mask.is_complex():
            raise TypeError(f"{name} must be bool or an integer dtype, got {mask.dtype}")
        if not mask.is_meta:  # a meta tensor has a shape and no values to check
            others = mask[(mask != 0) & (mask != 1)]
            if others.numel():
                values = sorted(set(others[:1000].tolist()))
                raise ValueError(f"{name} must hold only 0 and 1, got also {values[:5]}")
        mask = mask == 1
    return mask


def position_ids_from_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """Positions counted from each row's first real token: ``cumsum(mask) - 1``, padding at 0.

    Shapes:
        ``attention_mask``: ``(batch, seq_len)``, 1 (or ``True``) for a real token, 0 for
        padding, bool or integer. Output: int64 ``(batch, seq_len)``.

    A left-padded row ``[0, 0, 1, 1, 1]`` gets ``[0, 0, 0, 1, 2]``: its tokens sit where they
    would sit alone. Padding gets 0, as in transformers' ``generate``; it is never attended to.
    A mask on the meta device (a shape without values) gives positions on it, unchecked.
    """
    mask = _check_padding_mask("attention_mask", attention_mask)
    positions = mask.long().cumsum(-1) - 1
    return positions.masked_fill(~mask, 0)


def causal_mask(attention_mask: torch.Tensor, new: int) -> torch.Tensor:
    """Which key each of the last ``new`` tokens may attend to: bool ``(batch, new, total)``.

    Shapes:
        ``attention_mask``: ``(batch, total)``, 1 for a real token and 0 for padding, over
        everything cached and the ``new`` tokens (the last ``new`` columns).

    Query ``i`` (at column ``total - new + i``) may attend to key ``j`` when ``j`` is not after
    it and key ``j`` is a real token. A padding query would then attend to nothing (a softmax
    over no key is NaN, which would reach the real tokens through its value): it attends to
    itself only, and no real token ever reads it.
    """
    mask = _check_padding_mask("attention_mask", attention_mask)
    total = mask.shape[1]
    new = check_positive_int("new", new)
    if new > total:
        raise ValueError(f"new must be at most attention_mask's {total} columns, got {new}")
    columns = torch.arange(total, device=mask.device)
    rows = columns[total - new :, None]  # (new, 1): each query's column
    allowed = (columns[None, :] <= rows) & mask[:, None, :]  # (batch, new, total)
    itself = columns[None, :] == rows  # (new, total)
    return allowed | (itself & ~mask[:, total - new :, None])


def _is_integer(values: torch.Tensor | np.ndarray) -> bool:
    """Whether a tensor or array holds integers (``bool`` is not one)."""
    if isinstance(values, np.ndarray):
        return bool(np.issubdtype(values.dtype, np.integer))
    return not (values.dtype == torch.bool or values.is_floating_point() or values.is_complex())


def _documents(sizes: list[int]) -> str:
    return f"{len(sizes)} document{'' if len(sizes) == 1 else 's'}"


def _check_lengths(lengths: object) -> list[int]:
    """Documents' lengths: a non-empty sequence, or a 1-d integer tensor or array, of positive
    ints."""
    what = "a non-empty sequence (or 1-d integer tensor) of positive ints, one per document"
    if isinstance(lengths, (torch.Tensor, np.ndarray)):
        if isinstance(lengths, torch.Tensor):
            check_has_values("lengths", lengths, what)
        if not _is_integer(lengths):
            kind = str(lengths.dtype).removeprefix("torch.")
            raise TypeError(f"lengths must be {what}, got a tensor of dtype {kind}")
        if lengths.ndim != 1 or not len(lengths):
            raise ValueError(
                f"lengths must be {what}, got a tensor of shape {tuple(lengths.shape)}"
            )
        lengths = lengths.tolist()
    if isinstance(lengths, (str, bytes)) or not isinstance(lengths, Sequence) or not lengths:
        raise TypeError(f"lengths must be {what}, got {reprlib.repr(lengths)}")
    return [check_positive_int(f"lengths[{i}]", n) for i, n in enumerate(lengths)]


def packed_positions(lengths: Sequence[int] | torch.Tensor) -> torch.Tensor:
    """Positions of documents packed in one row, restarting at 0 for each: int64 ``(total,)``.

    ``lengths`` ``[3, 2]`` gives ``[0, 1, 2, 0, 1]`` (transformers' ``DataCollatorWithFlattening``
    returns these as ``position_ids``). ``lengths`` may be a sequence of ints or a 1-d integer
    tensor or array; a ``total`` whose positions need more memory than this machine has is
    refused before anything is allocated.
    """
    sizes = _check_lengths(lengths)
    total = sum(sizes)
    # the result and each token's document start, int64
    nbytes = 16 * total + 16 * len(sizes)
    what = f"packed_positions: {total} int64 positions ({_documents(sizes)})"
    check_memory(what, nbytes)
    with naming_allocation(what, nbytes):
        counts = torch.tensor(sizes)
        starts = torch.repeat_interleave(counts.cumsum(0) - counts, counts, output_size=total)
        return torch.arange(total) - starts


def packed_causal_mask(lengths: Sequence[int] | torch.Tensor) -> torch.Tensor:
    """Block-diagonal causal mask of documents packed in one row: bool ``(total, total)``.

    Entry ``(i, j)`` is ``True`` when tokens ``i`` and ``j`` are in the same document and ``j``
    is not after ``i``: each document sees only itself, as if it were alone. ``lengths`` as for
    :func:`packed_positions`; a mask that needs more memory than this machine has (``total**2``
    bytes) is refused before anything is allocated.
    """
    sizes = _check_lengths(lengths)
    total = sum(sizes)
    check_table_size("sum(lengths)", total, "sum(lengths)", total)
    nbytes = total * total  # the mask alone: it is filled in place
    what = f"packed_causal_mask: a ({total}, {total}) bool mask ({_documents(sizes)})"
    check_memory(what, nbytes)
    with naming_allocation(what, nbytes):
        mask = torch.zeros(total, total, dtype=torch.bool)
        start = 0
        for n in sizes:  # each document's block on the diagonal, then the causal half of all
            mask[start : start + n, start : start + n] = True
            start += n
        return mask.tril_()


@dataclass
class KVCache:
    """Each layer's keys and values, ``(batch, kv_heads, cached, head_dim)``, grown by
    :func:`run_cached`.

    Attributes:
        rotated: ``True`` (the usual cache) keeps keys rotated at the positions they were
            written at, rotated again only by an eviction (:meth:`keep`); ``False`` keeps them
            unrotated, to be rotated at each read. Fixed when the cache is created: it says how
            the keys already stored were written, so assigning it afterwards raises
            ``AttributeError`` (flipped, keys stored rotated would be rotated again at every
            read, keys stored plain never).
        keys, values: one tensor per layer once something is cached.
    """

    rotated: bool = True
    keys: list[torch.Tensor] = field(default_factory=list)
    values: list[torch.Tensor] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_bool("rotated", self.rotated)

    def __setattr__(self, name: str, value: object) -> None:
        if name == "rotated" and "rotated" in vars(self):
            raise AttributeError(
                f"KVCache.rotated is fixed when the cache is created (it says how the stored "
                f"keys were written), got an assignment of {value!r} to a cache with "
                f"rotated={self.rotated}; create a new KVCache(rotated={value!r})"
            )
        super().__setattr__(name, value)

    @property
    def length(self) -> int:
        """How many tokens are cached (per row, padding included)."""
        return 0 if not self.keys else int(self.keys[0].shape[-2])

    def _store(self, keys: list[torch.Tensor], values: list[torch.Tensor]) -> None:
        # one dict update, which runs no Python code: an interrupt lands before or after it,
        # never between the keys and the values
        vars(self).update(keys=keys, values=values)

    def keep(self, slots: Sequence[int] | torch.Tensor, model: RotaryLlama | None = None) -> None:
        """Keep only the tokens at ``slots`` (increasing), in that order: an eviction.

        The token at slot ``slots[i]`` moves to slot ``i``, ``slots[i] - i`` slots down. An
        unrotated cache only drops the others: its keys are rotated when they are read, at
        whatever positions :func:`run_cached` is given (by default their new slots). A rotated
        cache needs ``model``, the one that wrote it: each key is rotated again by
        ``-(slots[i] - i)`` positions (llama.cpp's K-shift), so that a key written at position
        ``p`` is now at ``p - (slots[i] - i)``, as if it had been written there, up to one
        rounding to the keys' dtype per eviction (the rotation itself runs in float32, as
        :func:`~pe_lib.rope.rotate` does).

        Args:
            slots: int ``(kept,)``, increasing, each in ``[0, length)``: a sequence of ints or
                an integer tensor or array; empty keeps nothing.
            model: ``None`` for an unrotated cache; for a rotated one, the
                :class:`~pe_lib.models.llama.RotaryLlama` whose base, layout and scaling rotated
                the keys (a scaling whose frequencies depend on the sequence length,
                ``"dynamic"`` or ``"longrope"``, is refused: a key rotated at one length's
                frequencies cannot be moved with another's).

        Raises:
            TypeError: ``slots`` is not a 1-d sequence of ints, or ``model`` not a RotaryLlama.
            ValueError: ``slots`` out of range or not increasing; ``model`` missing for a
                rotated cache, given for an unrotated one, or not the shape of the model that
                wrote the cache; a length-dependent scaling. On either error the cache is left
                as it was.
        """
        _check_contents(self)
        index = _check_slots(slots, self.length)
        if not self.rotated:
            if model is not None:
                raise ValueError(
                    "model is for a cache of rotated keys, which an eviction rotates again; "
                    "an unrotated cache (KVCache(rotated=False)) only drops keys: omit model"
                )
            keys = [k[..., index.to(k.device), :] for k in self.keys]
        else:
            if model is None:
                raise ValueError(
                    "keep() on a cache of rotated keys needs model=, the RotaryLlama that wrote "
                    "them: each kept key is rotated again by minus the slots it moves"
                )
            model = check_instance("model", model, RotaryLlama)
            _check_written_by(self, model, shape=False)
            spec = model.spec
            config = resolve_scaling(model.scaling, spec.rope_theta)
            if config.entry.needs_seq_len:
                raise ValueError(
                    f"model's {config.rope_type!r} scaling chooses its frequencies from the "
                    f"sequence length, so a key rotated at one length cannot be moved with "
                    f"another's: use KVCache(rotated=False) to evict"
                )
            keys = [k[..., index.to(k.device), :] for k in self.keys]
            moved = index - torch.arange(len(index))  # (kept,) slots each key moves down
            if keys and bool((moved > 0).any()):
                angles = rope_angles(
                    moved.to(keys[0].device),
                    spec.head_dim,
                    base=spec.rope_theta,
                    scaling=model.scaling,
                )  # (kept, head_dim / 2), float64
                cos, sin = angles.cos(), -angles.sin()  # rotation by -moved
                keys = [rotate(k, cos, sin, model.layout) for k in keys]
        self._store(keys, [v[..., index.to(v.device), :] for v in self.values])


def _check_slots(slots: object, length: int) -> torch.Tensor:
    """Slots to keep: increasing ints in ``[0, length)``, as an int64 CPU tensor."""
    what = "a 1-d sequence of ints (or an integer tensor)"
    if isinstance(slots, np.ndarray):
        slots = torch.as_tensor(slots)
    if isinstance(slots, torch.Tensor):
        check_has_values("slots", slots, what)
        if not _is_integer(slots) or slots.dim() != 1:
            raise TypeError(
                f"slots must be {what}, got a {str(slots.dtype).removeprefix('torch.')} tensor "
                f"of shape {tuple(slots.shape)}"
            )
        index = slots.to("cpu", torch.int64)
    elif isinstance(slots, (str, bytes)) or not isinstance(slots, Sequence):
        raise TypeError(f"slots must be {what}, got {reprlib.repr(slots)}")
    else:
        entries = list(slots)
        odd = [s for s in entries if isinstance(s, bool) or not isinstance(s, numbers.Integral)]
        if odd:
            raise TypeError(
                f"slots must be {what}, got {reprlib.repr(slots)} with entries that are not "
                f"ints: {reprlib.repr(odd)}"
            )
        entries = [int(s) for s in entries]
        outside = [s for s in entries if not 0 <= s < length]
        if outside:  # refused before a tensor could overflow
            raise ValueError(
                f"slots must be increasing ints in [0, {length}) (the cached tokens), got "
                f"{reprlib.repr(entries)} (out of range: {reprlib.repr(outside)})"
            )
        index = torch.tensor(entries, dtype=torch.int64)
    inside = bool((index >= 0).all() and (index < length).all())
    if not inside or not bool((index[1:] > index[:-1]).all()):
        raise ValueError(
            f"slots must be increasing ints in [0, {length}) (the cached tokens), "
            f"got {reprlib.repr(index.tolist())}"
        )
    return index


def _check_contents(cache: KVCache) -> tuple[int, int]:
    """``(rows, cached)`` of a cache whose ``keys`` and ``values`` are lists of as many 4-d
    tensors of one shape, on one device (``(0, 0)`` when empty)."""
    for name, tensors in (("cache.keys", cache.keys), ("cache.values", cache.values)):
        if not isinstance(tensors, list) or not all(isinstance(t, torch.Tensor) for t in tensors):
            raise TypeError(
                f"{name} must be a list of torch.Tensor, one per layer, got {reprlib.repr(tensors)}"
            )
    if len(cache.keys) != len(cache.values):
        raise ValueError(
            f"cache.keys and cache.values must hold one tensor per layer each, got "
            f"{len(cache.keys)} and {len(cache.values)}"
        )
    if not cache.keys:
        return 0, 0
    first = cache.keys[0]
    shape = tuple(first.shape)
    if len(shape) != 4 or not first.is_floating_point():
        raise ValueError(
            f"cache.keys[0] must be a floating tensor of shape (rows, kv_heads, cached, "
            f"head_dim), got {first.dtype} {shape}"
        )
    for name, tensors in (("cache.keys", cache.keys), ("cache.values", cache.values)):
        for i, t in enumerate(tensors):
            if tuple(t.shape) != shape or t.device != first.device or t.is_meta:
                raise ValueError(
                    f"{name}[{i}] must have the shape and device of cache.keys[0] ({shape} on "
                    f"{first.device}, with values), got {tuple(t.shape)} on {t.device}"
                )
    return shape[0], shape[2]


def _check_written_by(cache: KVCache, model: RotaryLlama, *, shape: bool = True) -> None:
    """A non-empty cache has the layers, key-value heads and head size ``model`` writes (only
    the head size with ``shape=False``: what an eviction's rotation reads)."""
    if not cache.keys:
        return
    spec = model.spec
    _, heads, _, head_dim = cache.keys[0].shape
    mine = (len(cache.keys), heads, head_dim) if shape else (head_dim,)
    theirs = (spec.num_layers, spec.num_kv_heads, spec.head_dim) if shape else (spec.head_dim,)
    if mine != theirs:
        raise ValueError(
            f"cache must hold what model writes, {spec.num_layers} layers of "
            f"{spec.num_kv_heads} key-value heads of {spec.head_dim} channels, got "
            f"{len(cache.keys)} layers of {heads} heads of {head_dim} channels: a cache is read "
            f"by the model that wrote it"
        )


def _device_of(model: RotaryLlama) -> torch.device:
    return model.weights["model.embed_tokens.weight"].device


def _check_on(name: str, tensor: torch.Tensor, device: torch.device, expected: str) -> None:
    """``tensor`` has values and lies on the model's ``device``."""
    check_has_values(name, tensor, expected)
    if tensor.device != device:
        raise ValueError(
            f"{name} must be on the model's device ({device}), got a tensor on {tensor.device}"
        )


def _check_positions(
    name: str, positions: object, batch: int, length: int, device: torch.device
) -> torch.Tensor:
    positions = check_instance(name, positions, torch.Tensor)
    shapes = ((length,), (batch, length), (1, length))
    if positions.dtype != torch.int64 or tuple(positions.shape) not in shapes:
        raise ValueError(
            f"{name} must be int64 of shape ({length},) or ({batch}, {length}), got "
            f"{positions.dtype} {tuple(positions.shape)}"
        )
    _check_on(name, positions, device, f"int64 positions of shape ({length},)")
    # read wherever they are: one copy of a few ints beside a forward pass of the whole model
    check_position_entries(name, positions.cpu())
    return positions if positions.dim() == 1 else positions[:, None, :]  # broadcast over heads


def _check_mask(
    mask: object, batch: int, new: int, total: int, device: torch.device
) -> torch.Tensor:
    mask = check_instance("mask", mask, torch.Tensor)
    if mask.dtype != torch.bool or tuple(mask.shape) not in (
        (new, total),
        (batch, new, total),
        (1, new, total),
    ):
        raise ValueError(
            f"mask must be bool of shape ({new}, {total}) or ({batch}, {new}, {total}) "
            f"(queries, cached + new keys), got {mask.dtype} {tuple(mask.shape)}"
        )
    _check_on("mask", mask, device, f"a bool mask of shape ({new}, {total})")
    if not bool(mask.any(-1).all()):
        raise ValueError(
            "mask lets a query attend to no key (its softmax would be NaN): let a padding "
            "query attend to itself, as causal_mask() does"
        )
    return mask if mask.dim() == 2 else mask[:, None]  # broadcast over heads


def run_cached(
    model: RotaryLlama,
    ids: torch.Tensor,
    cache: KVCache,
    positions: torch.Tensor | None = None,
    *,
    mask: torch.Tensor | None = None,
    key_positions: torch.Tensor | None = None,
) -> torch.Tensor:
    """Feed ``ids`` to ``model`` after what ``cache`` holds; append their keys and values.

    Every argument is checked before the first layer runs, and the cache is updated only once
    every layer has run: a call either completes or leaves ``cache`` as it was (an error or an
    interrupt, ``KeyboardInterrupt`` included, leaves nothing half-appended).

    Args:
        model: a :class:`~pe_lib.models.llama.RotaryLlama`.
        ids: int64 ``(batch, new)``, the new tokens, ``batch`` and ``new`` at least 1, on the
            model's device.
        cache: what the earlier calls left (an empty :class:`KVCache` for the first), written
            by this ``model`` (its layers, key-value heads and head size); grown by ``new``
            tokens in every layer. A cache of 1 row is shared by the ``batch`` rows of ``ids``
            (a common prompt) and holds ``batch`` rows afterwards.
        positions: int64 ``(new,)`` or ``(batch, new)``, where the new tokens' queries (and,
            in a rotated cache, their keys) are rotated. Default: ``cache.length + 0 ..
            new - 1``, the offset being the number of cached tokens.
        mask: bool ``(new, total)`` or ``(batch, new, total)``, ``True`` where a query may
            attend to a key (the cached ones first). Default: causal, query ``i`` seeing keys
            up to ``cache.length + i``.
        key_positions: only for an unrotated cache: int64 ``(total,)`` or ``(batch, total)``,
            the positions every key is rotated at for this call. Default: ``0 .. total - 1``,
            the keys' slots in the cache.

    Returns:
        the new tokens' logits, ``(batch, new, vocab_size)``.

    Raises:
        TypeError: an argument of the wrong kind (``ids`` not int64 ``(batch, new)``, ``cache``
            not a KVCache).
        ValueError: empty ``ids``; ids outside the vocabulary; a cache written by a model of
            another shape or with another number of rows; positions outside ``[0, 2**53 - 1]``
            or of the wrong shape; a mask of the wrong shape or that lets a query see no key;
            ``key_positions`` for a rotated cache; a tensor on another device than the model's
            (meta tensors, which hold no values, included).
    """
    model = check_instance("model", model, RotaryLlama)
    ids = check_int64_tensor("ids", ids, 2, "an int64 tensor of shape (batch, new)")
    cache = check_instance("cache", cache, KVCache)
    spec = model.spec
    device = _device_of(model)
    batch, new = ids.shape
    if not batch or not new:
        raise ValueError(
            f"ids must hold at least one token in at least one row, shape (batch, new) with "
            f"batch >= 1 and new >= 1, got shape {tuple(ids.shape)}"
        )
    _check_on("ids", ids, device, "an int64 tensor of shape (batch, new)")
    check_ids_below("ids", ids, spec.vocab_size)
    rows, cached = _check_contents(cache)
    _check_written_by(cache, model)
    if cache.keys and cache.keys[0].device != device:
        raise ValueError(
            f"cache must be on the model's device ({device}), got keys on {cache.keys[0].device}"
        )
    if cache.keys and rows not in (1, batch):
        raise ValueError(f"ids must have the cache's batch of {rows} rows, got {batch}")
    total = cached + new
    if positions is None:
        positions = torch.arange(cached, total, device=device)
    query_at = _check_positions("positions", positions, batch, new, device)
    if cache.rotated and key_positions is not None:
        raise ValueError(
            "key_positions is for a cache of unrotated keys (KVCache(rotated=False)); a rotated "
            "cache keeps each key at the position it was written at"
        )
    key_at = None
    if not cache.rotated:
        key_at = _check_positions(
            "key_positions",
            torch.arange(total, device=device) if key_positions is None else key_positions,
            batch,
            total,
            device,
        )
    if mask is None:
        columns = torch.arange(total, device=device)
        mask = columns[None, :] <= columns[cached:, None]  # (new, total)
    attend = _check_mask(mask, batch, new, total, device)

    w, eps = model.weights, spec.rms_norm_eps

    def rotate(x: torch.Tensor, at: torch.Tensor) -> torch.Tensor:
        return apply_rope(x, at, base=spec.rope_theta, layout=model.layout, scaling=model.scaling)

    # every layer's keys and values go to new lists, stored in the cache after the last layer
    keys: list[torch.Tensor] = []
    values: list[torch.Tensor] = []
    h = F.embedding(ids, w["model.embed_tokens.weight"])
    for layer in range(spec.num_layers):
        p = f"model.layers.{layer}."
        q, k, v = block_qkv(w, p, h, spec)  # (batch, heads, new, head_dim)
        q = rotate(q, query_at)
        if cache.rotated:
            k = rotate(k, query_at)  # rotated once, at its own position
        if cache.keys:  # (batch, kv_heads, total, head_dim); a 1-row cache serves every row
            shape = (batch, -1, -1, -1)
            k = torch.cat((cache.keys[layer].expand(shape), k), dim=-2)
            v = torch.cat((cache.values[layer].expand(shape), v), dim=-2)
        keys.append(k)
        values.append(v)
        if key_at is not None:
            k = rotate(k, key_at)  # unrotated cache: rotated at every read
        a = F.scaled_dot_product_attention(
            q, k, v, attn_mask=attend, enable_gqa=spec.num_heads != spec.num_kv_heads
        )
        h = block_rest(w, p, h, a, spec)
    logits = F.linear(rms_norm(h, w["model.norm.weight"], eps), model.head)
    cache._store(keys, values)
    return logits
