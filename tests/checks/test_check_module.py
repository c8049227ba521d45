"""check_positional_encoding_module: correct modules pass, each planted mistake is named.

The modules are written the way a student would write them, independently of pe_lib; each
wrong one plants one mistake. Every code of the checker's catalogue has a planted case (see
``test_every_mistake_has_a_planted_case``).
"""

from __future__ import annotations

import math

import pytest
import torch
from checker_failures import failing_with
from torch import nn

import pe_lib
from pe_lib.checks import CheckFailed, Note, check_positional_encoding_module

fails_with = failing_with(check_positional_encoding_module)


def sinusoid(seq_len, d_model, base=10000.0):
    """(seq_len, d_model) float64, any d_model: pos / base ** (2i / d)."""
    pos = torch.arange(seq_len, dtype=torch.float64)[:, None]
    angle = pos / base ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    pe = torch.zeros(seq_len, d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle[:, : d_model // 2])
    return pe


class ArticlePositionalEncoding(nn.Module):
    """The article's listing (its PyTorch section), typed in as a student would."""

    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.1):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)

        pe = torch.zeros(max_len, d_model)
        pos = torch.arange(max_len).unsqueeze(1)  # (max_len, 1)
        div = torch.exp(
            torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model)
        )  # (d_model/2,)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (batch, seq_len, d_model)
        x = x + self.pe[: x.size(1)]
        return self.dropout(x)


class ArticleOneRowShort(ArticlePositionalEncoding):
    """The article's listing with its table one row short (positions 0 .. max_len - 2)."""

    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.1):
        super().__init__(d_model, max_len - 1, dropout)


class OnTheFly(nn.Module):
    """A correct module: the table computed for each length, cast to x's dtype."""

    def __init__(self, d_model, dropout=0.1):
        super().__init__()
        self.d_model = d_model
        self.dropout = nn.Dropout(dropout)

    def table(self, seq_len):
        return sinusoid(seq_len, self.d_model)

    def forward(self, x):
        return self.dropout(x + self.table(x.size(1)).to(x.dtype))


class CachedTable(nn.Module):
    """A correct module with a table of max_len rows in a buffer of shape ``shape(max_len, d)``."""

    layout = "2d"

    def __init__(self, d_model, max_len=64):
        super().__init__()
        self.d_model, self.max_len = d_model, max_len
        self.register_buffer("pe", self.shaped(self.build(max_len, d_model)), persistent=False)

    def build(self, max_len, d_model):
        return sinusoid(max_len, d_model)

    def shaped(self, table):
        return {"2d": table, "batch": table[None], "tutorial": table[:, None]}[self.layout]

    def rows(self, seq_len):
        """(seq_len, d_model), from whichever buffer shape."""
        pe = self.pe
        return {"2d": pe[:seq_len], "batch": pe[0, :seq_len], "tutorial": pe[:seq_len, 0]}[
            self.layout
        ]

    def forward(self, x):
        if x.size(1) > self.max_len:
            return x + sinusoid(x.size(1), self.d_model).to(x.dtype)
        return x + self.rows(x.size(1)).to(x.dtype)


class BatchShapedTable(CachedTable):
    layout = "batch"


class TutorialShapedTable(CachedTable):
    """The PyTorch tutorial's buffer, shape (max_len, 1, d_model), used batch-first."""

    layout = "tutorial"


class TutorialRowsFrom20Zero(TutorialShapedTable):
    def build(self, max_len, d_model):
        table = sinusoid(max_len, d_model)
        table[20:] = 0.0  # the loop that fills the table stops early
        return table


class TutorialSlicedOnItsSizeOneAxis(TutorialShapedTable):
    """pe[0, :seq_len] on a (max_len, 1, d_model) buffer: row 0 only, broadcast."""

    def rows(self, seq_len):
        return self.pe[0, :seq_len]


class TutorialSequenceFirst(TutorialShapedTable):
    """The tutorial's forward, x + pe[:x.size(0)], on batch-first input."""

    def forward(self, x):
        return x + self.pe[: x.size(0)].to(x.dtype)


class OneRowShort(CachedTable):
    """The table has max_len - 1 rows, so seq_len == max_len fails."""

    def build(self, max_len, d_model):
        return sinusoid(max_len - 1, d_model)

    def forward(self, x):
        return x + self.pe[: x.size(1)].to(x.dtype)


