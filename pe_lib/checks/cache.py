r"""``check_kv_cache``: attention with a key-value cache and RoPE, checked against the full pass.

The student writes one decoding step of a rotary attention layer,
``step(q, k, v, cache) -> (out, cache)``: ``q``, ``k``, ``v`` are the new tokens' queries,
keys and values, *not yet rotated*, shape ``(batch, heads, new, head_dim)``; ``cache`` is
``None`` at the first call and otherwise what the previous call returned (anything the student
likes); ``out`` is the attention output of the new tokens over every token so far, shape
``(batch, heads, new, head_dim)``, in the inputs' dtype.

**Cases.** First the readable one: head size 16, a prefill of 5 tokens, then 7 single-token
steps. It is run twice from ``cache=None``: a step that keeps state outside the cache it returns
(a global, an attribute never reset) gives different results the second time. Then 6 cases drawn
from what the exercise allows (:func:`pe_lib.checks._core.draw_cases`): head sizes 8 to 128
(64 among them), batch and heads 1 to 3, prefills of 1 to 8 tokens, and steps of 1 to 4 new
tokens at once, where a step written for one token only goes wrong.

**Reference.** Every output is compared with the full forward pass of the same layer: causal
attention over the whole sequence, each query and key rotated at its absolute position
(:func:`pe_lib.rope.apply_rope`), scores scaled by :math:`1/\sqrt{d}`, computed in float64 from the
same inputs, within ``1e-4`` (float32 outputs of size about 1). That layer is the smallest rotary
model there is; its random inputs make every position mistake visible.

**Diagnosis.** A wrong output is compared with what each mistake would give, rebuilt the same
way (the table ``_DIAGNOSES``, in the order of ``check_kv_cache.mistakes``).
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from .._validation import check_base, check_callable, check_layout
from ..rope import apply_rope
from ._core import (
    DTYPE,
    EXCEPTION,
    HIDDEN_STATE,
    SHAPE,
    WRONG_TYPE,
    Case,
    Catalogue,
    Diagnosis,
    call_student,
    check_seed,
    diagnose,
    draw_cases,
    kind_of,
    text,
)

__all__ = ["check_kv_cache"]

#: The mistakes :func:`check_kv_cache` recognises, in the order it looks for them.
MISTAKES = Catalogue("check_kv_cache")
MISTAKES.uses(EXCEPTION, WRONG_TYPE, SHAPE, DTYPE, HIDDEN_STATE)

_FIX_OFFSET = (
    "rotate the new tokens' queries and keys at offset + 0 .. offset + new - 1, offset = the "
    "number of tokens already cached (0 for the prefill), e.g. positions = torch.arange(offset, "
    "offset + q.shape[-2])."
)
_FIX_CACHE = (
    "rotate each key once, at its own position, when it enters the cache, and never rotate the "
    "cache again: cache['k'] = torch.cat((cache['k'], rotate(k, positions)), dim=-2)."
)
_FIX_MASK = (
    "mask the scores of keys after the query at every call: query i of the new block (position "
    "offset + i) may attend to keys 0 .. offset + i, e.g. allowed = torch.arange(offset + new) "
    "<= positions[:, None]."
)

_CONTRACT = text(
    "The checker calls step(q, k, v, cache) with float32 tensors of shape (batch, heads, new, "
    "head_dim), head_dim from 8 to 128, cache None at the first call (a prefill of several "
    "tokens), then with the cache the step returned, one or several new tokens at a time."
)
_PAIR = text("the pair (out, cache) with out a torch tensor")
_PAIR_OF = text("a pair whose out is {kind}")
_FIX_TYPE = text(
    "return out, cache: the new tokens' attention output and whatever the next call needs."
)
_LIKE_Q = text("the shape of the new tokens' queries, {q_shape}")
_FIX_SHAPE = text(
    "return one output per new query: shape (batch, heads, new, head_dim), like q (attend "
    "with the new queries only, over the cached and new keys)."
)
_FIX_DTYPE = text(
    "compute in float64 if you like, then return the output in the inputs' dtype: out.to(q.dtype)."
)
_FIX_STATE = text("a new sequence starts from cache=None, and the cache holds every key and value")

_OFFSET_FORGOTTEN = MISTAKES.declare(
    "offset",
    "the outputs are those of new tokens rotated at positions 0 .. new - 1 at every call: the "
    "offset is forgotten, so each decoded token's query and key sit at position 0.",
    _FIX_OFFSET,
)
_QUERY_AT_ZERO = MISTAKES.declare(
    "offset",
    "the keys are at their positions, but each new query is rotated at position 0 .. new - 1: "
    "the query's offset is forgotten.",
    _FIX_OFFSET,
)
_RE_ROTATED = MISTAKES.declare(
    "cache_positions",
    "the outputs are those of a cache kept unrotated and rotated at every step with the new "
    "token's position: every cached key sits where the query does, so attention no longer "
    "sees how far back a token is.",
    _FIX_CACHE,
)
_ROTATED_TWICE = MISTAKES.declare(
    "cache_positions",
    "the outputs are those of keys rotated twice: once when they were cached, and again, the "
    "whole cache, at every step (a key at position m ends at 2m).",
    _FIX_CACHE,
)
_OFF_BY_ONE = MISTAKES.declare(
    "off_by_one",
    "the decoded tokens are rotated at position {found} where {wanted} is right (the number "
    "of cached tokens): the offset is off by {by}.",
    _FIX_OFFSET + " The first token is at position 0, so the token after n cached ones is at n.",
)
_ONE_POSITION = MISTAKES.declare(
    "single_token",
    "the step is right for one new token, but a call with several ({new} at {call}) gives "
    "them all the position of the first, n, and {masked}: a step after the prefill may bring "
    "several tokens (speculative decoding, a chunked prompt).",
    "treat the new tokens as a block: positions n .. n + new - 1 for their queries and keys, "
    "and a causal mask among them (allowed = torch.arange(n + new) <= positions[:, None]).",
)
_NOT_ROTATED = MISTAKES.declare(
    "not_rotated",
    "the outputs are those of attention without any rotation: the layer ignores positions "
    "(but for the causal mask).",
    "rotate the queries and the keys with RoPE (pe_lib.apply_rope(x, positions, base=base, "
    "layout=layout)) before the scores.",
)
_CACHE_DROPPED = MISTAKES.declare(
    "cache_dropped",
    "the outputs are those of new tokens attending only to themselves: the cached keys and "
    "values are not used.",
    "concatenate the cached keys and values before the new ones (torch.cat(..., dim=-2)), "
    "attend over all of them, and return the grown cache.",
)
_NOT_CAUSAL = MISTAKES.declare(
    "not_causal",
    "in the prefill every token attends to the tokens after it too: the causal mask is missing.",
    "mask the scores of keys after the query: query i of the new block (position offset + i) "
    "may attend to keys 0 .. offset + i (e.g. is_causal=True when nothing is cached).",
)
_MASK_IN_PREFILL_ONLY = MISTAKES.declare(
    "not_causal",
    "the causal mask is applied in the prefill only: at {call} the {new} new tokens attend to "
    "each other's future too.",
    _FIX_MASK,
)
_SCALE = MISTAKES.declare(
    "scale",
    "the scores are divided by {used} where sqrt(head_dim) = sqrt({head_dim}) = {wanted} is "
    "right{hint}.",
    "divide the scores by math.sqrt(q.shape[-1]), the head size of the inputs, or leave the "
    "scale to torch.nn.functional.scaled_dot_product_attention.",
)
_WRONG_VALUES = MISTAKES.declare(
    "wrong_values",
    "at {call}, token {token} (position {position}), the output is off by {error} (allowed "
    "{allowed}), and no mistake the checker knows explains it.",
    "compare the step with the full pass: softmax(q_rot k_rot^T / sqrt(head_dim) + causal "
    "mask) v, every query and key rotated at its absolute position (RoPE base {base}, layout "
    "{layout!r}).",
)

_CALL = text("step(q, k, v, {cache}) at {step}")
_PREFILL_STEP = text("the prefill (call 1)")
_DECODING_STEP = text("decoding step {index} (call {number})")
_CASE = text(
    "For head_dim={head_dim}, batch {batch}, {heads} heads, calls of {sizes} new tokens{drawn}: "
)
_NO_MASK = text("no causal mask among them")
_WITH_MASK = text("with the causal mask among them")
_HARD_CODED = text(" (sqrt(16), the head size of the chapter's example)")

#: Allowed error of a float32 output (values of size about 1).
_TOLERANCE = 1e-4
#: How far two runs of the same case may differ (kernels that reduce in another order).
_SAME = 1e-6
_DRAWN = 6


@dataclass(frozen=True)
class _Space:
    """One case: the sizes, and the tokens of each call (the prefill first)."""

    batch: int
    heads: int
    head_dim: int
    calls: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.calls)

    def spans(self) -> list[tuple[int, int]]:
        """``(cached, new)`` of each call."""
        out, cached = [], 0
        for new in self.calls:
            out.append((cached, new))
            cached += new
        return out


#: The chapter's case: a prefill of 5 tokens, then 7 steps of one token.
_FIXED = _Space(2, 2, 16, (5, 1, 1, 1, 1, 1, 1, 1))


def _draw(rng: random.Random) -> _Space:
    """Head sizes 8..128 (64 every third draw), prefills of 1..8, steps of 1..4 tokens."""
    head_dim = 2 * rng.randint(4, 64)
    calls = [rng.randint(1, 8)] + [rng.randint(1, 4) for _ in range(rng.randint(2, 5))]
    if all(new == 1 for new in calls[1:]):
        calls[1] = 2
    return _Space(rng.randint(1, 3), rng.randint(1, 3), head_dim, tuple(calls))


def _cases(seed: int) -> list[Case[_Space]]:
    cases = list(draw_cases([_FIXED], _draw, _DRAWN, seed))
    # one drawn case at head size 64 whatever the seed: a scale written for 16 shows there
    first = next(c for c in cases if c.index is not None)
    cases[cases.index(first)] = replace(first, value=replace(first.value, head_dim=64))
    return cases


@dataclass(frozen=True)
class _Rule:
    """How a step places positions and attends; the default is the right one.

    ``query(n, new)``: the new queries' positions after ``n`` cached tokens; ``written(n,
    new)``: where the new keys are rotated when cached; ``read(n, written)``: where every key
    is when read at a step after ``n`` cached tokens (``written`` the positions all keys were
    written at); ``keep_cache``: the cached keys are attended to; ``causal``: the prefill is
    masked; ``causal_steps``: later calls are masked among their new tokens; ``scale(d)``: what
    the scores are divided by.
    """

    query: Callable[[int, int], torch.Tensor]
    written: Callable[[int, int], torch.Tensor]
    read: Callable[[int, torch.Tensor], torch.Tensor]
    keep_cache: bool = True
    causal: bool = True
    causal_steps: bool = True
    rotate: bool = True
    scale: Callable[[int], float] = math.sqrt


def _at(n: int, new: int) -> torch.Tensor:
    return torch.arange(n, n + new)


def _zero(n: int, new: int) -> torch.Tensor:
    return torch.arange(new)


def _first(n: int, new: int) -> torch.Tensor:
    """Every new token at the first new position ``n`` (after the prefill)."""
    return torch.full((new,), n) if n else torch.arange(new)


def _as_written(n: int, written: torch.Tensor) -> torch.Tensor:
    return written


def _at_the_query(n: int, written: torch.Tensor) -> torch.Tensor:
    """Every key rotated at the new token's position ``n`` (the prefill's keys as written)."""
    return torch.full_like(written, n) if n else written


def _twice(n: int, written: torch.Tensor) -> torch.Tensor:
    return 2 * written


def _shifted(by: int) -> Callable[[int, int], torch.Tensor]:
    def at(n: int, new: int) -> torch.Tensor:
        return torch.arange(n, n + new) + (by if n else 0)

    return at


_RIGHT = _Rule(_at, _at, _as_written)


def _run(
    rule: _Rule,
    space: _Space,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    base: float,
    layout: str,
) -> torch.Tensor:
    """The outputs of every call under ``rule``, float64 ``(batch, heads, total, head_dim)``."""
    q, k, v = q.double(), k.double(), v.double()
    outs, written = [], torch.empty(0, dtype=torch.int64)
    for n, new in space.spans():
        written = torch.cat((written, rule.written(n, new)))
        first = 0 if rule.keep_cache else n
        keys = k[..., first : n + new, :]
        query = q[..., n : n + new, :]
        if rule.rotate:
            query = apply_rope(query, rule.query(n, new), base=base, layout=layout)
            keys = apply_rope(keys, rule.read(n, written)[first:], base=base, layout=layout)
        scores = query @ keys.transpose(-1, -2) / rule.scale(q.shape[-1])
        if rule.causal if n == 0 else rule.causal_steps:
            columns = torch.arange(first, n + new)
            scores = scores.masked_fill(columns[None, :] > _at(n, new)[:, None], -math.inf)
        outs.append(torch.softmax(scores, dim=-1) @ v[..., first : n + new, :])
    return torch.cat(outs, dim=-2)


def _step_name(index: int) -> str:
    if index == 0:
        return str(_PREFILL_STEP)
    return _DECODING_STEP.render(index=index, number=index + 1)


@dataclass(frozen=True)
class _Evidence:
    """The student's outputs of one case, and how to rebuild what a mistake gives."""

    outs: torch.Tensor
    space: _Space
    inputs: tuple[torch.Tensor, torch.Tensor, torch.Tensor]
    base: float
    layout: str

    def matches(self, rule: _Rule) -> bool:
        wanted = _run(rule, self.space, *self.inputs, self.base, self.layout)
        return bool(((self.outs - wanted).abs() <= _TOLERANCE).all())

    def first_block(self) -> tuple[str, int] | None:
        """The first call after the prefill with several new tokens, and its size."""
        for index, (n, new) in enumerate(self.space.spans()):
            if n and new > 1:
                return _step_name(index), new
        return None


