r"""``check_positional_encoding_module``: a module that adds the sinusoidal table, checked.

The module must map ``x`` of shape ``(batch, seq_len, d_model)`` to
``dropout(x + PE[:seq_len])`` (Vaswani et al., 2017, sections 3.5 and 5.4), for every
``seq_len`` up to the length it was built for. Computing positions beyond that length and
keeping the input's dtype are stronger properties, checked with ``strict=True`` and otherwise
returned as :class:`~pe_lib.checks.Note` s.
"""

from __future__ import annotations

import inspect
import math
import numbers
import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from .._validation import check_base, check_bool, check_positive_int
from ..encodings.sinusoidal import DEFAULT_BASE
from ._core import (
    ANGLE_ERROR_CAP,
    EPS32,
    EPS64,
    EXCEPTION,
    IN_PLACE,
    Case,
    Catalogue,
    CheckFailed,
    Diagnosis,
    Mistake,
    Note,
    angle_ulps,
    call_student,
    check_seed,
    diagnose,
    draw_cases,
    dtype_name,
    reference,
    text,
)
from .table import check_sinusoidal_table, precision_evidence

__all__ = ["check_positional_encoding_module"]

MISTAKES = Catalogue("check_positional_encoding_module")

_FIX_ADD = "return x + PE[:seq_len] (then dropout), with PE of shape (seq_len, d_model)."
_ON_THE_FLY = (
    "when seq_len > max_len, compute the missing rows from the formula on the fly "
    "(positions = torch.arange(seq_len), angles = positions[:, None] * omega[None, :], then "
    "sin and cos), or build the table for the length you are given: the sinusoidal formula "
    "holds for every position, which is its advantage over a learned table."
)

