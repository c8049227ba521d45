r"""RoPE frequency scalings for context extension: one registry, one contract.

Plain RoPE (:mod:`pe_lib.rope`) rotates channel pair ``i`` by :math:`m\,\theta_i` with
:math:`\theta_i = b^{-2i/d}` (base ``b``, ``d`` the rotated size). Pair ``i`` completes a turn
every :math:`\lambda_i = 2\pi/\theta_i` positions, so within a training length ``L`` it turns
:math:`r_i = L/\lambda_i` times. Pairs with :math:`r_i \gg 1` have met angles all round the circle
during training; pairs with :math:`r_i < 1` have met only angles up to :math:`2\pi r_i`, and at
distances beyond ``L`` they reach angles the model never saw. Each scaling below changes the
:math:`\theta_i` (and possibly the size of the rotated vectors) so that a model trained at length
``L`` can be run at ``factor * L``.

Reference. The numbers are those of the code real models run: Hugging Face transformers'
``ROPE_INIT_FUNCTIONS`` (``transformers/modeling_rope_utils.py``, version 5.23), which computes in
float32; pe_lib computes in float64 and agrees to float32 rounding (``tests/lib/
test_rope_parity.py``). Where a paper and that code differ, the code is the default.

Contract. A scaling is one :class:`RopeScaling` entry of :data:`ROPE_SCALINGS`. Its ``keys`` map
each key of its ``config.json`` entry to a :class:`Key` (required, or its default, and the check
of its value); its ``compute`` takes ``(head_dim, base, params, seq_len)`` and returns
``(inverse_frequencies, attention_factor)``: the :math:`\theta'_i` as a float64 tensor of shape
``(rotary_dim // 2,)`` and a float by which cos and sin are multiplied (1.0 where the method has
none). ``params`` is a model's entry as it is: ``config.json``'s ``rope_scaling`` (the method under
``"rope_type"`` or the older ``"type"``) or transformers 5's ``rope_parameters`` (``rope_theta``
inside, possibly one entry per layer type, as Gemma 3's ``{"full_attention": {...},
"sliding_attention": {...}}``, chosen with ``layer_type=``). Every entry may hold
``"rope_theta"`` (the base) and ``"partial_rotary_factor"`` ``p`` (GPT-NeoX, Phi, Gemma 4): only
the first ``rotary_dim = int(head_dim * p)`` channels are rotated, with the frequencies of a head of
that size, :math:`b^{-2i/\mathrm{rotary\_dim}}`. Values a model keeps outside the entry
(its ``max_position_embeddings``; the base, when the entry has no ``rope_theta``) are arguments:
an entry without ``rope_theta`` needs ``base=``, since ``config.json`` files keep the base at
their top level and RoFormer's 10000 would silently stand in for Llama 3.1's 500000. A
per-layer entry may be ``None`` for a layer type without rotary embedding (Llama 4's and
SmolLM3's NoPE layers); asking for that layer type raises ``ValueError`` saying so.

With ``s = factor`` and ``d = rotary_dim``:

* ``"default"``: :math:`\theta'_i = \theta_i`.
* ``"linear"``, position interpolation (Chen et al., 2023, arXiv:2306.15595):
  :math:`\theta'_i = \theta_i / s`, the same as rotating position ``m`` by the angle of ``m / s``.
* ``"ntk"``, pe_lib's own name (not a Hugging Face ``rope_type``) for the static NTK-aware base
  change (NTK: neural tangent kernel; bloc97, 2023), as Hugging Face's dynamic NTK writes it with
  the ratio fixed at ``s``: :math:`b' = b\,s^{d/(d-2)}`, so the fastest pair keeps
  :math:`\theta_0 = 1` and the slowest pair is interpolated by exactly ``s``.
* ``"dynamic"``, dynamic NTK (emozilla, 2023; ``_compute_dynamic_ntk_parameters``): the NTK base
  change with :math:`\alpha = s\,\ell/L - (s - 1)`, :math:`\ell = \max(\texttt{seq\_len}, L)`, where
  ``L`` is the model's ``max_position_embeddings`` (an argument: Hugging Face reads no length from
  the entry for this method), so nothing changes up to ``L`` and the scaling grows with the length.
  The frequencies are a function of ``seq_len`` alone. Hugging Face's rotary module keeps state
  instead (``dynamic_rope_update`` in ``modeling_rope_utils.py``): it recomputes only when a
  call is longer than any before, and returns to plain RoPE only below ``L``, so after a
  5,000-token call a 3,000-token call (``L`` = 2,048) still uses the 5,000-token frequencies.
  pe_lib gives, at every length, what a fresh Hugging Face module gives at that length
  (``tests/lib/test_rope_parity.py`` shows both).
* ``"yarn"`` (Peng et al., 2023, arXiv:2309.00071: "NTK-by-parts" interpolation and an attention
  temperature), as its reference code (``find_correction_range`` and ``linear_ramp_mask`` in
  github.com/jquesnelle/yarn) and ``_compute_yarn_parameters`` compute it:
  :math:`\theta'_i = (1 - \gamma_i)\,\theta_i/s + \gamma_i\,\theta_i`, where the extrapolation weight
  :math:`\gamma_i = 1 - \mathrm{clamp}((i - a)/(c - a), 0, 1)` runs between the pair indices
  ``a`` and ``c`` at which :math:`r_i` equals ``beta_fast`` and ``beta_slow``, rounded outwards
  when ``truncate`` is true (the default; ``null`` counts as false, as in Hugging Face) and then
  clamped to ``[0, d - 1]``. In a per-layer entry, pe_lib reads the layer's own ``truncate``.
  transformers 5.23 reads it from the top level of ``rope_parameters``
  (``config.rope_parameters.get("truncate", True)`` in ``_compute_yarn_parameters``), which in a
  per-layer dict holds only layer types, so there it always truncates: for a layer whose entry
  says ``truncate: false`` the two differ (by 43% for gpt-oss's entry, head size 64). pe_lib
  follows the entry, since a key the model's authors wrote is not silently dropped. The paper writes the ramp as linear in :math:`r` (its eq. 18);
  the two agree outside the ramp. The clamp matters when ``L`` is short: it keeps pair 0 whenever
  ``a`` would be negative. ``clamp_ramp=False`` in the entry is pe_lib's named variant without it.
  The attention factor is ``attention_factor`` if given, else DeepSeek-V2's
  :math:`(0.1\,\mathrm{mscale}\ln s + 1)/(0.1\,\mathrm{mscale\_all\_dim}\ln s + 1)` when both
  ``mscale`` and ``mscale_all_dim`` are non-zero, else the paper's :math:`\sqrt{1/t} = 0.1\ln s + 1`
  (1 for :math:`s \le 1`).
* ``"longrope"`` (Ding et al., 2024, arXiv:2402.13753; Phi-3's ``su``): one divisor per pair,
  :math:`\theta'_i = \theta_i / f_i`, with ``f = long_factor`` when ``seq_len`` exceeds
  ``original_max_position_embeddings`` and ``short_factor`` otherwise; attention factor
  ``attention_factor`` if given, else :math:`\sqrt{1 + \ln s / \ln L}` (1 for :math:`s \le 1`),
  where ``s`` is ``factor`` or, when the entry has none, ``max_position_embeddings / L``.
* ``"llama3"`` (Meta's Llama 3.1 reference code, ``apply_scaling`` in
  github.com/meta-llama/llama-models): pairs with :math:`r_i > \texttt{high\_freq\_factor}` are kept,
  pairs with :math:`r_i < \texttt{low\_freq\_factor}` are interpolated by ``s``, and in between
  :math:`\gamma_i = (r_i - \texttt{low\_freq\_factor})/(\texttt{high\_freq\_factor} -
  \texttt{low\_freq\_factor})`: YaRN's ramp written linear in :math:`r`, with no attention factor.
  Equal factors (Llama 4 Scout) make it a step at :math:`r_i = \texttt{low\_freq\_factor}`.
* ``"proportional"`` (Gemma 4; ``_compute_proportional_rope_parameters``): the first
  ``int(p * head_dim // 2)`` pairs turn by :math:`b^{-2i/\mathrm{head\_dim}}/s` (the exponent keeps
  the whole head's size), the others not at all (:math:`\theta'_i = 0`); the result has
  ``head_dim // 2`` entries whatever ``p``.

``L`` is ``original_max_position_embeddings`` wherever a method's entry has that key.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import torch

from .._validation import (
    check_base,
    check_bool,
    check_head_dim,
    check_positive_int,
    check_real,
)

__all__ = [
    "DEFAULT_BASE",
    "ROPE_SCALINGS",
    "Key",
    "RopeScaling",
    "ScalingConfig",
    "length_for",
    "resolve_scaling",
    "rope_frequencies",
]

#: RoFormer's base (Su et al., 2021), that of the sinusoidal table (Vaswani et al., 2017, section
#: 3.5): the default wherever RoPE asks for a base.
DEFAULT_BASE = 10000.0

#: ``compute(head_dim, base, params, seq_len) -> (inverse frequencies, attention factor)``.
ScalingFunction = Callable[
    [int, float, Mapping[str, Any], "float | None"], tuple[torch.Tensor, float]
]

#: A :data:`ScalingFunction` that also takes the device to form them on (``forms_on_device``).
_OnDevice = Callable[
    [int, float, Mapping[str, Any], "float | None", "torch.device | None"],
    tuple[torch.Tensor, float],
]

#: ``check(name, value) -> value``: raises TypeError/ValueError naming ``name``.
KeyCheck = Callable[[str, object], object]

_REQUIRED = object()  # the default of a required key


@dataclass(frozen=True)
class Key:
    """One key of a method's entry: its check, and its default (``required`` when it has none).

    ``null`` (``None``) in an entry means absent, and takes the default, unless ``none_is`` is
    set: then ``None`` stands for that value (YaRN's ``truncate``, falsy in Hugging Face's code).
    """

    check: KeyCheck
    default: object = _REQUIRED
    none_is: object = None

    @property
    def required(self) -> bool:
        """Whether the entry must hold this key."""
        return self.default is _REQUIRED


@dataclass(frozen=True)
class RopeScaling:
    """One entry of :data:`ROPE_SCALINGS`.

    Attributes:
        compute: ``(head_dim, base, params, seq_len) -> (inverse_frequencies,
            attention_factor)``, inverse frequencies float64 of shape ``(rotary_dim // 2,)``;
            ``params`` holds every key of ``keys`` (defaults filled in), checked, plus
            ``"partial_rotary_factor"`` and the arguments ``prepare`` adds.
        keys: the method's own entry keys, each with its check and default.
        prepare: checks that involve several keys or an argument, and fills in values derived
            from them: ``(params, max_position_embeddings) -> None``, mutating ``params``.
        needs_seq_len: whether the frequencies depend on the current sequence length.
        min_rotary_dim: the smallest rotated size the formula is defined for.
        full_width: the result has ``head_dim // 2`` entries whatever ``partial_rotary_factor``
            (the pairs beyond the rotated share get :math:`\theta'_i = 0`).
        reference: the code (or formula) the method's numbers are those of, for messages.
        refused: keys a model's entry may hold that the method does not read, each with what to
            do instead (the error for such a key says it).
        forms_on_device: ``compute`` takes a fifth argument, the device to form the
            frequencies on (``None``: the default device); otherwise they are formed on the CPU
            and copied where they are asked for.
    """

    compute: ScalingFunction
    keys: Mapping[str, Key] = field(default_factory=dict)
    prepare: Callable[[dict[str, Any], int | None], None] | None = None
    needs_seq_len: bool = False
    min_rotary_dim: int = 2
    full_width: bool = False
    reference: str = ""
    refused: Mapping[str, str] = field(default_factory=dict)
    forms_on_device: bool = False

    @property
    def required(self) -> tuple[str, ...]:
        """The keys the entry must hold."""
        return tuple(name for name, key in self.keys.items() if key.required)

    @property
    def optional(self) -> dict[str, object]:
        """The keys the entry may hold, each with its default."""
        return {name: key.default for name, key in self.keys.items() if not key.required}


@dataclass(frozen=True)
class ScalingConfig:
    """A checked entry: its method, its base and its parameters (defaults filled in).

    ``params["original_max_position_embeddings"]`` is ``L`` for every method that has one; for
    ``"dynamic"`` it is the model's ``max_position_embeddings``, Hugging Face's ``L`` there.
    """

    rope_type: str
    base: float
    params: Mapping[str, Any]

    @property
    def entry(self) -> RopeScaling:
        """The registry entry of ``rope_type``."""
        return ROPE_SCALINGS[self.rope_type]

    @property
    def original_length(self) -> int | None:
        """``L``: the length up to which ``needs_seq_len`` methods use their shortest setting."""
        value = self.params.get("original_max_position_embeddings")
        return None if value is None else int(value)

    def rotary_dim(self, head_dim: int) -> int:
        """The channels the frequencies are for: ``int(head_dim * partial_rotary_factor)``, or
        ``head_dim`` for a ``full_width`` method."""
        if self.entry.full_width:
            return head_dim
        return _rotary_dim(head_dim, self.params, self.rope_type)

    def frequencies(
        self, head_dim: int, length: float | None = None, device: torch.device | None = None
    ) -> tuple[torch.Tensor, float]:
        """:func:`rope_frequencies` of this checked entry, at a checked ``length`` > 0 (or
        ``None``), which may be fractional: the last position + 1 of fractional positions, as
        transformers' ``max(position_ids) + 1`` (``dynamic_rope_update`` in
        ``modeling_rope_utils.py``); formed on ``device`` (default: the default device, the CPU
        unless set otherwise)."""
        entry = self.entry
        rotary_dim = self.rotary_dim(head_dim)
        if rotary_dim < entry.min_rotary_dim:
            raise ValueError(
                f"head_dim must give at least {entry.min_rotary_dim} rotated channels for "
                f"rope_type {self.rope_type!r} (its base exponent is d / (d - 2)), got head_dim "
                f"{head_dim} (rotary_dim {rotary_dim})"
            )
        if length is None and entry.needs_seq_len:
            raise ValueError(
                f"seq_len is required for rope_type {self.rope_type!r}: its frequencies depend "
                f"on the current sequence length"
            )
        if device is not None and entry.forms_on_device:
            on_device = cast(_OnDevice, entry.compute)
            return on_device(head_dim, self.base, self.params, length, device)
        theta, attention_factor = entry.compute(head_dim, self.base, self.params, length)
        return (theta if device is None else theta.to(device)), attention_factor


# --- the checks of entry keys -----------------------------------------------------------------


def _factor(name: str, value: object) -> float:
    return check_real(name, value, at_least=1.0)


def _positive(name: str, value: object) -> float:
    return check_real(name, value, above=0.0)


def _nonnegative(name: str, value: object) -> float:
    return check_real(name, value, at_least=0.0)


def _length(name: str, value: object) -> int:
    return check_positive_int(name, value)


def _flag(name: str, value: object) -> bool:
    return check_bool(name, value)


def _fraction(name: str, value: object) -> float:
    value = check_real(name, value, above=0.0)
    if value > 1.0:
        raise ValueError(f"{name} must be in (0, 1] (the share of channels rotated), got {value!r}")
    return value


def _factor_list(name: str, value: object) -> tuple[float, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(
            f"{name} must be a list of real numbers > 0 (one divisor per pair), got "
            f"{type(value).__name__}"
        )
    return tuple(_positive(f"{name}[{i}]", v) for i, v in enumerate(value))


# --- the pieces the methods are composed of ---------------------------------------------------


def _rotary_dim(head_dim: int, params: Mapping[str, Any], rope_type: str) -> int:
    """int(head_dim * partial_rotary_factor), checked even and >= 2."""
    share = params.get("partial_rotary_factor", 1.0)
    dim = int(head_dim * share)
    if dim < 2 or dim % 2:
        raise ValueError(
            f"head_dim * scaling['partial_rotary_factor'] must round down to an even size >= 2 "
            f"(the channels rotated, in pairs), got int({head_dim} * {share!r}) = {dim} for "
            f"rope_type {rope_type!r}"
        )
    return dim


def _plain(dim: int, base: float, device: torch.device | None) -> torch.Tensor:
    """theta_i = base ** (-2i / dim), float64, shape (dim // 2,), on ``device``: the frequencies
    of the sinusoidal table (:func:`pe_lib.encodings.sinusoidal.angular_frequencies`, the same
    operations, so the same values to the last bit), which RoFormer keeps."""
    exponents = torch.arange(0.0, -float(dim), -2.0, dtype=torch.float64, device=device)
    return torch.pow(base, exponents / dim)


def _ntk_base(base: float, alpha: float, dim: int) -> float:
    """b * alpha ** (d / (d - 2)): theta_0 stays 1, theta_{d/2-1} is divided by alpha."""
    log_base = math.log(base) + math.log(alpha) * dim / (dim - 2)
    if log_base > math.log(torch.finfo(torch.float64).max):
        raise ValueError(
            f"scaling['factor'] is too large: the NTK base b * alpha ** (d / (d - 2)) with "
            f"b = {base!r}, alpha = {alpha!r} and d = {dim} exceeds float64's range"
        )
    return math.exp(log_base)


def _blend(theta: torch.Tensor, factor: float, keep: torch.Tensor) -> torch.Tensor:
    """(1 - keep) * theta / factor + keep * theta: per pair, interpolation (0) to extrapolation (1)."""
    return (1.0 - keep) * (theta / factor) + keep * theta


def _turns(theta: torch.Tensor, length: int) -> torch.Tensor:
    """r_i = length / lambda_i: how many full turns pair i makes within ``length`` positions."""
    return length * theta / (2 * math.pi)


#: How to give the model's ``max_position_embeddings``, for messages: every function that takes
#: ``scaling=`` takes a checked entry, and only ``resolve_scaling`` and ``rope_frequencies`` take
#: the length itself.
_GIVE_MAX_POSITION_EMBEDDINGS = (
    "pass scaling=pe_lib.rope.scaling.resolve_scaling(entry, max_position_embeddings=...) "
    "(rope_frequencies and resolve_scaling also take max_position_embeddings=... themselves)"
)


def _need_max_position_embeddings(rope_type: str, why: str) -> ValueError:
    return ValueError(
        f"rope_type {rope_type!r} needs the model's max_position_embeddings ({why}), which a "
        f"config.json keeps outside the rope entry, got none: {_GIVE_MAX_POSITION_EMBEDDINGS}"
    )


# --- the methods ------------------------------------------------------------------------------


def _default(
    head_dim: int,
    base: float,
    params: Mapping[str, Any],
    seq_len: float | None,
    device: torch.device | None = None,
) -> tuple[torch.Tensor, float]:
    return _plain(_rotary_dim(head_dim, params, "default"), base, device), 1.0


def _linear(
    head_dim: int,
    base: float,
    params: Mapping[str, Any],
    seq_len: float | None,
    device: torch.device | None = None,
) -> tuple[torch.Tensor, float]:
    return _plain(_rotary_dim(head_dim, params, "linear"), base, device) / params["factor"], 1.0


def _ntk(
    head_dim: int,
    base: float,
    params: Mapping[str, Any],
    seq_len: float | None,
    device: torch.device | None = None,
) -> tuple[torch.Tensor, float]:
    dim = _rotary_dim(head_dim, params, "ntk")
    return _plain(dim, _ntk_base(base, params["factor"], dim), device), 1.0


def _prepare_dynamic(params: dict[str, Any], max_position_embeddings: int | None) -> None:
    if max_position_embeddings is None:
        raise _need_max_position_embeddings(
            "dynamic", "the length up to which it is plain RoPE, L in factor * seq_len / L"
        )
    params["original_max_position_embeddings"] = max_position_embeddings


def _dynamic(
    head_dim: int,
    base: float,
    params: Mapping[str, Any],
    seq_len: float | None,
    device: torch.device | None = None,
) -> tuple[torch.Tensor, float]:
    factor, original = params["factor"], params["original_max_position_embeddings"]
    length = max(seq_len or 0, original)  # rope_frequencies requires seq_len (needs_seq_len)
    alpha = factor * length / original - (factor - 1.0)
    dim = _rotary_dim(head_dim, params, "dynamic")
    return _plain(dim, _ntk_base(base, alpha, dim), device), 1.0


def yarn_pair_index(turns: float, dim: int, base: float, original: int) -> float:
    """The (fractional) pair index i at which r_i = L / lambda_i equals ``turns``."""
    return dim * math.log(original / (turns * 2 * math.pi)) / (2 * math.log(base))


def _yarn_mscale(factor: float, mscale: float) -> float:
    """0.1 * mscale * ln(factor) + 1 (YaRN's sqrt(1/t) for mscale = 1), 1 for factor <= 1."""
    return 1.0 if factor <= 1.0 else 0.1 * mscale * math.log(factor) + 1.0


def _check_order(params: Mapping[str, Any], lower: str, upper: str, strict: bool, why: str) -> None:
    """``params[lower]`` below (``strict``) or at most ``params[upper]``; ``why`` explains it."""
    low, high = params[lower], params[upper]
    if low >= high if strict else low > high:
        relation = "below" if strict else "at most"
        raise ValueError(
            f"scaling[{lower!r}] must be {relation} scaling[{upper!r}]{why}, got {lower}={low!r} "
            f"and {upper}={high!r}"
        )


def _prepare_yarn(params: dict[str, Any], max_position_embeddings: int | None) -> None:
    why = (
        " (pairs turning more than beta_fast times are kept, fewer than beta_slow times "
        "interpolated)"
    )
    _check_order(params, "beta_slow", "beta_fast", True, why)


def _yarn(
    head_dim: int,
    base: float,
    params: Mapping[str, Any],
    seq_len: float | None,
    device: torch.device | None = None,
) -> tuple[torch.Tensor, float]:
    factor, original = params["factor"], params["original_max_position_embeddings"]
    dim = _rotary_dim(head_dim, params, "yarn")
    first = yarn_pair_index(params["beta_fast"], dim, base, original)  # up to here: kept
    last = yarn_pair_index(params["beta_slow"], dim, base, original)  # from here: interpolated
    if params["truncate"]:
        first, last = math.floor(first), math.ceil(last)
    if params["clamp_ramp"]:
        first, last = max(first, 0), min(last, dim - 1)
    if first == last:
        last += 0.001  # as the reference code: a ramp of (almost) no width
    pair_index = torch.arange(dim // 2, dtype=torch.float64, device=device)
    keep = 1.0 - ((pair_index - first) / (last - first)).clamp(0.0, 1.0)
    theta = _blend(_plain(dim, base, device), factor, keep)

    attention_factor = params["attention_factor"]
    if attention_factor is None:
        mscale, mscale_all_dim = params["mscale"], params["mscale_all_dim"]
        if mscale and mscale_all_dim:  # both given and non-zero, as Hugging Face tests them
            attention_factor = _yarn_mscale(factor, mscale) / _yarn_mscale(factor, mscale_all_dim)
        else:
            attention_factor = _yarn_mscale(factor, 1.0)
    return theta, attention_factor


def _prepare_longrope(params: dict[str, Any], max_position_embeddings: int | None) -> None:
    if params["factor"] is None:
        if max_position_embeddings is None:
            raise _need_max_position_embeddings(
                "longrope",
                "without 'factor' in the entry, the factor is max_position_embeddings / "
                "original_max_position_embeddings",
            )
        params["factor"] = max_position_embeddings / params["original_max_position_embeddings"]
    if (
        params["attention_factor"] is None
        and params["factor"] > 1.0
        and params["original_max_position_embeddings"] < 2
    ):
        raise ValueError(
            f"scaling['original_max_position_embeddings'] must be at least 2 for a 'longrope' "
            f"entry without 'attention_factor' (its attention factor sqrt(1 + ln factor / ln L) "
            f"divides by ln L, 0 at L = 1), got "
            f"{params['original_max_position_embeddings']}; give 'attention_factor', or the "
            f"model's training length"
        )


def _longrope(
    head_dim: int,
    base: float,
    params: Mapping[str, Any],
    seq_len: float | None,
    device: torch.device | None = None,
) -> tuple[torch.Tensor, float]:
    dim = _rotary_dim(head_dim, params, "longrope")
    original, factor = params["original_max_position_embeddings"], params["factor"]
    for key in ("short_factor", "long_factor"):
        if len(params[key]) != dim // 2:
            raise ValueError(
                f"scaling[{key!r}] must hold one divisor per rotated pair, {dim // 2} for "
                f"head_dim {head_dim} (rotary_dim {dim}), got {len(params[key])}"
            )
    key = "long_factor" if seq_len is not None and seq_len > original else "short_factor"
    divisors = torch.tensor(params[key], dtype=torch.float64, device=device)
    attention_factor = params["attention_factor"]
    if attention_factor is None:
        attention_factor = (
            1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
        )
    return _plain(dim, base, device) / divisors, attention_factor


def _prepare_llama3(params: dict[str, Any], max_position_embeddings: int | None) -> None:
    _check_order(params, "low_freq_factor", "high_freq_factor", False, "")


def _llama3(
    head_dim: int,
    base: float,
    params: Mapping[str, Any],
    seq_len: float | None,
    device: torch.device | None = None,
) -> tuple[torch.Tensor, float]:
    low, high = params["low_freq_factor"], params["high_freq_factor"]
    theta = _plain(_rotary_dim(head_dim, params, "llama3"), base, device)
    turns = _turns(theta, params["original_max_position_embeddings"])
    if low == high:  # Llama 4 Scout: a step, kept from r = low_freq_factor up
        keep = (turns >= low).to(theta.dtype)
    else:
        keep = ((turns - low) / (high - low)).clamp(0.0, 1.0)
    return _blend(theta, params["factor"], keep), 1.0


def _proportional(
    head_dim: int,
    base: float,
    params: Mapping[str, Any],
    seq_len: float | None,
    device: torch.device | None = None,
) -> tuple[torch.Tensor, float]:
    rotated = int(params.get("partial_rotary_factor", 1.0) * head_dim // 2)
    theta = torch.zeros(head_dim // 2, dtype=torch.float64, device=device)
    theta[:rotated] = _plain(head_dim, base, device)[:rotated]
    return theta / params["factor"], 1.0


def _hf(function: str) -> str:
    return f"the numbers of transformers 5.23's {function} (modeling_rope_utils.py)"


_FACTOR = {"factor": Key(_factor)}
_ORIGINAL = {"original_max_position_embeddings": Key(_length)}

#: Every scaling by its ``rope_type``, each a :class:`RopeScaling`; a new scaling is one entry here.
ROPE_SCALINGS: dict[str, RopeScaling] = {
    "default": RopeScaling(
        _default, forms_on_device=True, reference="RoFormer's theta_i = base ** (-2i / d)"
    ),
    "linear": RopeScaling(
        _linear,
        forms_on_device=True,
        keys=_FACTOR,
        reference=_hf("_compute_linear_scaling_rope_parameters"),
    ),
    "ntk": RopeScaling(
        _ntk,
        forms_on_device=True,
        keys=_FACTOR,
        min_rotary_dim=4,
        reference="pe_lib's own static NTK base change, b * factor ** (d / (d - 2))",
    ),
    "dynamic": RopeScaling(
        _dynamic,
        forms_on_device=True,
        keys=_FACTOR,
        prepare=_prepare_dynamic,
        needs_seq_len=True,
        min_rotary_dim=4,
        reference=_hf("_compute_dynamic_ntk_parameters"),
        refused={
            "original_max_position_embeddings": (
                "Hugging Face's dynamic NTK never reads 'original_max_position_embeddings'; it "
                "uses the model's max_position_embeddings: " + _GIVE_MAX_POSITION_EMBEDDINGS
            )
        },
    ),
    "yarn": RopeScaling(
        _yarn,
        forms_on_device=True,
        keys={
            **_FACTOR,
            **_ORIGINAL,
            "beta_fast": Key(_positive, 32.0),
            "beta_slow": Key(_positive, 1.0),
            "attention_factor": Key(_positive, None),
            "mscale": Key(_nonnegative, None),
            "mscale_all_dim": Key(_nonnegative, None),
            "truncate": Key(_flag, True, none_is=False),
            "clamp_ramp": Key(_flag, True),
        },
        prepare=_prepare_yarn,
        reference=_hf("_compute_yarn_parameters"),
    ),
    "longrope": RopeScaling(
        _longrope,
        forms_on_device=True,
        keys={
            "short_factor": Key(_factor_list),
            "long_factor": Key(_factor_list),
            **_ORIGINAL,
            "factor": Key(_factor, None),
            "attention_factor": Key(_positive, None),
        },
        prepare=_prepare_longrope,
        needs_seq_len=True,
        reference=_hf("_compute_longrope_parameters"),
    ),
    "llama3": RopeScaling(
        _llama3,
        forms_on_device=True,
        keys={
            **_FACTOR,
            "low_freq_factor": Key(_positive),
            "high_freq_factor": Key(_positive),
            **_ORIGINAL,
        },
        prepare=_prepare_llama3,
        reference=_hf("_compute_llama3_parameters"),
    ),
    "proportional": RopeScaling(
        _proportional,
        forms_on_device=True,
        keys={"factor": Key(_factor, 1.0)},
        full_width=True,
        reference=_hf("_compute_proportional_rope_parameters"),
    ),
}

#: Older names of a method, read as the method (Phi-3's first configs wrote LongRoPE as "su").
_OLDER_NAMES = {"su": "longrope"}

# --- reading a config.json entry --------------------------------------------------------------

_NAME_KEYS = ("rope_type", "type")
_COMMON_KEYS = (*_NAME_KEYS, "rope_theta", "partial_rotary_factor")


def _per_layer(scaling: Mapping[str, Any]) -> bool:
    """Whether ``scaling`` holds one entry per layer type: no key of an entry, every value an
    entry or ``None`` (a layer type without rotary embedding), at least one an entry."""
    values = list(scaling.values())
    return (
        not any(key in scaling for key in _COMMON_KEYS)
        and any(isinstance(value, Mapping) for value in values)
        and all(value is None or isinstance(value, Mapping) for value in values)
    )


def _layer_entry(scaling: Mapping[str, Any], layer_type: str | None) -> Mapping[str, Any]:
    """The entry of one layer type, when ``scaling`` holds one per layer type.

    A layer type whose entry is ``None`` has no rotary embedding (transformers 5.23 accepts
    such per-layer ``rope_parameters``: Llama 4's and SmolLM3's NoPE layers, Cohere 2's
    full-attention layers); asking for it raises ``ValueError`` saying so.
    """
    per_layer = _per_layer(scaling)
    if not per_layer:
        if layer_type is not None:
            raise ValueError(
                f"layer_type is for rope_parameters with one entry per layer type, such as "
                f"Gemma 3's {{'full_attention': ..., 'sliding_attention': ...}}; this scaling "
                f"is one entry, so pass layer_type=None, got layer_type={layer_type!r}"
            )
        return scaling
    types = ", ".join(map(repr, scaling))
    if layer_type is None:
        raise ValueError(
            f"scaling holds one entry per layer type ({types}): choose one with layer_type=..."
        )
    if layer_type not in scaling:
        raise ValueError(f"layer_type must be one of {types}, got {layer_type!r}")
    entry: Mapping[str, Any] | None = scaling[layer_type]
    if entry is None:
        rotary = ", ".join(repr(name) for name, value in scaling.items() if value is not None)
        raise ValueError(
            f"layer_type={layer_type!r} has no rotary embedding: its entry in the per-layer "
            f"scaling is None (a layer without RoPE, as Llama 4's and SmolLM3's NoPE layers): "
            f"do not rotate its queries and keys; the layer types with RoPE are {rotary}"
        )
    return entry


def _newer_name(name: object) -> object:
    """The method an older name stands for (``"su"`` -> ``"longrope"``), other values as given."""
    return _OLDER_NAMES.get(name, name) if isinstance(name, str) else name


def _rope_type(scaling: Mapping[str, Any]) -> str:
    names = {key: scaling[key] for key in _NAME_KEYS if key in scaling}
    if not names:
        raise ValueError(
            f"scaling must name its method under 'rope_type' (or the older 'type'), one of "
            f"{', '.join(map(repr, ROPE_SCALINGS))}; got keys {sorted(map(str, scaling))}"
        )
    if len({repr(_newer_name(name)) for name in names.values()}) > 1:
        raise ValueError(
            f"scaling['rope_type'] and scaling['type'] name the same thing and must agree, got "
            f"rope_type={names['rope_type']!r} and type={names['type']!r}"
        )
    key, rope_type = next(iter(names.items()))
    rope_type = _newer_name(rope_type)
    if not isinstance(rope_type, str) or rope_type not in ROPE_SCALINGS:
        raise ValueError(
            f"scaling[{key!r}] must be one of {', '.join(map(repr, ROPE_SCALINGS))} (or "
            f"{', '.join(map(repr, _OLDER_NAMES))}); add a new method to "
            f"pe_lib.rope.scaling.ROPE_SCALINGS; got {names[key]!r}"
        )
    return rope_type


def resolve_scaling(
    scaling: Mapping[str, Any] | ScalingConfig | None,
    base: float | None = None,
    *,
    max_position_embeddings: int | None = None,
    layer_type: str | None = None,
) -> ScalingConfig:
    """Check a model's rope entry (``config.json`` ``rope_scaling`` or ``rope_parameters``).

    Args:
        scaling: ``None`` (plain RoPE) or a mapping with ``"rope_type"`` (or the older ``"type"``),
            optional ``"rope_theta"`` and ``"partial_rotary_factor"``, and the keys of that
            method (see the module docstring); ``None`` values mean absent. Or a mapping of
            layer types to such entries (transformers 5's per-layer ``rope_parameters``). A
            :class:`ScalingConfig` (already checked) is returned as it is.
        base: the frequency base, > 1; ``None`` means ``scaling["rope_theta"]``. An entry
            without ``rope_theta`` then raises ``ValueError``: a ``config.json`` keeps the base
            outside ``rope_scaling``, at its top level (Llama 3.1's 500000), and RoFormer's
            10000 in its place would give other frequencies without a word. Only plain RoPE
            (``scaling=None``, or ``rope_type`` ``"default"``) takes
            :data:`~pe_lib.encodings.sinusoidal.DEFAULT_BASE`. If both are given they must be equal.
        max_position_embeddings: the model's ``max_position_embeddings`` (outside the rope
            entry): required by ``"dynamic"``, and by ``"longrope"`` when the entry has no
            ``factor``; unused by the others.
        layer_type: which layer type's entry to use, when ``scaling`` holds one per layer type.

    Returns:
        the method, the base and the parameters with defaults filled in.

    Raises:
        TypeError: ``scaling`` is not a mapping, or a value has the wrong type.
        ValueError: the method is unknown, a required key or argument is missing, a key is
            unknown, a value is out of range, or ``rope_theta`` disagrees with ``base``; the
            message names the key and what to pass.
    """
    if base is not None:
        base = check_base("base", base)
    if max_position_embeddings is not None:
        max_position_embeddings = check_positive_int(
            "max_position_embeddings", max_position_embeddings
        )
    if isinstance(scaling, ScalingConfig):  # already checked, e.g. RotaryEmbedding.scaling
        if base is not None and base != scaling.base:
            raise ValueError(
                f"scaling holds the base {scaling.base!r}, which must agree with base, got "
                f"base={base!r}"
            )
        return scaling
    if scaling is None:
        return ScalingConfig("default", DEFAULT_BASE if base is None else base, {})
    if not isinstance(scaling, Mapping):
        raise TypeError(
            f"scaling must be None or a mapping such as a config.json 'rope_scaling' entry, "
            f"got {type(scaling).__name__}"
        )
    scaling = _layer_entry(scaling, layer_type)
    rope_type = _rope_type(scaling)
    entry = ROPE_SCALINGS[rope_type]

    if scaling.get("rope_theta") is not None:
        theta = check_base("scaling['rope_theta']", scaling["rope_theta"])
        if base is not None and theta != base:
            raise ValueError(
                f"scaling['rope_theta'] is the frequency base and must agree with base, got "
                f"rope_theta={theta!r} and base={base!r}"
            )
        base = theta
    elif base is None and rope_type != "default":
        raise ValueError(
            f"scaling (rope_type {rope_type!r}) has no 'rope_theta' and base is None: give the "
            f"model's frequency base as base=... or as scaling['rope_theta'] (a config.json "
            f"keeps it outside 'rope_scaling', at its top level: 500000.0 for Llama 3.1); "
            f"only plain RoPE (scaling=None or rope_type 'default') takes RoFormer's "
            f"{DEFAULT_BASE:g} by default"
        )
    unknown = [str(k) for k in scaling if k not in entry.keys and k not in _COMMON_KEYS]
    if unknown:
        keys = ", ".join(map(repr, entry.keys))
        hint = "".join(f" {entry.refused[key]}" for key in unknown if key in entry.refused)
        raise ValueError(
            f"scaling has unknown key(s) {', '.join(map(repr, unknown))} for rope_type "
            f"{rope_type!r}, whose keys are: {keys or 'none'} (plus 'rope_type'/'type', "
            f"'rope_theta' and 'partial_rotary_factor'); remove them.{hint}"
        )
    params: dict[str, Any] = {}
    if scaling.get("partial_rotary_factor") is not None:
        params["partial_rotary_factor"] = _fraction(
            "scaling['partial_rotary_factor']", scaling["partial_rotary_factor"]
        )
    for name, key in entry.keys.items():
        value = scaling.get(name)
        if value is None and key.required:
            raise ValueError(
                f"scaling is missing the key {name!r}, required for rope_type {rope_type!r} "
                f"(required: {', '.join(map(repr, entry.required))}); add it to the entry"
            )
        if value is None:
            null = name in scaling and key.none_is is not None  # written null, not left out
            params[name] = key.none_is if null else key.default
        else:
            params[name] = key.check(f"scaling[{name!r}]", value)
    if entry.prepare is not None:
        entry.prepare(params, max_position_embeddings)
    return ScalingConfig(rope_type, DEFAULT_BASE if base is None else base, params)


def rope_frequencies(
    head_dim: int,
    *,
    base: float | None = None,
    scaling: Mapping[str, Any] | ScalingConfig | None = None,
    seq_len: int | None = None,
    max_position_embeddings: int | None = None,
    layer_type: str | None = None,
) -> tuple[torch.Tensor, float]:
    r"""The inverse frequencies :math:`\theta'_i` of RoPE under a scaling, and its attention factor.

    Args:
        head_dim: size of each attention head's query and key vectors, even.
        base: frequency base ``b`` > 1; ``None`` means ``scaling["rope_theta"]``, required in
            an entry (a ``ValueError`` names both when neither is given) but for plain RoPE
            (``scaling=None`` or ``"default"``), which takes
            :data:`~pe_lib.encodings.sinusoidal.DEFAULT_BASE` (RoFormer's 10000). If both are given they
            must agree.
        scaling: ``None`` (plain RoPE) or a model's entry as its ``config.json`` writes it, e.g.
            Llama 3.1's ``{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}`` with
            ``base=500000.0`` (its ``rope_theta``, which that ``config.json`` keeps at its top
            level), or transformers 5's ``rope_parameters`` (``rope_theta`` inside). See the
            module docstring.
        seq_len: the current sequence length; required by ``"dynamic"`` and ``"longrope"``.
        max_position_embeddings: the model's ``max_position_embeddings``; required by
            ``"dynamic"`` and by a ``"longrope"`` entry without ``factor``.
        layer_type: the layer type, for per-layer-type ``rope_parameters`` (Gemma 3).

    Returns:
        ``(inverse_frequencies, attention_factor)``: a float64 CPU tensor of shape
        ``(rotary_dim // 2,)`` (``rotary_dim = int(head_dim * partial_rotary_factor)``;
        ``head_dim // 2`` for ``"proportional"``; pair ``i`` at position ``m`` turns by
        ``m * theta'_i``) and the float by which cos and sin are multiplied.

    Raises:
        TypeError, ValueError: as :func:`pe_lib.rope.scaling.resolve_scaling`; ``ValueError``
            also for a missing ``seq_len`` where the method needs it.
    """
    head_dim = check_head_dim("head_dim", head_dim)
    config = resolve_scaling(
        scaling, base, max_position_embeddings=max_position_embeddings, layer_type=layer_type
    )
    if seq_len is not None:
        seq_len = check_positive_int("seq_len", seq_len)
    return config.frequencies(head_dim, seq_len)


def length_for(
    config: ScalingConfig, positions: torch.Tensor, seq_len: object, caller: str
) -> float | None:
    """The sequence length a scaling whose frequencies depend on it uses (else ``None``).

    A given ``seq_len`` is checked whatever the scaling (as :class:`~pe_lib.rope.RotaryEmbedding`
    checks its own): an int >= 1, at least the last position + 1. Default: the last position + 1,
    as transformers' ``max(position_ids) + 1`` (``dynamic_rope_update``,
    ``modeling_rope_utils.py``): fractional for fractional positions (``[0.0, 511.5]`` gives
    512.5, beyond a LongRoPE ``L`` of 512), 1 when there are none. Both read the positions'
    values, which neither a compiled graph nor a ``meta`` tensor holds: there, these scalings
    need ``seq_len``, and a given ``seq_len`` is trusted.
    """
    needs = config.entry.needs_seq_len
    if seq_len is None and not needs:
        return None
    if seq_len is not None:
        seq_len = check_positive_int("seq_len", seq_len)
    pitfall = f"{config.rope_type!r} scaling's frequencies depend on the sequence length"
    if torch.compiler.is_compiling() or positions.device.type == "meta":
        if needs and seq_len is None:
            where = (
                "on the meta device" if positions.device.type == "meta" else "under torch.compile"
            )
            raise ValueError(
                f"{caller} {where} needs seq_len=: {pitfall}, and the default (the last "
                f"position + 1) reads the positions' values, which are not there"
            )
        return seq_len if needs else None
    last: float = positions.max().item() + 1 if positions.numel() else 1
    if float(last).is_integer():
        last = int(last)
    if seq_len is not None and seq_len < last:
        raise ValueError(
            f"seq_len must be at least the last position + 1 = {last} (the length the positions "
            f"span; {pitfall} where a scaling reads it), got seq_len={seq_len}"
        )
    if not needs:
        return None
    return last if seq_len is None else seq_len