def _when(
    rule: _Rule, fields: dict[str, object] | None = None
) -> Callable[[_Evidence], dict[str, object] | None]:
    return lambda e: (fields or {}) if e.matches(rule) else None


def _one_position(masked: bool) -> Callable[[_Evidence], dict[str, object] | None]:
    rule = _Rule(_first, _first, _as_written, causal_steps=masked)

    def explains(e: _Evidence) -> dict[str, object] | None:
        block = e.first_block()
        if block is None or not e.matches(rule):
            return None
        return {"call": block[0], "new": block[1], "masked": _WITH_MASK if masked else _NO_MASK}

    return explains


def _mask_in_prefill_only(e: _Evidence) -> dict[str, object] | None:
    block = e.first_block()
    if block is None or not e.matches(_Rule(_at, _at, _as_written, causal_steps=False)):
        return None
    return {"call": block[0], "new": block[1]}


def _constant(value: float, head_dim: int) -> float:
    return value


def _scale(e: _Evidence) -> dict[str, object] | None:
    head_dim = e.space.head_dim
    for used, shown in ((4.0, "4"), (float(head_dim), str(head_dim)), (1.0, "1")):
        if used != math.sqrt(head_dim) and e.matches(
            _Rule(_at, _at, _as_written, scale=functools.partial(_constant, used))
        ):
            return {
                "used": shown,
                "head_dim": head_dim,
                "wanted": f"{math.sqrt(head_dim):.4g}",
                "hint": _HARD_CODED if used == 4.0 else "",
            }
    return None