_CONSTRUCTOR = MISTAKES.declare(
    "exception",
    "Could not build {name}({d_model}) nor {name}(d_model={d_model}): {error}.",
    "give __init__ a first argument d_model and defaults for the others (max_len=5000, "
    "dropout=0.1), or pass an instance.",
)
MISTAKES.uses(EXCEPTION)
_CONTRACT = text(
    "The checker calls module(x) with float32 x of shape (batch, seq_len, d_model), in eval "
    "and train mode, seq_len up to max_len and beyond."
)
_NOT_A_TENSOR = MISTAKES.declare(
    "shape",
    "module(x) returned a {kind}, not a tensor.",
    "return one tensor, x + PE, of the shape of x.",
)
_SHAPE = MISTAKES.declare(
    "shape",
    "module(x) with x of shape {shape} = (batch, seq_len, d_model) returned shape {out_shape}: "
    "a positional encoding keeps the shape of its input.{hint}",
    "return x + PE[:seq_len], with PE[:seq_len] of shape (seq_len, d_model) broadcast over "
    "the batch.",
)
MISTAKES.uses(IN_PLACE)
_DROPOUT_IN_EVAL = MISTAKES.declare(
    "dropout_in_eval",
    "In eval mode, two calls module(x) on the same x gave different outputs: dropout (or some "
    "other randomness) is still active.",
    "use an nn.Dropout submodule, self.dropout = nn.Dropout(p), which module.eval() switches "
    "off, or pass training=self.training to F.dropout.",
)
_TRAINABLE = MISTAKES.declare(
    "trainable_table",
    "The module has a trainable {kind} {name!r} of shape {shape}: an optimizer would change "
    "it, but the sinusoidal encoding is fixed — it has nothing to learn.",
    "store the table with self.register_buffer('pe', pe) (not nn.Parameter), computed without "
    "requires_grad.",
)
_TRAINABLE_PARAMETER = MISTAKES.declare(
    "trainable_parameter",
    "The module adds the right table, but it has a trainable {kind} {name!r} of shape "
    "{shape}: an optimizer would change it, and with it what the module computes, while the "
    "sinusoidal encoding is fixed.",
    "leave out what has nothing to learn here, or freeze it with requires_grad_(False).",
)
_NORMALISED = MISTAKES.declare(
    "normalised",
    "In eval mode module(x) is {norm}(x + PE): the sum is normalised by the submodule "
    "{name!r} ({cls}) after the table is added. The positional encoding itself is "
    "dropout(x + PE); a model may normalise the sum afterwards (BERT's embedding layer does), "
    "but in its own layer, not in the encoding.",
    "return self.dropout(x + PE[:seq_len]) and apply {name!r} in the layer that uses the encoding.",
)
_NOT_BUFFER = MISTAKES.declare(
    "not_buffer",
    "The table is a plain tensor attribute self.{name} of shape {shape}: module.to(device) "
    "and module.half() do not see it, so it stays behind on the CPU.",
    "self.register_buffer({name!r}, table) in __init__.",
)
_TABLE_NOT_ADDED = MISTAKES.declare(
    "table_not_added",
    "In eval mode module(x) returned x unchanged: the table is never added (was the sum "
    "assigned to a name that is not returned?).",
    _FIX_ADD,
)
_ONLY_TABLE = MISTAKES.declare(
    "not_added",
    "In eval mode module(x) returned the table itself, whatever x is: the token embeddings "
    "are lost.",
    _FIX_ADD,
)
_MULTIPLIED = MISTAKES.declare(
    "not_added",
    "In eval mode module(x) is x * PE: the table multiplies the embeddings instead of being "
    "added to them (module(zeros) is all zeros).",
    _FIX_ADD,
)
_SCALED = MISTAKES.declare(
    "not_added",
    "In eval mode module(x) is {scale} * x + PE: x is scaled before the table is added.{note}",
    _FIX_ADD,
)
_DEPENDS_ON_X = MISTAKES.declare(
    "not_added",
    "In eval mode module(x) - x depends on x, so module(x) is not x plus a table "
    "(module(zeros) gives the table).",
    _FIX_ADD,
)
_POSITION_AXIS = MISTAKES.declare(
    "position_axis",
    "The module adds PE(b) to every token of batch item b: it reads the positions along "
    "dim 0, as in the (seq_len, batch, d_model) layout of the PyTorch tutorial. Inputs here "
    "are (batch, seq_len, d_model).",
    "index the table with x.size(1) and add PE[:seq_len] of shape (seq_len, d_model) (or "
    "(1, seq_len, d_model)).",
)
_ONE_POSITION = MISTAKES.declare(
    "one_position",
    "The module adds PE(0), the row of position 0, to every token: the table's position axis "
    "is not the one it slices. A buffer of shape (max_len, 1, d_model), as in the PyTorch "
    "tutorial, sliced as if it were (1, max_len, d_model) (pe[0, :seq_len]) gives its row 0 "
    "only.",
    "slice the axis that has max_len entries: pe[:seq_len, 0] for a (max_len, 1, d_model) "
    "buffer, pe[0, :seq_len] for (1, max_len, d_model), pe[:seq_len] for (max_len, d_model).",
)
_PER_ITEM = MISTAKES.declare(
    "wrong_table",
    "The module adds different tables to different batch items; every sequence should get "
    "the same PE[:seq_len].",
    _FIX_ADD,
)
_WRONG_TABLE = MISTAKES.declare(
    "wrong_table",
    "The module adds a table to x, but not the sinusoidal one. Checking that table "
    "(module(zeros)[0]) found {inner!r}: {message}",
    "see the fix above.",
)
_NEARLY = MISTAKES.declare(
    "wrong_table",
    "The module adds a table to x that is close to, but not within float32 rounding of, the "
    "sinusoidal one.",
    _FIX_ADD,
)
_SHORT_RAISED = MISTAKES.declare(
    "short_table",
    "module(x) failed for seq_len={seq_len}, which it was built for ({prepared}), with "
    "{error_type}: {error}.",
    "build the table with max_len rows, positions 0 .. max_len - 1 "
    "(torch.arange(max_len)), so that every seq_len <= max_len works.",
)
_SHORT_SHAPE = MISTAKES.declare(
    "short_table",
    "For seq_len={seq_len}, which it was built for ({prepared}), module(x) returned shape "
    "{out_shape} instead of {shape}.",
    "build the table with max_len rows, positions 0 .. max_len - 1 "
    "(torch.arange(max_len)), so that every seq_len <= max_len works.",
)
_WRONG_ROWS = MISTAKES.declare(
    "wrong_rows",
    "For seq_len={seq_len} ({prepared}) the module adds the right rows up to position "
    "{last_right}, and wrong ones from position {first_wrong} on{zero}.",
    "fill every row of the table from the formula, for all max_len positions: "
    "pe[:, 0::2] = sin(pos * omega), pe[:, 1::2] = cos(pos * omega) with "
    "pos = torch.arange(max_len)[:, None].",
)
_NO_DROPOUT = MISTAKES.declare(
    "no_dropout_in_train",
    "The module has dropout p={p}, but in train mode module(x) = x + PE with nothing dropped.",
    "return self.dropout(x + pe) in forward.",
)
_DROPOUT_NEVER_BUILT = MISTAKES.declare(
    "dropout_never_built",
    "{cls}.__init__ takes {argument}={p} by default, but the module holds no nn.Dropout and no "
    "attribute {names}: the dropout argument is accepted and never applied.",
    "keep it, self.dropout = nn.Dropout({argument}), and return self.dropout(x + pe) in forward.",
)
_DROPOUT_NOT_ON_SUM = MISTAKES.declare(
    "dropout_not_on_sum",
    "In train mode (dropout p={p}), module(x) is not dropout(x + PE): the entries that are "
    "kept should be (x + PE) / (1 - p) and the rest 0.",
    "add first, then apply dropout once to the sum: return self.dropout(x + pe).",
)
_BEYOND_RAISED = MISTAKES.declare(
    "fixed_length",
    "module(x) failed for seq_len={seq_len} ({prepared}) with {error_type}: {error}.",
    _ON_THE_FLY,
)
_BEYOND_SHAPE = MISTAKES.declare(
    "fixed_length",
    "For seq_len={seq_len} ({prepared}) module(x) returned {out_shape} instead of shape {shape}.",
    _ON_THE_FLY,
)
_BEYOND_WRONG = MISTAKES.declare(
    "fixed_length",
    "For seq_len={seq_len} ({prepared}) the module adds wrong values from position "
    "{first_wrong} on.",
    _ON_THE_FLY,
)
_DTYPE = MISTAKES.declare(
    "dtype",
    "For x of dtype {dtype}, module(x) returned {result}: the output should keep the input's "
    "dtype ({cause}).",
    "cast the table to x's dtype when adding it: x + self.pe[:seq_len].to(x.dtype).",
)
_DTYPE_RAISED = MISTAKES.declare(
    "dtype",
    "module(x) with x of dtype {dtype} raised {error_type}: {error}.",
    "cast the table to x's dtype when adding it: x + self.pe[:seq_len].to(x.dtype).",
)