class WrapsAround(CachedTable):
    """Beyond max_len the rows start again from position 0: silently wrong."""

    def forward(self, x):
        index = torch.arange(x.size(1)) % self.max_len
        return x + self.pe[index].to(x.dtype)


class OddWiderTable(CachedTable):
    """Odd d_model: the table built for d_model + 1 columns and cut."""

    def build(self, max_len, d_model):
        return sinusoid(max_len, d_model + 1)[:, :d_model]


class FrozenTable(CachedTable):
    """A fixed table that refuses lengths beyond max_len."""

    def forward(self, x):
        if x.size(1) > self.max_len:
            raise ValueError(f"seq_len {x.size(1)} > max_len {self.max_len}")
        return x + self.pe[: x.size(1)].to(x.dtype)


class Multiplied(OnTheFly):
    def forward(self, x):
        return self.dropout(x * self.table(x.size(1)).to(x.dtype))


class ScaledByRootD(OnTheFly):
    def forward(self, x):
        return self.dropout(x * math.sqrt(self.d_model) + self.table(x.size(1)).to(x.dtype))


class ReturnsTable(OnTheFly):
    def forward(self, x):
        return self.dropout(self.table(x.size(1)).to(x.dtype).expand_as(x).clone())


class ForgetsToAdd(OnTheFly):
    def forward(self, x):
        y = x + self.table(x.size(1)).to(x.dtype)  # noqa: F841 (the planted mistake)
        return self.dropout(x)


class AddsSquare(OnTheFly):
    def forward(self, x):
        return self.dropout(x + x * x + self.table(x.size(1)).to(x.dtype))


class SequenceFirst(OnTheFly):
    """The PyTorch tutorial's layout: positions along dim 0."""

    def forward(self, x):
        return self.dropout(x + self.table(x.size(0)).to(x.dtype)[:, None, :])


class PerBatchItem(OnTheFly):
    def forward(self, x):
        scale = torch.arange(1, x.size(0) + 1, dtype=x.dtype)[:, None, None]
        return self.dropout(x + scale * self.table(x.size(1)).to(x.dtype))


class WrongBase(OnTheFly):
    def table(self, seq_len):
        return sinusoid(seq_len, self.d_model, base=1000.0)


class SlightlyOff(OnTheFly):
    def table(self, seq_len):
        return sinusoid(seq_len, self.d_model) + 1e-3


class DropoutAlways(OnTheFly):
    def forward(self, x):
        return nn.functional.dropout(x + self.table(x.size(1)).to(x.dtype), 0.1, training=True)


class DropoutUnused(OnTheFly):
    def forward(self, x):
        return x + self.table(x.size(1)).to(x.dtype)


class DropoutBeforeAdding(OnTheFly):
    def forward(self, x):
        return self.dropout(x) + self.table(x.size(1)).to(x.dtype)


class NoDropoutAtAll(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.d_model = d_model

    def forward(self, x):
        return x + sinusoid(x.size(1), self.d_model).to(x.dtype)


class InPlace(OnTheFly):
    def forward(self, x):
        x += self.table(x.size(1)).to(x.dtype)
        return self.dropout(x)


class ReturnsTableOnly(OnTheFly):
    def forward(self, x):
        return self.table(x.size(1)).to(x.dtype)


class ReturnsTuple(OnTheFly):
    def forward(self, x):
        return (super().forward(x),)


class Raises(OnTheFly):
    def forward(self, x):
        raise RuntimeError("not implemented yet")


class TableAsParameter(nn.Module):
    def __init__(self, d_model, max_len=5000):
        super().__init__()
        self.pe = nn.Parameter(sinusoid(max_len, d_model).float())

    def forward(self, x):
        return x + self.pe[: x.size(1)]


class TableAsAttribute(nn.Module):
    def __init__(self, d_model, max_len=5000):
        super().__init__()
        self.pe = sinusoid(max_len, d_model).float()  # not registered

    def forward(self, x):
        return x + self.pe[: x.size(1)]


class FixedTableNoDtypeCast(OnTheFly):
    def forward(self, x):
        return self.dropout(x + self.table(x.size(1)).float())


class NormalisedSum(OnTheFly):
    """BERT's embedding layer normalises the sum; the encoding alone does not. Its LayerNorm
    is a buffer-free module whose weight and bias require grad but are no table."""

    def __init__(self, d_model, dropout=0.1):
        super().__init__(d_model, dropout)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x):
        return self.dropout(self.norm(x + self.table(x.size(1)).to(x.dtype)))


