r"""``check_kv_cache``: attention with a key-value cache and RoPE, checked against the full pass.

The student writes one decoding step of a rotary attention layer,
``step(q, k, v, cache) -> (out, cache)``: ``q``, ``k``, ``v`` are the new tokens' queries,
keys and values, *not yet rotated*, shape ``(batch, heads, new, head_dim)``; ``cache`` is
``None`` at the first call and otherwise what the previous call returned (anything the student
likes); ``out`` is the attention output of the new tokens over every token so far, shape
``(batch, heads, new, head_dim)``.

The checker runs a prefill (several tokens at once) and then single-token decoding steps, and
compares every output with the full forward pass of the same layer: causal attention over the
whole sequence, each query and key rotated at its absolute position
(:func:`pe_lib.rope.apply_rope`), scores scaled by :math:`1/\sqrt{d}`, computed in float64 from
the same inputs. That layer is the smallest rotary model there is; its random inputs make every
position mistake visible.

**Diagnosis.** A wrong output is compared with what each mistake would give, rebuilt the same
way (in the order of ``check_kv_cache.mistakes``): the new tokens rotated at position 0 (the
offset forgotten, for the query and key or for the query alone), the cache kept unrotated and
rotated at each step with the new token's position (or kept rotated and rotated again), an
offset off by one, no rotation, the cache dropped, a prefill without its causal mask.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from .._validation import check_base, check_callable, check_layout
from ..rope import apply_rope
from ._core import Catalogue, Mistake, call_student, say

__all__ = ["check_kv_cache"]

#: The mistakes :func:`check_kv_cache` recognises, in the order it looks for them.
MISTAKES = Catalogue("check_kv_cache")

_FIX_OFFSET = (
    "rotate the new tokens' queries and keys at offset + 0 .. offset + new - 1, offset = the "
    "number of tokens already cached (0 for the prefill), e.g. positions = torch.arange(offset, "
    "offset + q.shape[-2])."
)
_FIX_OFFSET_KO = (
    "새 토큰의 쿼리와 키를 offset + 0 .. offset + new - 1에서 회전하라. offset은 이미 캐시된 "
    "토큰 수다(프리필에서는 0). 예: positions = torch.arange(offset, offset + q.shape[-2])."
)
_FIX_CACHE = (
    "rotate each key once, at its own position, when it enters the cache, and never rotate the "
    "cache again: cache['k'] = torch.cat((cache['k'], rotate(k, positions)), dim=-2)."
)
_FIX_CACHE_KO = (
    "각 키는 캐시에 들어갈 때 자기 위치에서 한 번만 회전하고, 캐시를 다시 회전하지 마라: "
    "cache['k'] = torch.cat((cache['k'], rotate(k, positions)), dim=-2)."
)

_EXCEPTION = MISTAKES.declare(
    "exception",
    "{call} raised {error_type}: {error}.",
    "fix that error first (the traceback above this one shows where it happened). The checker "
    "calls step(q, k, v, cache) with float32 tensors of shape (batch, heads, new, head_dim), "
    "cache None at the first call (a prefill of several tokens), then one token at a time "
    "with the cache your step returned.",
    ko=(
        "{call:이} {error_type:을} 일으켰다. 오류 내용: {error}",
        "그 오류부터 고쳐라(이 오류 위의 traceback이 어디서 일어났는지 보여 준다). 검사기는 "
        "shape이 (batch, heads, new, head_dim)인 float32 텐서로 step(q, k, v, cache)를 "
        "호출한다. 첫 호출(여러 토큰의 프리필)에서 cache는 None이고, 그다음에는 네 step이 "
        "반환한 캐시와 함께 한 번에 토큰 하나씩 호출한다.",
    ),
)
_WRONG_TYPE = MISTAKES.declare(
    "wrong_type",
    "{call} returned {what}, not the pair (out, cache) with out a torch tensor.",
    "return out, cache: the new tokens' attention output and whatever the next call needs.",
    ko=(
        "{call:이} out이 torch 텐서인 쌍 (out, cache)가 아니라 {what:을} 반환했다.",
        "out, cache를 반환하라: 새 토큰의 어텐션 출력과, 다음 호출에 필요한 것.",
    ),
)
_SHAPE = MISTAKES.declare(
    "shape",
    "{call} returned out of shape {shape}; the new tokens' queries have shape {q_shape}.",
    "return one output per new query: shape (batch, heads, new, head_dim), like q (attend "
    "with the new queries only, over the cached and new keys).",
    ko=(
        "{call:이} shape {shape}인 out을 반환했다. 새 토큰의 쿼리는 shape이 {q_shape}이다.",
        "새 쿼리마다 출력 하나를 반환하라: q처럼 shape (batch, heads, new, head_dim)이다"
        "(새 쿼리로만, 캐시된 키와 새 키 전체에 어텐션하라).",
    ),
)
_OFFSET_FORGOTTEN = MISTAKES.declare(
    "offset",
    "the outputs are those of new tokens rotated at positions 0 .. new - 1 at every call: the "
    "offset is forgotten, so each decoded token's query and key sit at position 0.",
    _FIX_OFFSET,
    ko=(
        "출력이 호출마다 새 토큰을 위치 0 .. new - 1에서 회전했을 때의 출력이다. 오프셋을 "
        "잊어서, 디코딩한 토큰마다 쿼리와 키가 위치 0에 놓인다.",
        _FIX_OFFSET_KO,
    ),
)
_QUERY_AT_ZERO = MISTAKES.declare(
    "offset",
    "the keys are at their positions, but each new query is rotated at position 0 .. new - 1: "
    "the query's offset is forgotten.",
    _FIX_OFFSET,
    ko=(
        "키는 제자리에 있는데, 새 쿼리마다 위치 0 .. new - 1에서 회전했다. 쿼리의 오프셋을 잊었다.",
        _FIX_OFFSET_KO,
    ),
)
_RE_ROTATED = MISTAKES.declare(
    "cache_positions",
    "the outputs are those of a cache kept unrotated and rotated at every step with the new "
    "token's position: every cached key sits where the query does, so attention no longer "
    "sees how far back a token is.",
    _FIX_CACHE,
    ko=(
        "출력이 회전하지 않은 채 보관한 캐시를 단계마다 새 토큰의 위치로 회전했을 때의 "
        "출력이다. 캐시된 키가 모두 쿼리와 같은 위치에 놓여, 어텐션이 토큰이 얼마나 앞에 "
        "있는지 보지 못한다.",
        _FIX_CACHE_KO,
    ),
)
_ROTATED_TWICE = MISTAKES.declare(
    "cache_positions",
    "the outputs are those of keys rotated twice: once when they were cached, and again, the "
    "whole cache, at every step (a key at position m ends at 2m).",
    _FIX_CACHE,
    ko=(
        "출력이 키를 두 번 회전했을 때의 출력이다. 캐시에 넣을 때 한 번, 그리고 단계마다 "
        "캐시 전체를 다시 한 번(위치 m의 키가 2m에 놓인다).",
        _FIX_CACHE_KO,
    ),
)
_OFF_BY_ONE = MISTAKES.declare(
    "off_by_one",
    "the decoded tokens are rotated at position {found} where {wanted} is right (the number "
    "of cached tokens): the offset is off by {by}.",
    _FIX_OFFSET + " The first token is at position 0, so the token after n cached ones is at n.",
    ko=(
        "디코딩한 토큰을 맞는 위치 {wanted}(캐시된 토큰 수)가 아니라 {found}에서 회전했다. "
        "오프셋이 {by}만큼 어긋났다.",
        _FIX_OFFSET_KO + " 첫 토큰이 위치 0이므로, 캐시된 토큰 n개 다음 토큰은 위치 n이다.",
    ),
)
_NOT_ROTATED = MISTAKES.declare(
    "not_rotated",
    "the outputs are those of attention without any rotation: the layer ignores positions "
    "(but for the causal mask).",
    "rotate the queries and the keys with RoPE (pe_lib.apply_rope(x, positions, base=base, "
    "layout=layout)) before the scores.",
    ko=(
        "출력이 회전이 전혀 없는 어텐션의 출력이다. 이 층은 (인과 마스크 말고는) 위치를 무시한다.",
        "점수를 내기 전에 쿼리와 키를 RoPE로 회전하라(pe_lib.apply_rope(x, positions, "
        "base=base, layout=layout)).",
    ),
)
_CACHE_DROPPED = MISTAKES.declare(
    "cache_dropped",
    "the outputs are those of new tokens attending only to themselves: the cached keys and "
    "values are not used.",
    "concatenate the cached keys and values before the new ones (torch.cat(..., dim=-2)), "
    "attend over all of them, and return the grown cache.",
    ko=(
        "출력이 새 토큰이 자기들끼리만 어텐션했을 때의 출력이다. 캐시된 키와 값을 쓰지 않았다.",
        "캐시된 키와 값을 새것 앞에 이어 붙이고(torch.cat(..., dim=-2)), 그 전체에 "
        "어텐션한 뒤 늘어난 캐시를 반환하라.",
    ),
)
_NOT_CAUSAL = MISTAKES.declare(
    "not_causal",
    "in the prefill every token attends to the tokens after it too: the causal mask is missing.",
    "mask the scores of keys after the query: query i of the new block (position offset + i) "
    "may attend to keys 0 .. offset + i (e.g. is_causal=True when nothing is cached).",
    ko=(
        "프리필에서 모든 토큰이 자기 뒤 토큰에도 어텐션한다. 인과 마스크가 없다.",
        "쿼리 뒤에 있는 키의 점수를 가려라: 새 블록의 쿼리 i(위치 offset + i)는 키 "
        "0 .. offset + i에만 어텐션할 수 있다(예: 캐시가 비었을 때 is_causal=True).",
    ),
)
_WRONG_VALUES = MISTAKES.declare(
    "wrong_values",
    "at {call}, token {token} (position {position}), the output is off by {error} (allowed "
    "{allowed}), and no mistake the checker knows explains it.",
    "compare your step with the full pass: softmax(q_rot k_rot^T / sqrt(head_dim) + causal "
    "mask) v, every query and key rotated at its absolute position (RoPE base {base}, layout "
    "{layout!r}).",
    ko=(
        "{call}에서 토큰 {token}(위치 {position})의 출력이 {error}만큼 어긋나는데(허용 "
        "{allowed}), 검사기가 아는 어떤 실수로도 설명되지 않는다.",
        "네 step을 전체 패스와 비교하라: softmax(q_rot k_rot^T / sqrt(head_dim) + 인과 "
        "마스크) v, 모든 쿼리와 키는 절대 위치에서 회전한다(RoPE base {base}, 레이아웃 "
        "{layout!r}).",
    ),
)

#: The calls: a prefill of this many tokens, then this many single-token steps.
_PREFILL, _STEPS = 5, 7
_BATCH, _HEADS, _HEAD_DIM = 2, 2, 16
#: Allowed error of a float32 output (values of size about 1).
_TOLERANCE = 1e-4


@dataclass(frozen=True)
class _Rule:
    """How a step places positions: the query's, each key's, and what it attends to.

    ``query(n, new)``: the new queries' positions after ``n`` cached tokens; ``written(n,
    new)``: where the new keys are rotated when cached; ``read(n, written)``: where every key
    is when read at a step after ``n`` cached tokens (``written`` the positions all keys were
    written at); ``keep_cache``: the cached keys are attended to; ``causal``: the prefill is
    masked.
    """

    query: Callable[[int, int], torch.Tensor]
    written: Callable[[int, int], torch.Tensor]
    read: Callable[[int, torch.Tensor], torch.Tensor]
    keep_cache: bool = True
    causal: bool = True
    rotate: bool = True


def _at(n: int, new: int) -> torch.Tensor:
    return torch.arange(n, n + new)


def _zero(n: int, new: int) -> torch.Tensor:
    return torch.arange(new)


def _as_written(n: int, written: torch.Tensor) -> torch.Tensor:
    return written


def _at_the_query(n: int, written: torch.Tensor) -> torch.Tensor:
    """Every key rotated at the new token's position ``n`` (the prefill's keys as written)."""
    return torch.full_like(written, n) if n else written


def _shifted(by: int) -> Callable[[int, int], torch.Tensor]:
    def at(n: int, new: int) -> torch.Tensor:
        return torch.arange(n, n + new) + (by if n else 0)

    return at


_RIGHT = _Rule(_at, _at, _as_written)


def _run(
    rule: _Rule, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, base: float, layout: str
) -> torch.Tensor:
    """The outputs of every call under ``rule``, float64 ``(batch, heads, total, head_dim)``."""
    q, k, v = q.double(), k.double(), v.double()
    outs, written = [], torch.empty(0, dtype=torch.int64)
    for n, new in _calls():
        written = torch.cat((written, rule.written(n, new)))
        first = 0 if rule.keep_cache else n
        keys = k[..., first : n + new, :]
        query = q[..., n : n + new, :]
        if rule.rotate:
            query = apply_rope(query, rule.query(n, new), base=base, layout=layout)
            keys = apply_rope(keys, rule.read(n, written)[first:], base=base, layout=layout)
        scores = query @ keys.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if rule.causal or n:
            columns = torch.arange(first, n + new)
            scores = scores.masked_fill(columns[None, :] > _at(n, new)[:, None], -math.inf)
        outs.append(torch.softmax(scores, dim=-1) @ v[..., first : n + new, :])
    return torch.cat(outs, dim=-2)


def _calls() -> list[tuple[int, int]]:
    """``(cached, new)`` of each call."""
    return [(0, _PREFILL)] + [(_PREFILL + s, 1) for s in range(_STEPS)]


def _step_name(index: int) -> str:
    if index == 0:
        return say("the prefill (call 1)", "프리필(호출 1)")
    return say(
        f"decoding step {index} (call {index + 1})", f"디코딩 단계 {index}(호출 {index + 1})"
    )


@MISTAKES.attach
def check_kv_cache(
    step: Callable[..., object], *, base: float = 10000.0, layout: str = "half"
) -> None:
    r"""Check cached decoding with RoPE: ``step(q, k, v, cache) -> (out, cache)``.

    The checker makes random float32 queries, keys and values for 12 tokens, shape ``(2, 2,
    12, 16)`` = ``(batch, heads, tokens, head_dim)``, unrotated. It calls ``step`` on the
    first 5 (``cache=None``: a prefill), then on each later token alone with the cache the
    previous call returned. Each call's ``out`` must be, within 1e-4, the rows of the full
    pass: causal attention over all 12 tokens, queries and keys rotated at their absolute
    positions by RoPE (``base``, ``layout``), scores divided by :math:`\sqrt{16}`.

    At the first wrong call ``.mistake`` (one of ``check_kv_cache.mistakes``) is:

    * ``"exception"``, ``"wrong_type"``, ``"shape"``: ``step`` raised (the error is chained),
      did not return ``(out, cache)`` with ``out`` a tensor, or ``out`` is not shaped like ``q``;
    * ``"offset"``: the new tokens rotated at position 0 at every call (query and key, or the
      query alone);
    * ``"cache_positions"``: the cache kept unrotated and rotated at each step with the new
      token's position, or kept rotated and rotated again;
    * ``"off_by_one"``: decoded tokens at the number of cached tokens plus or minus one;
    * ``"not_rotated"``, ``"cache_dropped"``, ``"not_causal"``: no rotation; the cache not
      attended to; the prefill without its causal mask;
    * ``"wrong_values"``: anything else, with the first call and token found wrong.

    Args:
        step: the student's function (or module), called as ``step(q, k, v, cache)``.
        base: RoPE's frequency base, > 1.
        layout: ``"half"`` (pairs ``(i, i + d/2)``, Hugging Face) or ``"interleaved"``.

    Raises:
        TypeError, ValueError: ``step`` is not callable, or ``base`` or ``layout`` is invalid.
        CheckFailed: a call's output is wrong; ``.mistake`` says how (see above).
    """
    check_callable("step", step, "a function step(q, k, v, cache) -> (out, cache)")
    base = check_base("base", base)
    layout = check_layout("layout", layout)
    generator = torch.Generator().manual_seed(0)
    total = _PREFILL + _STEPS
    q, k, v = (
        torch.randn(
            _BATCH, _HEADS, total, _HEAD_DIM, generator=generator, dtype=torch.float64
        ).float()
        for _ in range(3)
    )
    outs = _student_outputs(step, q, k, v)
    right = _run(_RIGHT, q, k, v, base, layout)
    if _matches(outs, right):
        return
    for mistake, rule, fields in _candidates():
        if _matches(outs, _run(rule, q, k, v, base, layout)):
            raise mistake.fail(**fields)
    _report_first_wrong(outs, right, base, layout)


def _student_outputs(
    step: Callable[..., object], q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
) -> torch.Tensor:
    """Every call's ``out``, concatenated: float64 ``(batch, heads, total, head_dim)``."""
    cache: object = None
    outs = []
    for index, (n, new) in enumerate(_calls()):
        parts = [x[..., n : n + new, :].clone() for x in (q, k, v)]
        shown = "None" if cache is None else "cache"
        call = f"step(q, k, v, {shown}) " + say(
            f"at {_step_name(index)}", f"{_step_name(index)}에서"
        )
        result = call_student(_EXCEPTION, call, step, *parts, cache)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            what = say(f"a {type(result).__name__}", f"{type(result).__name__} 객체")
            raise _WRONG_TYPE.fail(call=call, what=what)
        out, cache = result
        if not isinstance(out, torch.Tensor):
            what = say(
                f"a pair whose out is a {type(out).__name__}",
                f"out이 {type(out).__name__}인 쌍",
            )
            raise _WRONG_TYPE.fail(call=call, what=what)
        if tuple(out.shape) != tuple(parts[0].shape):
            raise _SHAPE.fail(call=call, shape=tuple(out.shape), q_shape=tuple(parts[0].shape))
        outs.append(out.detach().to("cpu", torch.float64))
    return torch.cat(outs, dim=-2)


