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
* :class:`KVCache` and :func:`run_cached`: :class:`pe_lib.pretrained.RotaryLlama` fed a few
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
(:meth:`RotaryLlama.forward <pe_lib.pretrained.RotaryLlama.forward>` with a causal mask is the
special case it is tested against).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch.nn import functional as F

from ._validation import (
    check_bool,
    check_ids_below,
    check_instance,
    check_int64_tensor,
    check_nonnegative_int,
    check_positive_int,
)
from .pretrained import RotaryLlama, _block_qkv, _block_rest, _rms_norm
from .rope import apply_rope, rope_angles, rotate
from .rope_scaling import resolve_scaling

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
        values = sorted(set(mask.flatten().tolist()) - {0, 1})
        if values:
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


def _check_lengths(lengths: object) -> list[int]:
    if isinstance(lengths, (str, bytes)) or not isinstance(lengths, Sequence) or not lengths:
        raise TypeError(
            f"lengths must be a non-empty sequence of positive ints (one per document), "
            f"got {lengths!r}"
        )
    return [check_positive_int(f"lengths[{i}]", n) for i, n in enumerate(lengths)]


def packed_positions(lengths: Sequence[int]) -> torch.Tensor:
    """Positions of documents packed in one row, restarting at 0 for each: int64 ``(total,)``.

    ``lengths`` ``[3, 2]`` gives ``[0, 1, 2, 0, 1]`` (transformers' ``DataCollatorWithFlattening``
    returns these as ``position_ids``).
    """
    sizes = _check_lengths(lengths)
    return torch.cat([torch.arange(n) for n in sizes])


def packed_causal_mask(lengths: Sequence[int]) -> torch.Tensor:
    """Block-diagonal causal mask of documents packed in one row: bool ``(total, total)``.

    Entry ``(i, j)`` is ``True`` when tokens ``i`` and ``j`` are in the same document and ``j``
    is not after ``i``: each document sees only itself, as if it were alone.
    """
    sizes = _check_lengths(lengths)
    document = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    order = torch.arange(len(document))
    return (document[:, None] == document[None, :]) & (order[None, :] <= order[:, None])