_DROPOUT_IGNORED = MISTAKES.declare(
    "dropout_ignored",
    "{cls}(d_model, {argument}={asked}) holds dropout p={found}: the {argument} argument is "
    "accepted and ignored (is nn.Dropout({found}) written in __init__?).",
    "build the dropout from the argument: self.dropout = nn.Dropout({argument}).",
)
_PRECISION = MISTAKES.declare(
    "precision",
    "For seq_len={seq_len}, the table the module adds (module(zeros)[0]) is off by {error} at "
    "position {position}, dimension {dim}, where angles formed in float64 allow {allowed}.{source}",
    "form the angles from integer positions in float64 (positions = torch.arange(max_len, "
    "dtype=torch.float64), the frequencies in float64 too), then cast the table to the dtype "
    "you keep it in.",
)
_PERSISTENT = MISTAKES.declare(
    "persistent_buffer",
    "The table {name!r} of shape {shape} is a persistent buffer: it is written into every "
    "checkpoint (module.state_dict()), though it is computed from max_len and d_model alone, "
    "and a checkpoint saved with another max_len no longer loads.",
    "register it with self.register_buffer({name!r}, table, persistent=False).",
)
_CALL = text("module(x) with x of shape {shape} ({mode})")
_TABLE_SHAPE = text(" That is the shape of the table alone: add it to x.")
_EVAL = text("eval mode")
_TRAIN = text("train mode")
_DTYPE_INPUT = text("{dtype} input")
_PARAMETER = text("parameter")
_BUFFER = text("buffer")
_OR = text(" or ")
_SQRT_NOTE = text(
    " That is sqrt(d_model) = {root}: the paper scales the embeddings in the embedding layer "
    "(section 3.4), not in the encoding."
)
_LONGER = text("longer than the article's default max_len=5000")
_BUILT_FOR = text("it was built for {prepared} positions")
_ZEROS = text(" (they are zeros)")
_PROMOTES_TABLE = text("adding the module's {name} table {table!r} promotes the sum to {name}")
_PROMOTES = text(
    "a {name} tensor added without a cast, such as a table computed in {name}, promotes the "
    "sum to {name}"
)
_IN_PLACE_EXAMPLE = "x += pe, x.add_(pe)"
_IN_PLACE_INSTEAD = "x = x + pe"

_DRAWN_CASE = text("For a batch of {batch} and seq_len={seq_len}{drawn}: ")
_DEFAULT_CLASS_D_MODEL = 16
#: Cases drawn after the first: batches of 1 to 4, lengths up to what the module was built for.
_DRAWN = 4
_DRAWN_LEN = 512
#: The dropout probability the class is built with to see that it uses its argument.
_OTHER_P = 0.25
_MAX_D_MODEL = 65_536
_SHORT_LEN = 12
_UNKNOWN_LEN = 6000  # beyond the article's default max_len = 5000
#: Largest input the checker builds, in entries (seq_len * d_model): longer probes are cut.
_PROBE_ENTRIES = 2**22
_DROPOUT_ATTRIBUTES = ("dropout", "p", "dropout_p", "drop_prob", "dropout_rate", "p_drop")


@dataclass(frozen=True)
class _LengthMistakes:
    """What a probe of one length raises when the module fails, misshapes or errs."""

    raised: Mistake
    shape: Mistake
    wrong: Mistake


_WITHIN = _LengthMistakes(_SHORT_RAISED, _SHORT_SHAPE, _WRONG_ROWS)
_BEYOND = _LengthMistakes(_BEYOND_RAISED, _BEYOND_SHAPE, _BEYOND_WRONG)


