r"""Does a language model use what lies far back in its window? Measures that fail if it does not.

A flat perplexity as the input grows shows that a model is not *hurt* by a longer window; it
does not show that the model *uses* it (Chi et al., 2023, arXiv:2212.10356; Fang et al., 2024,
"What is wrong with perplexity for long-context language modeling?", arXiv:2410.23771). The
measures here score the same characters with more and with less of the text before them, and
look at where attention goes:

* :func:`window_losses`: each character's loss in non-overlapping windows of ``seq_len``, the
  losses whose mean :func:`pe_lib.experiments.lm.perplexity` reports. Cut the text into windows of ``n`` and
  of ``8 n``: the last ``n`` characters of each long window are also one whole short window,
  scored once after ``7 n`` to ``8 n - 1`` characters of context and once after ``0`` to
  ``n - 1``. The ratio of their perplexities is the *far-context gain* (above 1: the far text
  helps).
* :func:`cache_ngram_losses`: a baseline that needs no learning and does use far context, a count
  n-gram whose estimate is mixed with the counts of the same context earlier in the window (a
  cache model, after Kuhn and De Mori, 1990): text repeats itself (names, keywords), and a window
  that holds an earlier occurrence predicts what followed it.
* :func:`attention_beyond`: the share of each query's attention on keys at least ``distance``
  positions back, per layer, head and query position: with ``distance`` the training length, the
  mass a model puts on distances it never saw in training.
* :func:`rotary_kv_passes`: :class:`pe_lib.models.llama.RotaryLlama` run over a prefix once and then
  over several continuations that each read the prefix's cached keys and values up to a chosen
  length: a needle placed at the start of a long text, asked for at several distances, costs one
  pass over the text and a short pass per question.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import torch
from torch.nn import functional as F

from .._validation import check_instance, check_positive_int
from ..models.llama import RotaryLlama, block_qkv, block_rest, rms_norm
from ..rope import apply_rope
from .lm import CharTransformer, _Block, _check_ids, _check_length
from .toy import _causal_attention

__all__ = [
    "attention_beyond",
    "cache_ngram_losses",
    "retrieved",
    "rotary_kv_passes",
    "window_losses",
]

#: Attention-score elements per evaluation batch (batch * heads * seq_len**2), to bound memory.
_SCORES = 1 << 23


@torch.no_grad()
def window_losses(model: CharTransformer, ids: torch.Tensor, seq_len: int) -> torch.Tensor:
    """``-ln p(c_t | c_<t)`` of each prediction of :func:`pe_lib.experiments.lm.perplexity`: float64
    ``(windows, seq_len)``.

    The text is cut into ``(len(ids) - 1) // seq_len`` non-overlapping windows; entry ``[w, t]``
    is the loss of ``ids[w * seq_len + t + 1]`` predicted from the ``t + 1`` characters of its
    window up to ``ids[w * seq_len + t]``. ``exp`` of the mean is ``perplexity(model, ids,
    seq_len)`` (up to the order of the sums).

    Raises:
        ValueError: ``seq_len`` exceeds the model's ``max_seq_len``, or ``ids`` is shorter than
            one window (as :func:`pe_lib.experiments.lm.perplexity`).
    """
    check_instance("model", model, CharTransformer)
    seq_len = check_positive_int("seq_len", seq_len)
    _check_length("seq_len", seq_len, model)
    ids = _check_ids("ids", ids, model.vocab_size, seq_len + 1)
    windows = (ids.numel() - 1) // seq_len
    inputs = ids[: windows * seq_len].view(windows, seq_len)
    targets = ids[1 : windows * seq_len + 1].view(windows, seq_len)
    per_batch = max(1, (1 << 21) // (seq_len * seq_len))
    was_training = model.training
    model.eval()
    parts = []
    for start in range(0, windows, per_batch):
        logits = model(inputs[start : start + per_batch])  # (batch, seq_len, vocab)
        parts.append(
            F.cross_entropy(
                logits.transpose(1, 2), targets[start : start + per_batch], reduction="none"
            ).double()
        )
    model.train(was_training)
    return torch.cat(parts)


def cache_ngram_losses(
    probabilities: torch.Tensor, ids: torch.Tensor, seq_len: int, *, order: int
) -> torch.Tensor:
    r"""Losses of a cache n-gram in windows of ``seq_len``: float64 ``(windows, seq_len)``, laid
    out as :func:`window_losses`.

    ``probabilities[i]`` is a base model's probability of ``ids[i + 1]`` (e.g.
    :func:`pe_lib.experiments.lm.ngram_probabilities`, which reads at most ``order - 1`` characters back). The
    cache counts, in the window before the prediction, how often the same ``order - 1``
    characters :math:`h` were followed by each character :math:`c` (:math:`m_{hc}`, :math:`m_h` in
    all, by :math:`u_h` different characters), and mixes them with the base estimate as the n-gram
    mixes its orders:

    .. math::

        p(c \mid \text{window}) = \frac{m_{hc} + u_h\, p_{\text{base}}(c)}{m_h + u_h},

    which is the base estimate where :math:`h` has not occurred before in the window. Only the
    window is read, so the longer the window, the more the cache holds.

    Args:
        probabilities: float ``(len(ids) - 1,)``, each in ``(0, 1]``.
        ids: the text as ids, int64 ``(n,)`` with ``n > seq_len``.
        seq_len: the window, >= 1.
        order: the n-gram's n: the cache matches the ``order - 1`` characters before each
            prediction, ``order >= 2``.
    """
    seq_len = check_positive_int("seq_len", seq_len)
    order = check_positive_int("order", order)
    if order < 2:
        raise ValueError(f"order must be at least 2 (the cache matches order - 1 characters), "
                         f"got {order}")  # fmt: skip
    ids = _check_tokens_1d("ids", ids, 2**62)
    if ids.numel() <= seq_len:
        raise ValueError(f"ids must hold more than seq_len={seq_len} ids (one window and its "
                         f"next character), got {ids.numel()}")  # fmt: skip
    probabilities = check_instance("probabilities", probabilities, torch.Tensor)
    if probabilities.shape != (ids.numel() - 1,) or not probabilities.is_floating_point():
        raise ValueError(
            f"probabilities must be a float tensor of shape ({ids.numel() - 1},), one per "
            f"character of ids after the first, got {probabilities.dtype} "
            f"{tuple(probabilities.shape)}"
        )
    if not ((probabilities > 0) & (probabilities <= 1)).all():
        raise ValueError("probabilities must lie in (0, 1]")
    windows = (ids.numel() - 1) // seq_len
    base = probabilities[: windows * seq_len].double().view(windows, seq_len)
    text = ids[: windows * seq_len + 1]
    # x[w, t] = the window's characters and the next one: (windows, seq_len + 1)
    x = torch.stack([text[w * seq_len : (w + 1) * seq_len + 1] for w in range(windows)])
    k = order - 1
    if seq_len < k:
        return -base.log()
    # contexts[w, e] = x[w, e - k + 1 .. e], the k characters ending at e (e = k - 1 .. seq_len - 1)
    contexts = x[:, :seq_len].unfold(1, k, 1)  # (windows, seq_len - k + 1, k)
    ends = torch.arange(k - 1, seq_len)
    same = (contexts[:, :, None, :] == contexts[:, None, :, :]).all(-1)  # [w, now, earlier]
    earlier = ends[None, :] < ends[:, None]  # an earlier end, whose follower e + 1 <= now is read
    same &= earlier
    followers = x[:, ends + 1]  # (windows, ends): the character after each context
    target = followers  # the character predicted after the context ending at `now`
    hits = same & (followers[:, None, :] == target[:, :, None])  # earlier follower == target
    m_h = same.sum(-1).double()
    m_hc = hits.sum(-1).double()
    # distinct followers among the matches: a follower counts once, at its first match
    one_hot = F.one_hot(followers, int(x.max()) + 1).bool()  # (windows, ends, vocab)
    seen = (same[..., None] & one_hot[:, None, :, :]).any(2)  # (windows, now, vocab)
    u_h = seen.sum(-1).double()
    p_base = base[:, k - 1 :]
    mixed = torch.where(m_h > 0, (m_hc + u_h * p_base) / (m_h + u_h).clamp(min=1), p_base)
    losses = -base.log()
    losses[:, k - 1 :] = -mixed.log()
    return losses


@torch.no_grad()
def attention_beyond(
    model: CharTransformer, ids: torch.Tensor, seq_len: int, distance: int
) -> torch.Tensor:
    """The share of attention on keys at least ``distance`` positions back: float64
    ``(num_layers, num_heads, seq_len)``, the mean over windows of ``seq_len`` (as
    :func:`window_losses` cuts ``ids``) for each layer, head and query position.

    A query at position ``t`` of its window puts weight ``a[t, j]`` on key ``j <= t``; its share
    beyond ``distance`` is the sum over ``t - j >= distance`` (0 where ``t < distance``). A model
    trained on windows of ``L`` saw distances ``0 .. L - 1`` only: with ``distance = L``, the
    share is the attention a query gives to distances it never saw in training.

    Raises:
        ValueError: ``distance`` is not in ``[1, seq_len)``, or as :func:`window_losses`.
    """
    check_instance("model", model, CharTransformer)
    seq_len = check_positive_int("seq_len", seq_len)
    distance = check_positive_int("distance", distance)
    if distance >= seq_len:
        raise ValueError(
            f"distance must be below seq_len={seq_len} (some key must lie that far back), "
            f"got distance={distance}"
        )
    _check_length("seq_len", seq_len, model)
    ids = _check_ids("ids", ids, model.vocab_size, seq_len + 1)
    windows = (ids.numel() - 1) // seq_len
    inputs = ids[: windows * seq_len].view(windows, seq_len)
    positions = torch.arange(seq_len)
    far = (positions[:, None] - positions[None, :]) >= distance  # (query, key)
    per_batch = max(1, _SCORES // (model.num_heads * seq_len * seq_len))
    total = torch.zeros(model.num_layers, model.num_heads, seq_len, dtype=torch.float64)
    was_training = model.training
    model.eval()
    for start in range(0, windows, per_batch):
        x = model.encoding(model.embedding(inputs[start : start + per_batch]))
        for layer, block in enumerate(cast(Sequence[_Block], model.blocks)):
            mixed, weights = _causal_attention(
                block.norm_attention(x),
                block.qkv,
                block.attention_out,
                model.num_heads,
                model.rotation,
                model.score_bias,
            )  # weights: (batch, heads, query, key)
            total[layer] += (cast(torch.Tensor, weights) * far).sum(-1).double().sum(0)
            x = x + mixed
            x = x + block.mlp(block.norm_mlp(x))
    model.train(was_training)
    return total / windows


def retrieved(logits: torch.Tensor, answer: Sequence[int]) -> bool:
    """Whether greedy decoding gives ``answer``: the argmax of ``logits[i]`` is ``answer[i]`` for
    every ``i`` (``logits``: the ``(len(answer), vocab)`` logits that predict the answer's
    tokens, each read with the answer's earlier tokens in place, as a model scores it)."""
    if logits.dim() != 2 or logits.shape[0] != len(answer):
        raise ValueError(
            f"logits must have shape (len(answer), vocab) = ({len(answer)}, vocab), "
            f"got {tuple(logits.shape)}"
        )
    return bool((logits.argmax(-1) == torch.tensor(list(answer))).all())


@torch.no_grad()
def rotary_kv_passes(
    model: RotaryLlama,
    prefix: torch.Tensor,
    continuations: Sequence[tuple[int, torch.Tensor]],
    *,
    scaling: Mapping[str, Any] | None = None,
) -> list[torch.Tensor]:
    """Logits of each continuation read after the first ``n`` tokens of ``prefix``.

    ``prefix``: int64 ``(prefix_len,)``; ``continuations``: ``(n, ids)`` pairs, ``ids`` int64
    ``(m,)`` and ``1 <= n <= prefix_len``. One pass over ``prefix`` stores every layer's rotated
    keys and values; each continuation then runs at positions ``n .. n + m - 1`` and attends
    to the first ``n`` cached entries and causally to itself. Each result, logits ``(m,
    vocab)``, in the order given, is what a pass over ``prefix[:n]`` followed by the
    continuation gives (a causal model's first ``n`` states do not depend on what follows),
    for the cost of one pass over the prefix and one short pass per continuation. ``scaling``: a ``rope_scaling`` entry
    to rotate with (default: the model's own, ``model.scaling``).

    Raises:
        ValueError: a length ``n`` is not in ``[1, prefix_len]``, or a tensor is not a 1-d int64
            tensor of token ids.
    """
    check_instance("model", model, RotaryLlama)
    spec = model.spec
    rotation = model.scaling if scaling is None else dict(scaling)
    prefix = _check_tokens_1d("prefix", prefix, spec.vocab_size)
    if not isinstance(continuations, Sequence) or not continuations:
        raise TypeError(f"continuations must be a non-empty sequence of (n, ids) pairs, got "
                        f"{continuations!r:.80}")  # fmt: skip
    for i, pair in enumerate(continuations):
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"continuations[{i}] must be an (n, ids) pair, got {pair!r:.80}")
        n, ids = pair
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= prefix.numel():
            raise ValueError(
                f"continuations[{i}]'s n must be an int in [1, {prefix.numel()}] (how much of "
                f"prefix it reads), got {n!r}"
            )
        _check_tokens_1d(f"continuations[{i}]'s ids", ids, spec.vocab_size)
    w = model.weights
    gqa = spec.num_heads != spec.num_kv_heads

    def rotate(t: torch.Tensor, positions: torch.Tensor, length: int) -> torch.Tensor:
        return apply_rope(
            t,
            positions,
            base=spec.rope_theta,
            layout=model.layout,
            scaling=rotation,
            seq_len=length,
        )

    longest = prefix.numel() + max(ids.numel() for _, ids in continuations)
    # the prefix, once: each layer's rotated keys and values
    cache: list[tuple[torch.Tensor, torch.Tensor]] = []
    h = F.embedding(prefix[None], w["model.embed_tokens.weight"])
    positions = torch.arange(prefix.numel())
    for layer in range(spec.num_layers):
        p = f"model.layers.{layer}."
        q, k, v = block_qkv(w, p, h, spec)
        q, k = rotate(q, positions, longest), rotate(k, positions, longest)
        cache.append((k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
        h = block_rest(w, p, h, a, spec)
    out: list[torch.Tensor] = []
    for n, ids in continuations:
        m = ids.numel()
        h = F.embedding(ids[None], w["model.embed_tokens.weight"])
        positions = torch.arange(n, n + m)
        # query i (position n + i) sees the n cached keys and continuation keys 0 .. i
        allowed = torch.ones(m, n + m, dtype=torch.bool)
        allowed[:, n:] = torch.ones(m, m, dtype=torch.bool).tril()
        for layer in range(spec.num_layers):
            p = f"model.layers.{layer}."
            q, k, v = block_qkv(w, p, h, spec)
            q, k = rotate(q, positions, longest), rotate(k, positions, longest)
            past_k, past_v = cache[layer]
            keys = torch.cat([past_k[:, :, :n], k], dim=2)
            values = torch.cat([past_v[:, :, :n], v], dim=2)
            a = F.scaled_dot_product_attention(q, keys, values, attn_mask=allowed, enable_gqa=gqa)
            h = block_rest(w, p, h, a, spec)
        hidden = rms_norm(h, w["model.norm.weight"], spec.rms_norm_eps)
        out.append(F.linear(hidden[0], model.head))
    return out


def _check_tokens_1d(name: str, ids: object, vocab_size: int) -> torch.Tensor:
    if not isinstance(ids, torch.Tensor) or ids.dtype != torch.int64 or ids.dim() != 1:
        raise ValueError(f"{name} must be a 1-d int64 tensor of token ids, got {ids!r:.80}")
    if ids.numel() == 0 or int(ids.min()) < 0 or int(ids.max()) >= vocab_size:
        raise ValueError(f"{name} must hold at least one id, each in [0, {vocab_size})")
    return ids