def _matches(outs: torch.Tensor, wanted: torch.Tensor) -> bool:
    return bool(((outs - wanted).abs() <= _TOLERANCE).all())


def _candidates() -> list[tuple[Mistake, _Rule, dict[str, object]]]:
    """Each mistake, its rule and its message's fields, in the catalogue's order."""
    found: list[tuple[Mistake, _Rule, dict[str, object]]] = [
        (_OFFSET_FORGOTTEN, _Rule(_zero, _zero, _as_written), {}),
        (_QUERY_AT_ZERO, _Rule(_zero, _at, _as_written), {}),
        (_RE_ROTATED, _Rule(_at, _at, _at_the_query), {}),
        (_ROTATED_TWICE, _Rule(_at, _at, lambda n, w: 2 * w), {}),
    ]
    for by in (1, -1):
        shifted = _shifted(by)
        fields: dict[str, object] = {"found": f"n {by:+d}", "wanted": "n", "by": by}
        found.append((_OFF_BY_ONE, _Rule(shifted, shifted, _as_written), fields))
    found += [
        (_NOT_ROTATED, _Rule(_at, _at, _as_written, rotate=False), {}),
        (_CACHE_DROPPED, _Rule(_at, _at, _as_written, keep_cache=False), {}),
        (_NOT_CAUSAL, _Rule(_at, _at, _as_written, causal=False), {}),
    ]
    return found


def _report_first_wrong(outs: torch.Tensor, right: torch.Tensor, base: float, layout: str) -> None:
    error = (outs - right).abs().amax(dim=(0, 1, 3))  # (total,): worst per token
    token = int(torch.nonzero(~(error <= _TOLERANCE))[0, 0])  # NaN counts as wrong
    index = 0 if token < _PREFILL else token - _PREFILL + 1
    raise _WRONG_VALUES.fail(
        call=_step_name(index),
        token=token,
        position=token,
        error=f"{float(error[token]):.3g}",
        allowed=f"{_TOLERANCE:g}",
        base=f"{base:g}",
        layout=layout,
    )