@MISTAKES.attach
def check_positional_encoding_module(
    module_or_class: object,
    d_model: int | None = None,
    *,
    base: float = DEFAULT_BASE,
    strict: bool = False,
    seed: int = 0,
) -> tuple[Note, ...]:
    r"""Check a PyTorch module that adds the fixed sinusoidal encoding to token embeddings.

    The module must map ``x`` of shape ``(batch, seq_len, d_model)`` to
    ``dropout(x + PE[:seq_len])`` (Vaswani et al., 2017, sections 3.5 and 5.4), with the
    sinusoidal table of the given ``base``. Inputs are float32, the checks run without
    autograd, on a private random-number stream (the global one is left as it was); the
    training flag of every submodule is restored afterwards, and parameters are not changed.
    They run in this order, and the first failure is raised (``.mistake``, one of
    ``check_positional_encoding_module.mistakes``):

    1. ``"exception"`` (building or calling the module raised; the original error is
       chained), ``"shape"`` (the output is not a tensor of the input's shape),
       ``"in_place"`` (the caller's ``x`` was modified), on a batch of 2 and 12 positions
       (fewer if the module was built for fewer);
    2. ``"dropout_in_eval"``: two calls in eval mode differ;
    3. ``"trainable_table"``: a parameter (or a buffer) shaped as a table (at least 2-D, its
       last axis ``d_model``) requires grad; a fixed encoding has nothing to learn;
    4. ``"not_buffer"``: the table is a plain tensor attribute, which ``module.to(device)``
       would not move;
    5. in eval mode ``module(x)`` must equal ``x + PE``: ``"table_not_added"`` (the output is
       ``x``), ``"not_added"`` (``x`` multiplied by the table, scaled before the addition,
       or ignored), ``"position_axis"`` (positions read along the batch axis, as in the
       ``(seq_len, batch, d_model)`` layout), ``"one_position"`` (the row of position 0
       added everywhere, as when a ``(max_len, 1, d_model)`` buffer is sliced on its size-1
       axis), ``"wrong_table"`` (a table is added but not the sinusoidal one; the message
       includes :func:`check_sinusoidal_table`'s diagnosis of it, chained as
       ``__cause__``), ``"normalised"`` (the sum passed through a normalisation submodule,
       such as ``nn.LayerNorm``); then ``"trainable_parameter"``: the output is right, but
       another parameter (a norm's weight, a scale) requires grad;
    6. the length the module was built for, ``max_len``, is probed in full, ``seq_len ==
       max_len`` included: ``"short_table"`` (it raises or misshapes there) and
       ``"wrong_rows"`` (rows from some position on are wrong, zeros for instance).
       ``max_len`` is the largest of the module's ``max_len`` attribute, the default of the
       class's ``max_len`` argument (when a class is given) and the length of any table it
       holds (``numel // d_model`` of a tensor whose last axis is ``d_model``, so the
       shapes ``(max_len, d_model)``, ``(1, max_len, d_model)`` and ``(max_len, 1,
       d_model)`` all count); probes are cut at ``2**22 // d_model`` positions;
    7. dropout in train mode, only when a probability ``p > 0`` can be found (an
       ``nn.Dropout`` submodule, or a float attribute named ``dropout`` or ``p``); skipped
       otherwise, since ``p = 0`` is a legitimate choice: ``"no_dropout_in_train"``
       (nothing dropped) and ``"dropout_not_on_sum"`` (the output is not
       ``dropout(x + PE)``). When none is found but the class's ``__init__`` gives a dropout
       argument (``dropout``, ``p``, ...) a default in ``(0, 1)``, as ``max_len``'s default
       is read, and the module holds neither an ``nn.Dropout`` nor an attribute of that name:
       ``"dropout_never_built"`` (the argument is accepted and dropped);
    8. ``"fixed_length"``: ``max_len + 16`` positions (6000 when no length is found). Wrong
       values or a wrong shape there always fail. Refusing the length (raising) is a
       :class:`Note` by default, and fails with ``strict=True``: the formula holds for
       every position, so a fixed encoding can compute the rows it lacks;
    9. ``"dtype"``: float32, float64 and bfloat16 inputs should give outputs of the same
       dtype (a float64 table added without a cast turns float32 into float64): a
       :class:`Note` by default, a failure with ``strict=True``; the message names the
       module's table of the output's dtype when it holds one.

    So the article's ``PositionalEncoding`` (a float32 table of ``max_len`` rows sliced with
    ``pe[:seq_len]``, which raises beyond ``max_len`` and returns float32 for a bfloat16
    input) passes with two notes, ``"fixed_length"`` and ``"dtype"``, and fails with
    ``strict=True``; :class:`pe_lib.encodings.modules.SinusoidalPositionalEncoding` passes either way.
    Batch-first modules only: a module written for ``(seq_len, batch, d_model)`` inputs is
    diagnosed as ``"position_axis"``.

    Args:
        module_or_class: an ``nn.Module`` instance, or a subclass of ``nn.Module``, which is
            built with ``cls(d_model)``, or ``cls(d_model=d_model)`` if that raises
            ``TypeError`` (other arguments keep their defaults).
        d_model: the embedding size, 1 .. 65536. For an instance, ``None`` means
            ``module.d_model``; for a class, ``None`` means 16.
        base: the base of the encoding, a finite number > 1.
        strict: fail (instead of noting) a module that refuses lengths beyond ``max_len``
            or does not keep the input's dtype.

    Returns:
        The notes, a tuple of :class:`Note` (empty when every property holds).

    Raises:
        TypeError: ``module_or_class`` is neither an ``nn.Module`` nor a subclass of it, or
            ``strict`` is not a bool.
        ValueError: ``d_model`` is not an int in 1 .. 65536, is missing for an instance
            without a ``d_model`` attribute, or differs from that attribute; ``base`` is not
            a finite number > 1.
        CheckFailed: the module is wrong; ``.mistake`` says how (see above).
    """
    base = check_base("base", base)
    strict = check_bool("strict", strict)
    seed = check_seed(seed)
    declared, cls = None, None
    if isinstance(module_or_class, type):
        if not issubclass(module_or_class, nn.Module):
            raise TypeError(
                f"module_or_class must be an nn.Module instance or subclass, got the class "
                f"{module_or_class.__name__}"
            )
        d_model = _DEFAULT_CLASS_D_MODEL if d_model is None else _check_d_model(d_model)
        module = _instantiate(module_or_class, d_model)
        cls = module_or_class
        declared = _declared_max_len(module_or_class)
    elif isinstance(module_or_class, nn.Module):
        module = module_or_class
        own = getattr(module, "d_model", None)
        own_int = _positive_int_or_none(own)
        if d_model is None:
            if own_int is None:
                raise ValueError(
                    "d_model is None and the module has no int attribute d_model: pass "
                    "d_model=<the embedding size the module was built with>"
                )
            d_model = own_int
        d_model = _check_d_model(d_model)
        if own_int is not None and own_int != d_model:
            raise ValueError(f"d_model must match the module's d_model={own_int}, got {d_model}")
    else:
        raise TypeError(
            "module_or_class must be an nn.Module instance or subclass, got "
            f"{type(module_or_class).__name__}"
        )
    with _probing(module):
        return _Probe(module, d_model, base, strict, declared, cls, seed).run()