#: The mistakes a wrong output is compared with, in order; ``"wrong_values"`` if none explains it.
_DIAGNOSES: tuple[Diagnosis[_Evidence], ...] = (
    Diagnosis(_OFFSET_FORGOTTEN, _when(_Rule(_zero, _zero, _as_written))),
    Diagnosis(_QUERY_AT_ZERO, _when(_Rule(_zero, _at, _as_written))),
    Diagnosis(_RE_ROTATED, _when(_Rule(_at, _at, _at_the_query))),
    Diagnosis(_ROTATED_TWICE, _when(_Rule(_at, _at, _twice))),
    *(
        Diagnosis(
            _OFF_BY_ONE,
            _when(
                _Rule(_shifted(by), _shifted(by), _as_written),
                {"found": f"n {by:+d}", "wanted": "n", "by": by},
            ),
        )
        for by in (1, -1)
    ),
    Diagnosis(_ONE_POSITION, _one_position(masked=False)),
    Diagnosis(_ONE_POSITION, _one_position(masked=True)),
    Diagnosis(_NOT_ROTATED, _when(_Rule(_at, _at, _as_written, rotate=False))),
    Diagnosis(_CACHE_DROPPED, _when(_Rule(_at, _at, _as_written, keep_cache=False))),
    Diagnosis(_NOT_CAUSAL, _when(_Rule(_at, _at, _as_written, causal=False))),
    Diagnosis(_MASK_IN_PREFILL_ONLY, _mask_in_prefill_only),
    Diagnosis(_SCALE, _scale),
)