class TrainableScale(OnTheFly):
    """The right output while the scale is 1, which an optimizer would change."""

    def __init__(self, d_model, dropout=0.1):
        super().__init__(d_model, dropout)
        self.scale = nn.Parameter(torch.ones(()))

    def forward(self, x):
        return self.dropout(x + self.scale * self.table(x.size(1)).to(x.dtype))


class Float64TableNoCast(nn.Module):
    """A float64 table added without a cast: float32 input comes out float64."""

    def __init__(self, d_model, max_len=64):
        super().__init__()
        self.register_buffer("pe", sinusoid(max_len, d_model))

    def forward(self, x):
        seq_len = x.size(1)
        pe = self.pe if seq_len <= len(self.pe) else sinusoid(seq_len, self.pe.shape[1])
        return x + pe[:seq_len]


class DropoutNeverBuilt(nn.Module):
    """Takes dropout=0.1, as the article's module does, and keeps no trace of it."""

    def __init__(self, d_model, max_len=64, dropout=0.1):
        super().__init__()
        self.d_model = d_model
        self.register_buffer("pe", sinusoid(max_len, d_model))

    def forward(self, x):
        return x + self.pe[: x.size(1)].to(x.dtype)


class KeywordOnly(OnTheFly):
    def __init__(self, *, d_model, dropout=0.0):
        super().__init__(d_model, dropout)