def _check_d_model(value: object) -> int:
    d_model = check_positive_int("d_model", value)
    if d_model > _MAX_D_MODEL:
        raise ValueError(
            f"d_model must be at most {_MAX_D_MODEL} for check_positional_encoding_module (it "
            f"builds inputs of shape (batch, seq_len, d_model)), got {d_model}"
        )
    return d_model


def _positive_int_or_none(value: object) -> int | None:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) > 0:
        return int(value)
    return None


def _declared_max_len(cls: type) -> int | None:
    """The default of the class's ``max_len`` argument, if it has an int one."""
    try:
        parameter = inspect.signature(cls).parameters.get("max_len")
    except (TypeError, ValueError):
        return None
    return None if parameter is None else _positive_int_or_none(parameter.default)


def _instantiate(cls: type[nn.Module], d_model: int) -> nn.Module:
    """``cls(d_model)``, then ``cls(d_model=d_model)`` if the first raises ``TypeError``."""
    try:
        return cls(d_model)
    except TypeError as positional_error:
        try:
            return cls(d_model=d_model)
        except TypeError as keyword_error:
            raise _CONSTRUCTOR.fail(
                name=cls.__name__, d_model=d_model, error=keyword_error
            ) from positional_error
        except Exception as error:
            raise EXCEPTION.fail(
                call=f"{cls.__name__}(d_model={d_model})",
                error_type=type(error).__name__,
                error=error,
                contract=_CONTRACT,
            ) from error
    except Exception as error:
        raise EXCEPTION.fail(
            call=f"{cls.__name__}({d_model})",
            error_type=type(error).__name__,
            error=error,
            contract=_CONTRACT,
        ) from error


@contextmanager
def _probing(module: nn.Module) -> Iterator[None]:
    """No autograd, a private RNG stream, and every submodule's training flag restored."""
    modes = [(sub, sub.training) for sub in module.modules()]
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            yield
    finally:
        for sub, training in modes:
            sub.training = training


def _device_of(module: nn.Module) -> torch.device:
    for tensor in [*module.parameters(), *module.buffers()]:
        return tensor.device
    return torch.device("cpu")


def _find_dropout_p(module: nn.Module) -> float | None:
    """The dropout probability of the module, if one > 0 can be found, else None."""
    for sub in module.modules():
        if isinstance(sub, nn.modules.dropout._DropoutNd) and 0.0 < float(sub.p) < 1.0:
            return float(sub.p)
    for name in _DROPOUT_ATTRIBUTES:
        value = getattr(module, name, None)
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            if 0.0 < float(value) < 1.0:
                return float(value)
    return None


def _declared_dropout(module: nn.Module) -> tuple[str, float] | None:
    """A dropout argument of the module's class whose default is in (0, 1), with that default,
    when the module holds neither an ``nn.Dropout`` nor an attribute of a dropout name."""
    if any(isinstance(sub, nn.modules.dropout._DropoutNd) for sub in module.modules()):
        return None
    if any(hasattr(module, name) for name in _DROPOUT_ATTRIBUTES):
        return None
    try:
        parameters = inspect.signature(type(module)).parameters
    except (TypeError, ValueError):
        return None
    for name in _DROPOUT_ATTRIBUTES:
        parameter = parameters.get(name)
        default = None if parameter is None else parameter.default
        if isinstance(default, numbers.Real) and not isinstance(default, bool):
            if 0.0 < float(default) < 1.0:
                return name, float(default)
    return None


def _tables(module: nn.Module, d_model: int) -> list[tuple[str, torch.Tensor]]:
    """Every tensor of the module whose last axis is ``d_model`` (candidate tables)."""
    named = [*module.named_buffers(), *module.named_parameters()]
    named += [(k, v) for k, v in vars(module).items() if isinstance(v, torch.Tensor)]
    return [(name, t) for name, t in named if t.dim() >= 2 and t.shape[-1] == d_model]