@MISTAKES.attach
def check_kv_cache(
    step: Callable[..., object], *, base: float = 10000.0, layout: str = "half", seed: int = 0
) -> None:
    r"""Check cached decoding with RoPE: ``step(q, k, v, cache) -> (out, cache)``.

    The checker makes random float32 queries, keys and values, unrotated, shape ``(batch,
    heads, tokens, head_dim)``. It calls ``step`` on the first tokens (``cache=None``: a
    prefill), then on the next ones with the cache the previous call returned. Each call's
    ``out`` must be, within 1e-4 and in the inputs' dtype, the rows of the full pass: causal
    attention over all the tokens, queries and keys rotated at their absolute positions by RoPE
    (``base``, ``layout``), scores divided by :math:`\sqrt{\mathrm{head\_dim}}`.

    The cases: head size 16, a prefill of 5 tokens and 7 steps of one token (run twice from
    ``cache=None``, to catch state kept outside the cache); then 6 drawn with ``seed``, head
    sizes 8 to 128 (one of them 64), batch and heads 1 to 3, prefills of 1 to 8 tokens and steps
    of 1 to 4 tokens.

    At the first wrong call ``.mistake`` (one of ``check_kv_cache.mistakes``) is:

    * ``"exception"``, ``"wrong_type"``, ``"shape"``, ``"dtype"``: ``step`` raised (the error is
      chained), did not return ``(out, cache)`` with ``out`` a tensor, or ``out`` is not shaped
      like ``q`` or not of its dtype;
    * ``"hidden_state"``: the same case, run twice from ``cache=None``, gave different outputs;
    * ``"offset"``: the new tokens rotated at position 0 at every call (query and key, or the
      query alone);
    * ``"cache_positions"``: the cache kept unrotated and rotated at each step with the new
      token's position, or kept rotated and rotated again;
    * ``"off_by_one"``: decoded tokens at the number of cached tokens plus or minus one;
    * ``"single_token"``: a step right for one new token only: several new tokens all at the
      first one's position (with or without a mask among them);
    * ``"not_rotated"``, ``"cache_dropped"``: no rotation; the cache not attended to;
    * ``"not_causal"``: the prefill without its causal mask, or the mask in the prefill only;
    * ``"scale"``: the scores divided by 4 (the square root of 16, hard-coded), by the head
      size, or not at all;
    * ``"wrong_values"``: anything else, with the first call and token found wrong.

    Args:
        step: the student's function (or module), called as ``step(q, k, v, cache)``.
        base: RoPE's frequency base, > 1.
        layout: ``"half"`` (pairs ``(i, i + d/2)``, Hugging Face) or ``"interleaved"``.
        seed: the seed of the drawn cases, an int >= 0.

    Raises:
        TypeError, ValueError: ``step`` is not callable, or ``base``, ``layout`` or ``seed`` is
            invalid.
        CheckFailed: a call's output is wrong; ``.mistake`` says how (see above).
    """
    check_callable("step", step, "a function step(q, k, v, cache) -> (out, cache)")
    base = check_base("base", base)
    layout = check_layout("layout", layout)
    seed = check_seed(seed)
    for number, case in enumerate(_cases(seed)):
        space = case.value
        context = (
            ""
            if case.index is None
            else _CASE.render(
                head_dim=space.head_dim,
                batch=space.batch,
                heads=space.heads,
                sizes=", ".join(map(str, space.calls)),
                drawn=case.label,
            )
        )
        generator = torch.Generator().manual_seed(seed * 1000 + number)
        shape = (space.batch, space.heads, space.total, space.head_dim)
        q, k, v = (
            torch.randn(shape, generator=generator, dtype=torch.float64).float() for _ in range(3)
        )
        inputs = (q, k, v)
        outs = _student_outputs(step, space, inputs, context)
        if case.index is None:  # the same case again, from cache=None
            again = _student_outputs(step, space, inputs, context)
            both_nan = torch.isnan(again) & torch.isnan(outs)
            error = float(torch.where(both_nan, 0.0, (again - outs).abs()).max())
            if not error <= _SAME:
                raise HIDDEN_STATE.fail(context, call="step", error=f"{error:.3g}", how=_FIX_STATE)
        right = _run(_RIGHT, space, *inputs, base, layout)
        if not bool(((outs - right).abs() <= _TOLERANCE).all()):
            evidence = _Evidence(outs, space, inputs, base, layout)
            failure = diagnose(_DIAGNOSES, evidence, context)
            if failure is not None:
                raise failure
            _report_first_wrong(outs, right, space, base, layout, context)