@dataclass
class KVCache:
    """Each layer's keys and values, ``(batch, kv_heads, cached, head_dim)``, grown by
    :func:`run_cached`.

    Attributes:
        rotated: ``True`` (the usual cache) keeps keys rotated at the positions they were
            written at, rotated again only by an eviction (:meth:`keep`); ``False`` keeps them
            unrotated, to be rotated at each read.
        keys, values: one tensor per layer once something is cached.
    """

    rotated: bool = True
    keys: list[torch.Tensor] = field(default_factory=list)
    values: list[torch.Tensor] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_bool("rotated", self.rotated)

    @property
    def length(self) -> int:
        """How many tokens are cached (per row, padding included)."""
        return 0 if not self.keys else int(self.keys[0].shape[-2])

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
            slots: int ``(kept,)``, increasing, each in ``[0, length)``.
            model: ``None`` for an unrotated cache; for a rotated one, the
                :class:`~pe_lib.pretrained.RotaryLlama` whose base, layout and scaling rotated
                the keys (a scaling whose frequencies depend on the sequence length,
                ``"dynamic"`` or ``"longrope"``, is refused: a key rotated at one length's
                frequencies cannot be moved with another's).

        Raises:
            TypeError: ``slots`` is not a 1-d sequence of ints, or ``model`` not a RotaryLlama.
            ValueError: ``slots`` out of range or not increasing; ``model`` missing for a
                rotated cache or given for an unrotated one; a length-dependent scaling. On
                either error the cache is left as it was.
        """
        index = torch.as_tensor(slots)
        if index.dtype != torch.int64 or index.dim() != 1:
            raise TypeError(f"slots must be a 1-d sequence of ints, got {slots!r}")
        ok = bool((index >= 0).all() and (index < self.length).all())
        if not ok or not bool((index[1:] > index[:-1]).all()):
            raise ValueError(
                f"slots must be increasing ints in [0, {self.length}) (the cached tokens), "
                f"got {index.tolist()}"
            )
        keys = [k[..., index, :] for k in self.keys]
        if not self.rotated:
            if model is not None:
                raise ValueError(
                    "model is for a cache of rotated keys, which an eviction rotates again; "
                    "an unrotated cache (KVCache(rotated=False)) only drops keys: omit model"
                )
        else:
            if model is None:
                raise ValueError(
                    "keep() on a cache of rotated keys needs model=, the RotaryLlama that wrote "
                    "them: each kept key is rotated again by minus the slots it moves"
                )
            model = check_instance("model", model, RotaryLlama)
            spec = model.spec
            config = resolve_scaling(model.scaling, spec.rope_theta)
            if config.entry.needs_seq_len:
                raise ValueError(
                    f"model's {config.rope_type!r} scaling chooses its frequencies from the "
                    f"sequence length, so a key rotated at one length cannot be moved with "
                    f"another's: use KVCache(rotated=False) to evict"
                )
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
        self.keys = keys
        self.values = [v[..., index, :] for v in self.values]


def _check_positions(name: str, positions: object, batch: int, length: int) -> torch.Tensor:
    positions = check_instance(name, positions, torch.Tensor)
    shapes = ((length,), (batch, length), (1, length))
    if positions.dtype != torch.int64 or tuple(positions.shape) not in shapes:
        raise ValueError(
            f"{name} must be int64 of shape ({length},) or ({batch}, {length}), got "
            f"{positions.dtype} {tuple(positions.shape)}"
        )
    if positions.numel() and int(positions.min()) < 0:
        raise ValueError(f"{name} must be non-negative, got a minimum of {int(positions.min())}")
    return positions if positions.dim() == 1 else positions[:, None, :]  # broadcast over heads


def _check_mask(mask: object, batch: int, new: int, total: int) -> torch.Tensor:
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

    Args:
        model: a :class:`~pe_lib.pretrained.RotaryLlama`.
        ids: int64 ``(batch, new)``, the new tokens.
        cache: what the earlier calls left (an empty :class:`KVCache` for the first); grown
            in place by ``new`` tokens in every layer.
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
    """
    model = check_instance("model", model, RotaryLlama)
    ids = check_int64_tensor("ids", ids, 2, "an int64 tensor of shape (batch, new)")
    cache = check_instance("cache", cache, KVCache)
    spec = model.spec
    check_ids_below("ids", ids, spec.vocab_size)
    batch, new = ids.shape
    cached = check_nonnegative_int("cache.length", cache.length)
    if cache.keys and cache.keys[0].shape[0] not in (1, batch):
        raise ValueError(
            f"ids must have the cache's batch of {cache.keys[0].shape[0]} rows, got {batch}"
        )
    total = cached + new
    if positions is None:
        positions = torch.arange(cached, total)
    query_at = _check_positions("positions", positions, batch, new)
    if cache.rotated and key_positions is not None:
        raise ValueError(
            "key_positions is for a cache of unrotated keys (KVCache(rotated=False)); a rotated "
            "cache keeps each key at the position it was written at"
        )
    key_at = None
    if not cache.rotated:
        key_at = _check_positions(
            "key_positions",
            torch.arange(total) if key_positions is None else key_positions,
            batch,
            total,
        )
    if mask is None:
        columns = torch.arange(total)
        mask = columns[None, :] <= columns[cached:, None]  # (new, total)
    attend = _check_mask(mask, batch, new, total)

    w, eps = model.weights, spec.rms_norm_eps

    def rotate(x: torch.Tensor, at: torch.Tensor) -> torch.Tensor:
        return apply_rope(x, at, base=spec.rope_theta, layout=model.layout, scaling=model.scaling)

    h = F.embedding(ids, w["model.embed_tokens.weight"])
    for layer in range(spec.num_layers):
        p = f"model.layers.{layer}."
        q, k, v = _block_qkv(w, p, h, spec)  # (batch, heads, new, head_dim)
        q = rotate(q, query_at)
        if cache.rotated:
            k = rotate(k, query_at)  # rotated once, at its own position
        if len(cache.keys) > layer:
            k = torch.cat((cache.keys[layer], k), dim=-2)  # (batch, kv_heads, total, head_dim)
            v = torch.cat((cache.values[layer], v), dim=-2)
            cache.keys[layer], cache.values[layer] = k, v
        else:
            cache.keys.append(k)
            cache.values.append(v)
        if key_at is not None:
            k = rotate(k, key_at)  # unrotated cache: rotated at every read
        a = F.scaled_dot_product_attention(
            q, k, v, attn_mask=attend, enable_gqa=spec.num_heads != spec.num_kv_heads
        )
        h = _block_rest(w, p, h, a, spec)
    return F.linear(_rms_norm(h, w["model.norm.weight"], eps), model.head)