def _prepared_length(module: nn.Module, d_model: int, declared: int | None) -> int | None:
    """The number of positions the module was built for (see step 6 of the checker)."""
    sizes = [s for s in (_positive_int_or_none(getattr(module, "max_len", None)), declared) if s]
    sizes += [t.numel() // d_model for _, t in _tables(module, d_model)]
    return max(sizes) if sizes else None


def _allowed(x: torch.Tensor, angles: torch.Tensor, base: float) -> torch.Tensor:
    """Error allowed for float32 ``x + PE``: rounding of the sum, and float32 angles (capped)."""
    angle_term = (EPS32 * angle_ulps(base) * angles.abs()).clamp(max=ANGLE_ERROR_CAP)
    return EPS32 * 8.0 * (1.0 + x.abs()) + angle_term


#: Submodules that normalise what they are given (``"normalised"``).
_NORMALISATIONS: tuple[type[nn.Module], ...] = tuple(
    getattr(nn, name) for name in ("LayerNorm", "RMSNorm", "GroupNorm") if hasattr(nn, name)
)


def _kind(tensor: torch.Tensor) -> str:
    return str(_PARAMETER) if isinstance(tensor, nn.Parameter) else str(_BUFFER)


@dataclass(frozen=True)
class _Sum:
    """What ``module(x)`` gave in eval mode when it is not ``x + PE``, and how to compare."""

    probe: _Probe
    x: torch.Tensor
    x64: torch.Tensor
    out64: torch.Tensor
    #: ``module(zeros)``: the table the module adds, if it adds one
    out0: torch.Tensor
    table: torch.Tensor
    by_batch: torch.Tensor
    allowed: torch.Tensor

    def close(self, a: torch.Tensor, b: torch.Tensor) -> bool:
        return bool(((a - b).abs() <= self.allowed).all())

    def adds_a_table(self) -> bool:
        """``module(x) - x`` does not depend on ``x``."""
        return self.close(self.out64 - self.x64, self.out0)


def _scaled(e: _Sum) -> dict[str, object] | None:
    """``scale * x + PE``."""
    if not e.close(e.out0, e.table.expand_as(e.x64)):
        return None
    dx = e.out64 - e.out0
    scale = float((dx * e.x64).sum() / (e.x64 * e.x64).sum())
    if not e.close(dx, scale * e.x64):
        return None
    root = math.sqrt(e.probe.d_model)
    note = _SQRT_NOTE.render(root=f"{root:.4g}") if abs(scale - root) < 1e-3 * root else ""
    return {"scale": f"{scale:.4g}", "note": note}


def _when(condition: bool) -> dict[str, object] | None:
    return {} if condition else None


#: What an eval-mode output that is not ``x + PE`` is compared with, in order; then the table
#: it adds is checked (``"wrong_table"``).
_SUM_DIAGNOSES: tuple[Diagnosis[_Sum], ...] = (
    Diagnosis(_TABLE_NOT_ADDED, lambda e: _when(e.close(e.out64, e.x64))),
    Diagnosis(_ONLY_TABLE, lambda e: _when(e.close(e.out64, e.table.expand_as(e.x64)))),
    Diagnosis(_MULTIPLIED, lambda e: _when(e.close(e.out64, e.x64 * e.table))),
    Diagnosis(_SCALED, _scaled),
    Diagnosis(_NORMALISED, lambda e: None if e.adds_a_table() else e.probe.normalised_by(e.x, e)),
    Diagnosis(_DEPENDS_ON_X, lambda e: _when(not e.adds_a_table())),
    Diagnosis(
        _POSITION_AXIS,
        lambda e: _when(e.close(e.out0, e.by_batch[:, None, :].expand_as(e.x64))),
    ),
    Diagnosis(
        _ONE_POSITION,
        lambda e: _when(e.x.shape[1] > 1 and e.close(e.out0, e.table[:1].expand_as(e.x64))),
    ),
    Diagnosis(_PER_ITEM, lambda e: _when(not e.close(e.out0[0], e.out0[-1]))),
)


class _Probe:
    """The checks of one module, in order; :meth:`run` returns the notes."""

    def __init__(
        self,
        module: nn.Module,
        d_model: int,
        base: float,
        strict: bool,
        declared: int | None,
        cls: type[nn.Module] | None = None,
        seed: int = 0,
    ) -> None:
        self.module, self.d_model, self.base, self.strict = module, d_model, base, strict
        self.cls, self.seed = cls, seed
        self.device = _device_of(module)
        self.generator = torch.Generator().manual_seed(0)
        self.prepared = _prepared_length(module, d_model, declared)
        self.notes: list[Note] = []

    def reference(self, seq_len: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The table and its angles, positions 0 .. seq_len - 1, float64."""
        return reference(torch.arange(seq_len, dtype=torch.float64), self.d_model, self.base)

    def call(self, x: torch.Tensor, what: str) -> torch.Tensor:
        """``module(x)`` on a copy of ``x``, checked for type, shape and in-place changes."""
        given = x.clone()
        call = _CALL.render(shape=tuple(x.shape), mode=what)
        out = call_student(EXCEPTION, call, self.module, given, contract=_CONTRACT)
        if not isinstance(out, torch.Tensor):
            raise _NOT_A_TENSOR.fail(kind=type(out).__name__)
        if not torch.equal(given, x):
            raise IN_PLACE.fail(
                call="module(x)", name="x", example=_IN_PLACE_EXAMPLE, instead=_IN_PLACE_INSTEAD
            )
        if out.shape != x.shape:
            hint = str(_TABLE_SHAPE) if out.shape == x.shape[1:] else ""
            raise _SHAPE.fail(shape=tuple(x.shape), out_shape=tuple(out.shape), hint=hint)
        return out

    def run(self) -> tuple[Note, ...]:
        prepared = self.prepared
        seq_len = _SHORT_LEN if prepared is None else max(1, min(_SHORT_LEN, prepared))
        x = torch.randn(2, seq_len, self.d_model, generator=self.generator).to(self.device)

        self.module.eval()
        eval_mode = str(_EVAL)
        out = self.call(x, eval_mode)
        if not torch.equal(out, self.call(x, eval_mode)):
            raise _DROPOUT_IN_EVAL.fail()
        self.check_registered()
        self.check_addition(x, out)
        for name, tensor, _ in self.trainable():  # the output is right, for now
            raise _TRAINABLE_PARAMETER.fail(
                kind=_kind(tensor), name=name, shape=tuple(tensor.shape)
            )
        if prepared is not None and prepared > seq_len:
            self.check_length(min(prepared, _PROBE_ENTRIES // self.d_model), _WITHIN)
        for case in draw_cases((), self.draw, _DRAWN, self.seed):
            self.check_drawn(case)
        p = _find_dropout_p(self.module)
        if p is not None:
            self.check_train_dropout(seq_len, p)
        elif (declared := _declared_dropout(self.module)) is not None:
            raise _DROPOUT_NEVER_BUILT.fail(
                cls=type(self.module).__name__,
                argument=declared[0],
                p=declared[1],
                names=str(_OR).join(map(repr, _DROPOUT_ATTRIBUTES)),
            )
        self.check_dropout_argument()
        long_len = _UNKNOWN_LEN if prepared is None else prepared + 16
        if long_len * self.d_model <= _PROBE_ENTRIES:
            self.check_length(long_len, _BEYOND)
        self.check_dtypes(x)
        if self.strict:
            self.check_float64_angles()
            self.check_persistent()
        return tuple(self.notes)

    def draw(self, rng: random.Random) -> tuple[int, int]:
        """A ``(batch, seq_len)`` of the space the module was built for."""
        longest = min(self.prepared or _SHORT_LEN, _DRAWN_LEN, _PROBE_ENTRIES // self.d_model)
        return rng.randint(1, 4), rng.randint(1, max(1, longest))

    def check_drawn(self, case: Case[tuple[int, int]]) -> None:
        """In eval mode ``module(x) == x + PE`` for a drawn batch and length."""
        batch, seq_len = case.value
        x = torch.randn(batch, seq_len, self.d_model, generator=self.generator).to(self.device)
        context = _DRAWN_CASE.render(batch=batch, seq_len=seq_len, drawn=case.label)
        self.check_addition(x, self.call(x, str(_EVAL)), context)

    def check_dropout_argument(self) -> None:
        """The class built with another dropout probability holds that probability."""
        cls = self.cls or type(self.module)
        try:
            parameters = inspect.signature(cls).parameters
        except (TypeError, ValueError):
            return
        argument = next((name for name in _DROPOUT_ATTRIBUTES if name in parameters), None)
        if argument is None:
            return
        try:
            other = cls(self.d_model, **{argument: _OTHER_P})
        except Exception:  # a class that needs more arguments: nothing to compare
            return
        found = _find_dropout_p(other) if isinstance(other, nn.Module) else None
        if found is not None and abs(found - _OTHER_P) > 1e-12:
            raise _DROPOUT_IGNORED.fail(
                cls=cls.__name__, argument=argument, asked=_OTHER_P, found=f"{found:g}"
            )

    def check_float64_angles(self) -> None:
        """With ``strict``: the table is within the rounding of float64 angles."""
        seq_len = min(self.prepared or _UNKNOWN_LEN, _PROBE_ENTRIES // self.d_model)
        x = torch.zeros(1, seq_len, self.d_model, device=self.device)
        found = self.call(x, str(_EVAL))[0].double().cpu()
        table, angles = self.reference(seq_len)
        allowed = 8.0 * EPS32 + (8.0 * angle_ulps(self.base) * EPS64 * angles.abs()).clamp(
            max=ANGLE_ERROR_CAP
        )
        error = (found - table).abs()
        if bool((error <= allowed).all()):
            return
        row, dim = divmod(int((error - allowed).argmax()), self.d_model)
        source = precision_evidence(found.float(), self.base, torch.float64)
        raise _PRECISION.fail(
            seq_len=seq_len,
            error=f"{float(error[row, dim]):.2e}",
            position=row,
            dim=dim,
            allowed=f"{float(allowed[row, dim]):.1e}",
            source=f" {source}" if source else "",
        )

    def check_persistent(self) -> None:
        """With ``strict``: no table in the module's ``state_dict``."""
        parameters = {name for name, _ in self.module.named_parameters()}
        for name, tensor in self.module.state_dict().items():
            if name in parameters or not isinstance(tensor, torch.Tensor):
                continue
            if tensor.dim() >= 2 and tensor.shape[-1] == self.d_model:
                raise _PERSISTENT.fail(name=name, shape=tuple(tensor.shape))

    def trainable(self) -> Iterator[tuple[str, torch.Tensor, bool]]:
        """Each tensor of the module that requires grad, and whether it is shaped as a table
        (at least 2-D, its last axis ``d_model``)."""
        for name, tensor in [*self.module.named_parameters(), *self.module.named_buffers()]:
            if tensor.requires_grad:
                yield name, tensor, tensor.dim() >= 2 and tensor.shape[-1] == self.d_model

    def check_registered(self) -> None:
        for name, tensor, table_shaped in self.trainable():
            if table_shaped:
                raise _TRAINABLE.fail(kind=_kind(tensor), name=name, shape=tuple(tensor.shape))
        for name, value in vars(self.module).items():
            if (
                isinstance(value, torch.Tensor)
                and value.dim() >= 2
                and value.shape[-1] == self.d_model
            ):
                raise _NOT_BUFFER.fail(name=name, shape=tuple(value.shape))

    def check_addition(self, x: torch.Tensor, out: torch.Tensor, context: str = "") -> None:
        """In eval mode ``module(x) == x + PE``; otherwise raise what explains the output."""
        seq_len = x.shape[1]
        table, angles = self.reference(seq_len)
        x64, out64 = x.double().cpu(), out.double().cpu()
        allowed = _allowed(x64, angles, self.base)
        if bool(((out64 - (x64 + table)).abs() <= allowed).all()):
            return
        out0 = self.call(torch.zeros_like(x), str(_EVAL)).double().cpu()
        by_batch, _ = self.reference(x.shape[0])
        evidence = _Sum(self, x, x64, out64, out0, table, by_batch, allowed)
        failure = diagnose(_SUM_DIAGNOSES, evidence, context)
        if failure is not None:
            raise failure
        try:
            check_sinusoidal_table(out0[0].float(), base=self.base)
        except CheckFailed as inner:
            raise _WRONG_TABLE.fail(context, inner=inner.mistake, message=inner.message) from inner
        raise _NEARLY.fail(context)

    def normalised_by(self, x: torch.Tensor, e: _Sum) -> dict[str, object] | None:
        """The normalisation submodule that ``module(x)`` applies to ``x + PE``, if one does
        (run as the module holds it, weights and all)."""
        total = (x.double().cpu() + e.table).to(dtype=x.dtype, device=x.device)
        for name, sub in self.module.named_modules():
            if not isinstance(sub, _NORMALISATIONS):
                continue
            with torch.no_grad():
                normalised = sub(total.clone())
            if normalised.shape == e.out64.shape and e.close(e.out64, normalised.double().cpu()):
                cls = type(sub).__name__
                return {"norm": cls, "name": name, "cls": cls}
        return None

    def check_length(self, seq_len: int, mistakes: _LengthMistakes) -> None:
        """``module(zeros)`` of ``seq_len`` positions must be the table (see steps 6 and 8)."""
        beyond = mistakes is _BEYOND
        if self.prepared is None:
            prepared = str(_LONGER)
        elif beyond:
            prepared = _BUILT_FOR.render(prepared=self.prepared)
        else:
            prepared = f"max_len={self.prepared}"
        x = torch.zeros(1, seq_len, self.d_model, device=self.device)
        fields: dict[str, object] = {"seq_len": seq_len, "prepared": prepared}
        try:
            out = self.module(x.clone())
        except Exception as error:
            fields.update(error_type=type(error).__name__, error=error)
            if beyond and not self.strict:
                self.notes.append(mistakes.raised.note(**fields))
                return
            raise mistakes.raised.fail(**fields) from error
        if not isinstance(out, torch.Tensor) or out.shape != x.shape:
            out_shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise mistakes.shape.fail(out_shape=out_shape, shape=tuple(x.shape), **fields)
        table, angles = self.reference(seq_len)
        found = out[0].double().cpu()
        wrong = ((found - table).abs() > _allowed(torch.zeros(()), angles, self.base)).any(dim=1)
        if bool(wrong.any()):
            first = int(wrong.nonzero()[0])
            zero = str(_ZEROS) if bool((found[first:] == 0).all()) else ""
            raise mistakes.wrong.fail(first_wrong=first, last_right=first - 1, zero=zero, **fields)

    def check_train_dropout(self, seq_len: int, p: float) -> None:
        # Enough entries that about 50 are dropped, so "none dropped" is no accident.
        batch = max(2, math.ceil(50.0 / (p * seq_len * self.d_model)))
        if batch * seq_len * self.d_model > _PROBE_ENTRIES:
            return
        x = torch.randn(batch, seq_len, self.d_model, generator=self.generator).to(self.device)
        self.module.train()
        out = self.call(x, str(_TRAIN)).double().cpu()
        self.module.eval()
        table, angles = self.reference(seq_len)
        total = x.double().cpu() + table
        allowed = _allowed(total, angles, self.base) / (1.0 - p)
        if bool(((out - total).abs() <= allowed).all()):
            raise _NO_DROPOUT.fail(p=f"{p:g}")
        dropped = out == 0
        kept = ~dropped
        if not bool(dropped.any()) or not bool(
            ((out[kept] - total[kept] / (1.0 - p)).abs() <= allowed[kept]).all()
        ):
            raise _DROPOUT_NOT_ON_SUM.fail(p=f"{p:g}")

    def dtype_cause(self, result: torch.dtype) -> str:
        """Why the output became ``result``: the module's table of that dtype, if it holds one."""
        name = dtype_name(result)
        for table_name, table in _tables(self.module, self.d_model):
            if table.dtype == result:
                return _PROMOTES_TABLE.render(name=name, table=table_name)
        return _PROMOTES.render(name=name)

    def check_dtypes(self, x: torch.Tensor) -> None:
        for dtype in (torch.float32, torch.float64, torch.bfloat16):
            name = dtype_name(dtype)
            try:
                result = self.call(x.to(dtype), _DTYPE_INPUT.render(dtype=name))
            except CheckFailed as failure:
                if self.strict or failure.mistake != "exception":
                    raise
                cause = failure.__cause__
                error = {"error_type": type(cause).__name__, "error": cause}
                self.notes.append(_DTYPE_RAISED.note(dtype=name, **error))
                continue
            if result.dtype != dtype:
                fields = {
                    "dtype": name,
                    "result": dtype_name(result.dtype),
                    "cause": self.dtype_cause(result.dtype),
                }
                if self.strict:
                    raise _DTYPE.fail(**fields)
                self.notes.append(_DTYPE.note(**fields))