def _student_outputs(
    step: Callable[..., object],
    space: _Space,
    inputs: tuple[torch.Tensor, ...],
    context: str,
) -> torch.Tensor:
    """Every call's ``out``, concatenated: float64 ``(batch, heads, total, head_dim)``."""
    cache: object = None
    outs = []
    for index, (n, new) in enumerate(space.spans()):
        parts = [x[..., n : n + new, :].clone() for x in inputs]
        call = _CALL.render(cache="None" if cache is None else "cache", step=_step_name(index))
        result = call_student(EXCEPTION, call, step, *parts, cache, contract=_CONTRACT)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise WRONG_TYPE.fail(
                context, call=call, found=kind_of(result), wanted=_PAIR, how=_FIX_TYPE
            )
        out, cache = result
        if not isinstance(out, torch.Tensor):
            found = _PAIR_OF.render(kind=kind_of(out))
            raise WRONG_TYPE.fail(context, call=call, found=found, wanted=_PAIR, how=_FIX_TYPE)
        q_shape = tuple(parts[0].shape)
        if tuple(out.shape) != q_shape:
            raise SHAPE.fail(
                context,
                call=call,
                shape=tuple(out.shape),
                wanted=_LIKE_Q.render(q_shape=q_shape),
                how=_FIX_SHAPE,
            )
        if out.dtype != parts[0].dtype:
            raise DTYPE.fail(
                context,
                call=call,
                found=str(out.dtype).removeprefix("torch."),
                wanted=str(parts[0].dtype).removeprefix("torch."),
                how=_FIX_DTYPE,
            )
        outs.append(out.detach().to("cpu", torch.float64))
    return torch.cat(outs, dim=-2)


def _report_first_wrong(
    outs: torch.Tensor, right: torch.Tensor, space: _Space, base: float, layout: str, context: str
) -> None:
    error = (outs - right).abs().amax(dim=(0, 1, 3))  # (total,): worst per token
    token = int(torch.nonzero(~(error <= _TOLERANCE))[0, 0])  # NaN counts as wrong
    index = next(i for i, (n, new) in enumerate(space.spans()) if n <= token < n + new)
    raise _WRONG_VALUES.fail(
        context,
        call=_step_name(index),
        token=token,
        position=token,
        error=f"{float(error[token]):.3g}",
        allowed=f"{_TOLERANCE:g}",
        base=f"{base:g}",
        layout=layout,
    )