class BrokenConstructor(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        raise ZeroDivisionError("oops")


class NeedsTwoArguments(nn.Module):
    def __init__(self, d_model, vocabulary):
        super().__init__()


# (module or class, d_model, mistake, words, strict)
PLANTED = [
    (Raises, 16, "exception", "not implemented yet", False),
    (BrokenConstructor, 16, "exception", "BrokenConstructor(16) raised ZeroDivisionError", False),
    (NeedsTwoArguments, 16, "exception", "Could not build NeedsTwoArguments(16)", False),
    (ReturnsTableOnly, 16, "shape", "add it to x", False),
    (ReturnsTuple, 16, "shape", "returned a tuple", False),
    (InPlace, 16, "in_place", "x = x + pe", False),
    (DropoutAlways, 16, "dropout_in_eval", "eval", False),
    (TableAsParameter, 16, "trainable_table", "'pe'", False),
    (pe_lib.LearnedPositionalEncoding, 16, "trainable_table", "'weight'", False),
    (TableAsAttribute, 16, "not_buffer", "register_buffer", False),
    (NormalisedSum, 16, "normalised", "module(x) is LayerNorm(x + PE)", False),
    (TrainableScale, 16, "trainable_parameter", "parameter 'scale' of shape ()", False),
    (ForgetsToAdd, 16, "table_not_added", "never added", False),
    (Multiplied, 16, "not_added", "x * PE", False),
    (ScaledByRootD, 16, "not_added", "sqrt(d_model)", False),
    (ReturnsTable, 16, "not_added", "table itself", False),
    (AddsSquare, 16, "not_added", "depends on x", False),
    (SequenceFirst, 16, "position_axis", "(seq_len, batch, d_model)", False),
    (TutorialSequenceFirst, 16, "position_axis", "(seq_len, batch, d_model)", False),
    (TutorialSlicedOnItsSizeOneAxis, 16, "one_position", "(max_len, 1, d_model)", False),
    (TutorialSlicedOnItsSizeOneAxis, 9, "one_position", "pe[:seq_len, 0]", False),
    (PerBatchItem, 16, "wrong_table", "different batch items", False),
    (WrongBase, 16, "wrong_table", "'base'", False),
    (WrongBase, 9, "wrong_table", "'base'", False),
    (SlightlyOff, 16, "wrong_table", "", False),
    (OneRowShort, 16, "short_table", "seq_len=64", False),
    (OneRowShort, 9, "short_table", "max_len=64", False),
    (ArticleOneRowShort, 16, "short_table", "seq_len=5000", False),
    (TutorialRowsFrom20Zero, 16, "wrong_rows", "from position 20 on (they are zeros)", False),
    (TutorialRowsFrom20Zero, 9, "wrong_rows", "up to position 19", False),
    (DropoutUnused, 16, "no_dropout_in_train", "self.dropout(x + pe)", False),
    (DropoutBeforeAdding, 16, "dropout_not_on_sum", "dropout(x + PE)", False),
    (DropoutNeverBuilt, 16, "dropout_never_built", "takes dropout=0.1 by default", False),
    (WrapsAround, 16, "fixed_length", "wrong values from position 64 on", False),
    (FrozenTable, 16, "fixed_length", "seq_len=80", True),
    (ArticlePositionalEncoding, 8, "fixed_length", "5016", True),
    (FixedTableNoDtypeCast, 16, "dtype", "x.dtype", True),
    (Float64TableNoCast, 16, "dtype", "adding the module's float64 table 'pe'", True),
]


@pytest.mark.parametrize(
    ("cls", "d_model", "mistake", "words", "strict"),
    PLANTED,
    ids=[f"{c.__name__}-d{d}-{m}" for c, d, m, _, _ in PLANTED],
)
def test_planted_mistake_is_named(cls, d_model, mistake, words, strict) -> None:
    error = fails_with(mistake, cls, d_model=d_model, strict=strict)
    assert words in str(error)


def test_a_norm_after_the_addition_is_not_called_a_trainable_table() -> None:
    """Its weight and bias require grad but are not the table: neither the mistake nor the
    fix (register_buffer) of a trainable table applies."""
    error = fails_with("normalised", NormalisedSum, d_model=16)
    assert "'norm'" in str(error) and "register_buffer" not in str(error)
    frozen = NormalisedSum(16)
    frozen.norm.requires_grad_(False)
    fails_with("normalised", frozen)
    # without the affine weights too
    plain = NormalisedSum(16)
    plain.norm = nn.LayerNorm(16, elementwise_affine=False)
    fails_with("normalised", plain)


def test_a_float64_table_without_a_cast_is_noted_for_float32_input_naming_it() -> None:
    notes = check_positional_encoding_module(Float64TableNoCast, d_model=16)
    assert [note.mistake for note in notes] == ["dtype", "dtype"]
    float32, bfloat16 = (note.message for note in notes)
    assert "For x of dtype float32, module(x) returned float64" in float32
    assert "For x of dtype bfloat16, module(x) returned float64" in bfloat16
    for message in (float32, bfloat16):
        assert "float64 table 'pe'" in message and "float32 table" not in message


def test_a_table_computed_on_the_fly_is_described_as_such() -> None:
    notes = check_positional_encoding_module(FixedTableNoDtypeCast, d_model=16)
    assert [note.mistake for note in notes] == ["dtype"]  # float64 input stays float64
    assert "For x of dtype bfloat16, module(x) returned float32" in notes[0].message
    assert "such as a table computed in float32" in notes[0].message


def test_an_unused_dropout_argument_is_named_for_an_instance_too() -> None:
    error = fails_with("dropout_never_built", DropoutNeverBuilt(16))
    assert "DropoutNeverBuilt.__init__ takes dropout=0.1" in str(error)
    # p = 0 by default is a legitimate choice, kept or not
    assert check_positional_encoding_module(KeywordOnly, d_model=16, strict=True) == ()


def test_every_mistake_has_a_planted_case() -> None:
    """Planted here, and in test_false_passes.py what chapter 5's exercise forbids."""
    in_false_passes = {"precision", "persistent_buffer", "dropout_ignored"}
    assert {mistake for _, _, mistake, _, _ in PLANTED} | in_false_passes == set(
        check_positional_encoding_module.mistakes
    )


# The article's listing and the other correct modules pass ------------------------------------


@pytest.mark.parametrize("d_model", [8, 32])
def test_the_articles_listing_passes_with_notes(d_model: int) -> None:
    """Chapter 5's homework is the article's listing: it passes; its limits are notes."""
    notes = check_positional_encoding_module(ArticlePositionalEncoding, d_model=d_model)
    assert [note.mistake for note in notes] == ["fixed_length", "dtype"]
    assert all(isinstance(note, Note) and "Fix: " in note.message for note in notes)
    assert "5016" in notes[0].message and "bfloat16" in notes[1].message


def test_the_articles_listing_fails_when_strict() -> None:
    error = fails_with("fixed_length", ArticlePositionalEncoding, d_model=8, strict=True)
    assert "on the fly" in str(error) and isinstance(error.__cause__, RuntimeError)


@pytest.mark.parametrize("cls", [CachedTable, BatchShapedTable, TutorialShapedTable])
@pytest.mark.parametrize("d_model", [16, 9])
@pytest.mark.parametrize("strict", [False, True])
def test_tables_of_every_common_shape_pass(cls, d_model: int, strict: bool) -> None:
    assert check_positional_encoding_module(cls, d_model=d_model, strict=strict) == ()


@pytest.mark.parametrize("cls", [OnTheFly, NoDropoutAtAll, KeywordOnly])
def test_correct_student_modules_pass(cls) -> None:
    assert check_positional_encoding_module(cls, d_model=8, strict=True) == ()


def test_pe_lib_modules_pass_strictly() -> None:
    check = check_positional_encoding_module
    assert check(pe_lib.SinusoidalPositionalEncoding, d_model=16, strict=True) == ()
    assert check(pe_lib.PositionalEncoding(24, max_len=50), strict=True) == ()
    assert check(pe_lib.SinusoidalPositionalEncoding(9, dropout=0.0), strict=True) == ()


def test_another_base() -> None:
    module = pe_lib.SinusoidalPositionalEncoding(16, max_len=32, base=500.0)
    assert check_positional_encoding_module(module, base=500.0, strict=True) == ()
    error = fails_with("wrong_table", module)  # checked against the default base 10000
    assert error.__cause__ is not None and error.__cause__.mistake == "base"
    fails_with("wrong_table", OnTheFly(16), base=500.0)


def test_odd_d_model_cut_from_a_wider_table_is_named_not_a_base() -> None:
    error = fails_with("wrong_table", OddWiderTable, d_model=9)
    assert isinstance(error.__cause__, CheckFailed)
    assert error.__cause__.mistake == "odd_d_model"
    assert "'base'" not in str(error)


def test_refusing_long_inputs_is_a_note_by_default() -> None:
    notes = check_positional_encoding_module(FrozenTable(8), d_model=8)
    assert [note.mistake for note in notes] == ["fixed_length"]
    assert "it was built for 64 positions" in notes[0].message
    notes = check_positional_encoding_module(FixedTableNoDtypeCast, d_model=8)
    assert [note.mistake for note in notes] == ["dtype"]


def test_an_instance_is_probed_at_its_own_length() -> None:
    """An instance built with max_len=30 is checked at 30 positions, not the class default."""
    notes = check_positional_encoding_module(ArticlePositionalEncoding(8, max_len=30), d_model=8)
    assert [note.mistake for note in notes] == ["fixed_length", "dtype"]
    assert "seq_len=46" in notes[0].message
    fails_with("short_table", OneRowShort(8, max_len=30), d_model=8)


# The checker leaves the module alone ---------------------------------------------------------


def test_training_modes_parameters_and_rng_are_left_alone() -> None:
    module = pe_lib.LearnedPositionalEncoding(8, max_len=32)
    module.train()
    module.dropout.eval()  # mixed modes, restored exactly
    weight = module.weight.detach().clone()
    rng_state = torch.get_rng_state()
    with pytest.raises(CheckFailed):
        check_positional_encoding_module(module)
    assert module.training and not module.dropout.training
    assert torch.equal(module.weight, weight)
    assert torch.equal(torch.get_rng_state(), rng_state)


def test_student_errors_are_reported_as_the_call_and_chained() -> None:
    error = fails_with("exception", Raises, d_model=8)
    assert "module(x) with x of shape (2, 12, 8) (eval mode) raised RuntimeError" in str(error)
    assert isinstance(error.__cause__, RuntimeError)
    error = fails_with("exception", BrokenConstructor)
    assert isinstance(error.__cause__, ZeroDivisionError)


# Bad arguments -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "words"),
    [
        ((lambda x: x,), {}, TypeError, "module_or_class"),
        ((int,), {}, TypeError, "module_or_class"),
        ((nn.Identity(),), {}, ValueError, "d_model"),
        ((pe_lib.SinusoidalPositionalEncoding(8),), {"d_model": 16}, ValueError, "d_model"),
        ((OnTheFly,), {"d_model": 0}, ValueError, "d_model"),
        ((OnTheFly,), {"d_model": 2.5}, TypeError, "d_model"),
        ((OnTheFly,), {"d_model": True}, TypeError, "d_model"),
        ((OnTheFly,), {"d_model": 10**6}, ValueError, "d_model"),
        ((OnTheFly,), {"base": 1.0}, ValueError, "base"),
        ((OnTheFly,), {"base": "10000"}, TypeError, "base"),
        ((OnTheFly,), {"strict": "yes"}, TypeError, "strict"),
    ],
)
def test_bad_arguments_name_the_argument(args, kwargs, error, words) -> None:
    with pytest.raises(error, match=words):
        check_positional_encoding_module(*args, **kwargs)
