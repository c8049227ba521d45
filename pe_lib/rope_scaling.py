r"""RoPE frequency scalings for context extension: one registry, one contract.

Plain RoPE (:mod:`pe_lib.rope`) rotates channel pair ``i`` by :math:`m\,\theta_i` with
:math:`\theta_i = b^{-2i/d}` (base ``b``, ``d = head_dim``). Pair ``i`` completes a turn every
:math:`\lambda_i = 2\pi/\theta_i` positions, so within a training length ``L`` it turns
:math:`r_i = L/\lambda_i` times. Pairs with :math:`r_i \gg 1` have seen every angle during training;
pairs with :math:`r_i < 1` have not, and at positions beyond ``L`` they produce angles the model
never saw. Each scaling below changes the :math:`\theta_i` (and possibly the size of the rotated
vectors) so that a model trained at length ``L`` can be run at ``factor * L``.

Contract. A scaling is one :class:`RopeScaling` entry of :data:`ROPE_SCALINGS`, whose ``compute``
function takes ``(head_dim, base, params, seq_len)`` and returns ``(inverse_frequencies,
attention_factor)``: the :math:`\theta'_i` as a float64 tensor of shape ``(head_dim // 2,)`` and a
float by which cos and sin are multiplied (1.0 where the method has none). This is the contract of
Hugging Face's ``ROPE_INIT_FUNCTIONS`` (``transformers/modeling_rope_utils.py``), and ``params`` is a
model's ``config.json`` ``rope_scaling`` entry as it is: the method under ``"rope_type"`` (or the
older ``"type"``), an optional ``"rope_theta"``, and the method's own keys. The methods are built by
composition from three pieces: the plain frequencies, the NTK-aware base change, and a per-pair
blend between extrapolation (:math:`\theta_i` kept) and interpolation (:math:`\theta_i/s`).

With ``s = factor``:

* ``"default"``: :math:`\theta'_i = \theta_i`.
* ``"linear"``, position interpolation (Chen et al., 2023, arXiv:2306.15595):
  :math:`\theta'_i = \theta_i / s`, the same as rotating position ``m`` by the angle of ``m / s``.
* ``"ntk"``, NTK-aware base change (bloc97, 2023, as Hugging Face writes it, the base change of
  its dynamic NTK with the ratio fixed at ``s``): :math:`b' = b\,s^{d/(d-2)}`, so the fastest
  pair keeps :math:`\theta_0 = 1` and the slowest pair is interpolated by exactly ``s``.
* ``"dynamic"``, dynamic NTK (emozilla, 2023; Hugging Face's ``_compute_dynamic_ntk_parameters``):
  the NTK base change with :math:`\alpha = s\,\ell/L - (s - 1)`, :math:`\ell = \max(\texttt{seq\_len},
  L)`, so nothing changes up to ``L`` and the scaling grows with the current length.
* ``"yarn"`` (Peng et al., 2023, arXiv:2309.00071: "NTK-by-parts" interpolation and an attention
  temperature):
  :math:`\theta'_i = (1 - \gamma_i)\,\theta_i/s + \gamma_i\,\theta_i`, where the extrapolation weight
  :math:`\gamma_i` is 1 for pairs that turn more than ``beta_fast`` times within ``L`` (kept), 0 for
  pairs that turn fewer than ``beta_slow`` times (interpolated by ``s``), and linear in the pair index
  in between, as in the paper's reference code (github.com/jquesnelle/yarn) and Hugging Face's
  ``_compute_yarn_parameters`` (the paper writes the ramp as linear in :math:`r`; the two
  agree outside the ramp). With ``truncate`` (the default) the ramp's ends are rounded outwards to
  whole pair indices. The reference code also clamps the ends to ``[0, d - 1]``: that changes
  nothing when they lie in that range, as for every published config (it needs
  :math:`L \ge 2\pi\,\texttt{beta\_fast}`), and for a short ``L`` it would break the rule above
  (keeping pair 0 when it turns fewer than ``beta_slow`` times), so it is not done here.
  The attention factor is the paper's :math:`\sqrt{1/t} = 0.1 \ln s + 1`, or
  ``attention_factor`` if given, or DeepSeek-V2's
  :math:`(0.1\,\mathrm{mscale}\ln s + 1)/(0.1\,\mathrm{mscale\_all\_dim}\ln s + 1)` when ``mscale``
  or ``mscale_all_dim`` is given (defaults 1 and 0, as in DeepSeek's ``yarn_get_mscale``).
* ``"llama3"`` (Meta's Llama 3.1 reference code, ``apply_scaling`` in
  github.com/meta-llama/llama-models): with :math:`r_i = L/\lambda_i`, pairs with
  :math:`r_i > \texttt{high\_freq\_factor}` are kept, pairs with :math:`r_i <
  \texttt{low\_freq\_factor}` are interpolated by ``s``, and in between
  :math:`\theta'_i = (1-\gamma_i)\,\theta_i/s + \gamma_i\,\theta_i` with
  :math:`\gamma_i = (r_i - \texttt{low\_freq\_factor})/(\texttt{high\_freq\_factor} -
  \texttt{low\_freq\_factor})`: YaRN's ramp written linear in :math:`r`, with no attention factor.

``L`` is ``original_max_position_embeddings`` wherever a method uses it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from ._validation import (
    check_base,
    check_bool,
    check_head_dim,
    check_positive_int,
    check_real,
)
from .sinusoidal import DEFAULT_BASE, angular_frequencies

__all__ = [
    "DEFAULT_BASE",
    "ROPE_SCALINGS",
    "RopeScaling",
    "ScalingConfig",
    "frequencies_of",
    "resolve_scaling",
    "rope_frequencies",
]

#: ``compute(head_dim, base, params, seq_len) -> (inverse frequencies, attention factor)``.
ScalingFunction = Callable[
    [int, float, Mapping[str, Any], "int | None"], tuple[torch.Tensor, float]
]


@dataclass(frozen=True)
class RopeScaling:
    """One entry of :data:`ROPE_SCALINGS`.

    Attributes:
        compute: ``(head_dim, base, params, seq_len) -> (inverse_frequencies, attention_factor)``,
            inverse frequencies float64 of shape ``(head_dim // 2,)``; ``params`` holds every key
            of ``required`` and ``optional`` (defaults filled in), already checked.
        required: the method's ``config.json`` keys that must be present.
        optional: the keys that may be present, each with its default (``None``: absent).
        needs_seq_len: whether the frequencies depend on the current sequence length.
        min_head_dim: the smallest ``head_dim`` the formula is defined for.
    """

    compute: ScalingFunction
    required: tuple[str, ...] = ()
    optional: Mapping[str, object] = field(default_factory=dict)
    needs_seq_len: bool = False
    min_head_dim: int = 2


@dataclass(frozen=True)
class ScalingConfig:
    """A checked ``rope_scaling`` mapping: its method, its base and its parameters (defaults filled)."""

    rope_type: str
    base: float
    params: Mapping[str, Any]

    @property
    def entry(self) -> RopeScaling:
        """The registry entry of ``rope_type``."""
        return ROPE_SCALINGS[self.rope_type]


# --- the pieces the methods are composed of ---------------------------------------------------


def _plain(head_dim: int, base: float) -> torch.Tensor:
    """theta_i = base ** (-2i / head_dim), float64, shape (head_dim // 2,)."""
    return angular_frequencies(head_dim, base)


def _ntk_base(base: float, alpha: float, head_dim: int) -> float:
    """The NTK-aware base b * alpha ** (d / (d - 2)): theta_0 stays 1, theta_{d/2-1} is divided by alpha."""
    return base * float(alpha ** (head_dim / (head_dim - 2)))


def _blend(theta: torch.Tensor, factor: float, keep: torch.Tensor) -> torch.Tensor:
    """(1 - keep) * theta / factor + keep * theta: per pair, interpolation (keep = 0) to extrapolation (1)."""
    return (1.0 - keep) * (theta / factor) + keep * theta


def _ramp(values: torch.Tensor, low: float, high: float) -> torch.Tensor:
    """clamp((values - low) / (high - low), 0, 1), float64."""
    return ((values - low) / (high - low)).clamp(0.0, 1.0)


def _turns(theta: torch.Tensor, length: int) -> torch.Tensor:
    """r_i = length / lambda_i: how many full turns pair i makes within ``length`` positions."""
    return length * theta / (2 * math.pi)


# --- the methods ------------------------------------------------------------------------------


def _default(
    head_dim: int, base: float, params: Mapping[str, Any], seq_len: int | None
) -> tuple[torch.Tensor, float]:
    return _plain(head_dim, base), 1.0


def _linear(
    head_dim: int, base: float, params: Mapping[str, Any], seq_len: int | None
) -> tuple[torch.Tensor, float]:
    return _plain(head_dim, base) / params["factor"], 1.0


def _ntk(
    head_dim: int, base: float, params: Mapping[str, Any], seq_len: int | None
) -> tuple[torch.Tensor, float]:
    return _plain(head_dim, _ntk_base(base, params["factor"], head_dim)), 1.0


def _dynamic(
    head_dim: int, base: float, params: Mapping[str, Any], seq_len: int | None
) -> tuple[torch.Tensor, float]:
    factor, original = params["factor"], params["original_max_position_embeddings"]
    length = max(seq_len or 0, original)  # rope_frequencies requires seq_len (needs_seq_len)
    alpha = factor * length / original - (factor - 1.0)
    return _plain(head_dim, _ntk_base(base, alpha, head_dim)), 1.0


def _yarn_pair_index(turns: float, head_dim: int, base: float, original: int) -> float:
    """The (fractional) pair index i at which r_i = L / lambda_i equals ``turns``."""
    return head_dim * math.log(original / (turns * 2 * math.pi)) / (2 * math.log(base))


def _yarn_mscale(factor: float, mscale: float) -> float:
    """0.1 * mscale * ln(factor) + 1 (YaRN's sqrt(1/t) for mscale = 1), 1 for factor <= 1."""
    return 1.0 if factor <= 1.0 else 0.1 * mscale * math.log(factor) + 1.0


def _yarn(
    head_dim: int, base: float, params: Mapping[str, Any], seq_len: int | None
) -> tuple[torch.Tensor, float]:
    factor, original = params["factor"], params["original_max_position_embeddings"]
    beta_fast, beta_slow = params["beta_fast"], params["beta_slow"]
    if beta_slow >= beta_fast:
        raise ValueError(
            f"scaling['beta_slow'] must be below scaling['beta_fast'] (pairs turning more than "
            f"beta_fast times are kept, fewer than beta_slow times interpolated), got "
            f"beta_slow={beta_slow!r} and beta_fast={beta_fast!r}"
        )
    first = _yarn_pair_index(beta_fast, head_dim, base, original)  # pairs up to here: kept
    last = _yarn_pair_index(beta_slow, head_dim, base, original)  # from here on: interpolated
    if params["truncate"]:
        first, last = math.floor(first), math.ceil(last)  # still first < last
    pair_index = torch.arange(head_dim // 2, dtype=torch.float64)
    keep = 1.0 - _ramp(pair_index, first, last)
    theta = _blend(_plain(head_dim, base), factor, keep)

    attention_factor = params["attention_factor"]
    mscale, mscale_all_dim = params["mscale"], params["mscale_all_dim"]
    if attention_factor is not None and (mscale is not None or mscale_all_dim is not None):
        raise ValueError(
            "scaling must give either 'attention_factor' or 'mscale'/'mscale_all_dim' (from which "
            f"the attention factor is computed), not both; got attention_factor="
            f"{attention_factor!r}, mscale={mscale!r}, mscale_all_dim={mscale_all_dim!r}"
        )
    if attention_factor is None:
        attention_factor = _yarn_mscale(factor, 1.0 if mscale is None else mscale) / _yarn_mscale(
            factor, 0.0 if mscale_all_dim is None else mscale_all_dim
        )
    return theta, attention_factor


def _llama3(
    head_dim: int, base: float, params: Mapping[str, Any], seq_len: int | None
) -> tuple[torch.Tensor, float]:
    low, high = params["low_freq_factor"], params["high_freq_factor"]
    if low >= high:
        raise ValueError(
            f"scaling['low_freq_factor'] must be below scaling['high_freq_factor'], got "
            f"low_freq_factor={low!r} and high_freq_factor={high!r}"
        )
    theta = _plain(head_dim, base)
    keep = _ramp(_turns(theta, params["original_max_position_embeddings"]), low, high)
    return _blend(theta, params["factor"], keep), 1.0


_FACTOR = ("factor",)
_ORIGINAL = ("original_max_position_embeddings",)

#: Every scaling by its ``rope_type``, each a :class:`RopeScaling`; a new scaling is one entry here.
ROPE_SCALINGS: dict[str, RopeScaling] = {
    "default": RopeScaling(_default),
    "linear": RopeScaling(_linear, required=_FACTOR),
    "ntk": RopeScaling(_ntk, required=_FACTOR, min_head_dim=4),
    "dynamic": RopeScaling(
        _dynamic, required=_FACTOR + _ORIGINAL, needs_seq_len=True, min_head_dim=4
    ),
    "yarn": RopeScaling(
        _yarn,
        required=_FACTOR + _ORIGINAL,
        optional={
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "attention_factor": None,
            "mscale": None,
            "mscale_all_dim": None,
            "truncate": True,
        },
    ),
    "llama3": RopeScaling(
        _llama3, required=_FACTOR + ("low_freq_factor", "high_freq_factor") + _ORIGINAL
    ),
}


# --- reading a config.json entry --------------------------------------------------------------


def _check_key(key: str, value: object) -> object:
    """Check the value of one ``rope_scaling`` key, by the key's meaning."""
    name = f"scaling[{key!r}]"
    if key == "factor":
        return check_real(name, value, at_least=1.0)
    if key == "original_max_position_embeddings":
        return check_positive_int(name, value)
    if key == "truncate":
        return check_bool(name, value)
    if key in ("mscale", "mscale_all_dim"):
        return check_real(name, value, at_least=0.0)
    return check_real(name, value, above=0.0)  # frequency factors, betas, attention_factor


_NAME_KEYS = ("rope_type", "type")


def resolve_scaling(
    scaling: Mapping[str, Any] | ScalingConfig | None, base: float | None = None
) -> ScalingConfig:
    """Check a ``rope_scaling`` mapping (as in a ``config.json``) against ``base``.

    Args:
        scaling: ``None`` (plain RoPE) or a mapping with ``"rope_type"`` (or the older ``"type"``),
            an optional ``"rope_theta"`` and exactly the keys of that method (see the module
            docstring); optional keys may be ``None`` (absent). A :class:`ScalingConfig`
            (already checked) is returned as it is.
        base: the frequency base, > 1; ``None`` means ``scaling["rope_theta"]`` if present, else
            10000. If both are given they must be equal.

    Returns:
        the method, the base and the parameters with defaults filled in.

    Raises:
        TypeError: ``scaling`` is not a mapping, or a value has the wrong type.
        ValueError: the method is unknown, a required key is missing, a key is unknown, a value is
            out of range (``factor < 1``, ``low_freq_factor >= high_freq_factor``, ...), or
            ``rope_theta`` disagrees with ``base``; the message names the key.
    """
    if base is not None:
        base = check_base(base)
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
    names = {key: scaling[key] for key in _NAME_KEYS if key in scaling}
    if not names:
        raise ValueError(
            f"scaling must name its method under 'rope_type' (or the older 'type'), one of "
            f"{', '.join(map(repr, ROPE_SCALINGS))}; got keys {sorted(map(str, scaling))}"
        )
    if len(set(map(repr, names.values()))) > 1:
        raise ValueError(
            f"scaling['rope_type'] and scaling['type'] name the same thing and must agree, got "
            f"rope_type={names['rope_type']!r} and type={names['type']!r}"
        )
    key, rope_type = next(iter(names.items()))
    if not isinstance(rope_type, str) or rope_type not in ROPE_SCALINGS:
        raise ValueError(
            f"scaling[{key!r}] must be one of {', '.join(map(repr, ROPE_SCALINGS))}, "
            f"got {rope_type!r}"
        )
    entry = ROPE_SCALINGS[rope_type]

    if "rope_theta" in scaling:
        theta = check_base(scaling["rope_theta"], "scaling['rope_theta']")
        if base is not None and theta != base:
            raise ValueError(
                f"scaling['rope_theta'] is the frequency base and must agree with base, got "
                f"rope_theta={theta!r} and base={base!r}"
            )
        base = theta
    allowed = set(entry.required) | set(entry.optional) | set(_NAME_KEYS) | {"rope_theta"}
    unknown = [str(k) for k in scaling if k not in allowed]
    if unknown:
        keys = ", ".join(map(repr, (*entry.required, *entry.optional)))
        raise ValueError(
            f"scaling has unknown key(s) {', '.join(map(repr, unknown))} for rope_type "
            f"{rope_type!r}, whose keys are: {keys or 'none'} (plus 'rope_type'/'type' and "
            f"'rope_theta')"
        )
    params: dict[str, Any] = {}
    for key in entry.required:
        if scaling.get(key) is None:
            raise ValueError(
                f"scaling is missing the key {key!r}, required for rope_type {rope_type!r} "
                f"(required: {', '.join(map(repr, entry.required))})"
            )
        params[key] = _check_key(key, scaling[key])
    for key, default in entry.optional.items():
        value = scaling.get(key)
        params[key] = default if value is None else _check_key(key, value)
    return ScalingConfig(rope_type, DEFAULT_BASE if base is None else base, params)


def frequencies_of(
    config: ScalingConfig, head_dim: int, seq_len: int | None = None
) -> tuple[torch.Tensor, float]:
    """:func:`rope_frequencies` for a config already checked by :func:`resolve_scaling`."""
    entry = config.entry
    if head_dim < entry.min_head_dim:
        raise ValueError(
            f"head_dim must be at least {entry.min_head_dim} for rope_type "
            f"{config.rope_type!r} (its base exponent is head_dim / (head_dim - 2)), got {head_dim}"
        )
    if seq_len is not None:
        seq_len = check_positive_int("seq_len", seq_len)
    elif entry.needs_seq_len:
        raise ValueError(
            f"seq_len is required for rope_type {config.rope_type!r}: its frequencies depend "
            f"on the current sequence length"
        )
    return entry.compute(head_dim, config.base, config.params, seq_len)


def rope_frequencies(
    head_dim: int,
    *,
    base: float | None = None,
    scaling: Mapping[str, Any] | ScalingConfig | None = None,
    seq_len: int | None = None,
) -> tuple[torch.Tensor, float]:
    r"""The inverse frequencies :math:`\theta'_i` of RoPE under a scaling, and its attention factor.

    Args:
        head_dim: size ``d`` of the rotated vectors, even (>= 4 for ``"ntk"`` and ``"dynamic"``).
        base: frequency base ``b`` > 1; ``None`` means ``scaling["rope_theta"]`` if present,
            else 10000 (RoFormer). If both are given they must agree.
        scaling: ``None`` (plain RoPE) or a ``config.json`` ``rope_scaling`` mapping, e.g.
            Llama 3.1's ``{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}``. See the
            module docstring for each method's keys and formula.
        seq_len: the current sequence length; required by ``"dynamic"``, unused by the others.

    Returns:
        ``(inverse_frequencies, attention_factor)``: a float64 CPU tensor of shape
        ``(head_dim // 2,)`` (pair ``i`` at position ``m`` turns by ``m * theta'_i``) and the float
        by which cos and sin are multiplied (1.0 except for ``"yarn"``).

    Raises:
        TypeError, ValueError: as :func:`pe_lib.rope_scaling.resolve_scaling`; ``ValueError``
            also for a missing ``seq_len`` where the method needs it.
    """
    head_dim = check_head_dim(head_dim)
    return frequencies_of(resolve_scaling(scaling, base), head_dim, seq_len)
