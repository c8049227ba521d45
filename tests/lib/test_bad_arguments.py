"""Bad arguments to pe_lib's public functions and constructors.

Two properties, for every bad-input path:

* what each message says: the exception type, and a message that names the argument, says
  what is allowed ("must ...") and repeats the value given (the tables near the top);
* that nothing escapes as anything but TypeError or ValueError: every public function and
  constructor is called with each kind of bad value in turn (sizes and positions that are huge,
  negative, bool, float, NaN or not numbers; floats that are NaN or infinite; tensors that are
  empty, of the wrong dtype or shape; devices that do not exist), and each call either works
  or raises TypeError/ValueError, never an OverflowError, IndexError, AssertionError or a
  RuntimeError from inside torch (the tables at the end).
"""

from __future__ import annotations

import math
import re
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from pe_lib import (
    LearnedPositionalEncoding,
    PositionalEncoding,
    SelfAttention,
    SinusoidalPositionalEncoding,
    angular_frequencies,
    relative_shift_matrix,
    scaled_dot_product_attention,
    sinusoidal_table,
    wavelengths,
)
from pe_lib.encodings.alibi import alibi_bias, alibi_slopes
from pe_lib.experiments.toy import ShiftedCopyModel, evaluate, shifted_copy_batch, train
from pe_lib.rope import RotaryEmbedding, apply_rope, rope_angles
from pe_lib.rope.scaling import resolve_scaling, rope_frequencies
from pe_lib.viz.plotting import (
    plot_attention_weights,
    plot_dimensions,
    plot_dot_product_vs_distance,
    plot_encoding_heatmap,
    plot_wavelengths,
)
from pe_lib.viz.widgets import draw_frequency_view, parse_dims

# Bad values for each kind of argument, with the exception each must raise.
BAD_VALUES = {
    "size": [
        (0, ValueError),
        (-3, ValueError),
        (4.0, TypeError),
        (True, TypeError),
        ("8", TypeError),
        (None, TypeError),
        (np.float64(2.0), TypeError),
        (2**53, ValueError),  # beyond float64's exact integers
        (10**30, ValueError),
    ],
    "optional size": [(0, ValueError), (2.5, TypeError), (False, TypeError)],  # None allowed
    "nonnegative": [
        (-1, ValueError),
        (2.0, TypeError),
        (False, TypeError),
        ("0", TypeError),
        (2**53, ValueError),
        (2**60, ValueError),
        (10**30, ValueError),
    ],
    "int": [
        (1.5, TypeError),
        (True, TypeError),
        ("1", TypeError),
        (None, TypeError),
        (2**53, ValueError),
        (-(2**53), ValueError),
        (10**20, ValueError),
    ],
    "base": [
        (1.0, ValueError),
        (1, ValueError),
        (0.5, ValueError),
        (-10000.0, ValueError),
        (math.nan, ValueError),
        (math.inf, ValueError),
        (True, TypeError),
        ("10000", TypeError),
        (None, TypeError),
    ],
    "dropout": [
        (1.0, ValueError),
        (1, ValueError),
        (-0.1, ValueError),
        (1.5, ValueError),
        (math.nan, ValueError),
        (True, TypeError),
        ("0.1", TypeError),
        (None, TypeError),
    ],
    "layout": [
        ("Interleaved", ValueError),
        ("concatenated", ValueError),
        ("", ValueError),
        (None, TypeError),
        (0, TypeError),
    ],
    "dtype": [
        (torch.int64, TypeError),
        (torch.bool, TypeError),
        ("float32", TypeError),
        (np.float32, TypeError),
    ],
}

# (callable, valid arguments, {argument: kind of bad value})
TARGETS = {
    "sinusoidal_table": (
        sinusoidal_table,
        {"num_positions": 4, "d_model": 6},
        {
            "num_positions": "size",
            "d_model": "size",
            "base": "base",
            "offset": "nonnegative",
            "layout": "layout",
            "dtype": "dtype",
        },
    ),
    "angular_frequencies": (
        angular_frequencies,
        {"d_model": 6},
        {"d_model": "size", "base": "base"},
    ),
    "wavelengths": (wavelengths, {"d_model": 6}, {"d_model": "size", "base": "base"}),
    "relative_shift_matrix": (
        relative_shift_matrix,
        {"k": 1, "d_model": 6},
        {"k": "int", "d_model": "size", "base": "base", "layout": "layout", "dtype": "dtype"},
    ),
    "SinusoidalPositionalEncoding": (
        SinusoidalPositionalEncoding,
        {"d_model": 6},
        {"d_model": "size", "max_len": "size", "dropout": "dropout", "base": "base"},
    ),
    "PositionalEncoding": (
        PositionalEncoding,
        {"d_model": 6},
        {"d_model": "size", "max_len": "size", "dropout": "dropout"},
    ),
    "LearnedPositionalEncoding": (
        LearnedPositionalEncoding,
        {"d_model": 6},
        {"d_model": "size", "max_len": "size", "dropout": "dropout"},
    ),
    "SelfAttention": (SelfAttention, {"d_model": 6}, {"d_model": "size", "d_k": "optional size"}),
}

CASES = [
    pytest.param(target, valid, argument, value, error, id=f"{name}-{argument}={value!r}")
    for name, (target, valid, arguments) in TARGETS.items()
    for argument, kind in arguments.items()
    for value, error in BAD_VALUES[kind]
]


@pytest.mark.parametrize(("target", "valid", "argument", "value", "error"), CASES)
def test_bad_argument(target, valid, argument, value, error):
    message = rf"{argument} must .*{re.escape(repr(value))}"
    with pytest.raises(error, match=message):
        target(**(valid | {argument: value}))


MODULES = {
    "sinusoidal": lambda: SinusoidalPositionalEncoding(6, max_len=10),
    "learned": lambda: LearnedPositionalEncoding(6, max_len=10),
    "attention": lambda: SelfAttention(6),
}

BAD_X = [
    pytest.param(
        [[0.0] * 6], TypeError, r"x must be a torch.Tensor .*\[\[0\.0, .*type list", id="list"
    ),
    pytest.param(
        np.zeros((1, 2, 6)), TypeError, r"x must be a torch.Tensor.*ndarray", id="ndarray"
    ),
    pytest.param(
        torch.zeros(1, 2, 6, dtype=torch.long), TypeError, r"x must .*floating.*int64", id="long"
    ),
    pytest.param(
        torch.zeros(1, 2, 6, dtype=torch.bool), TypeError, r"x must .*floating.*bool", id="bool"
    ),
    pytest.param(torch.zeros(2, 6), ValueError, r"x must have shape .*got shape \(2, 6\)", id="2d"),
    pytest.param(
        torch.zeros(1, 1, 2, 6), ValueError, r"x must .*got shape \(1, 1, 2, 6\)", id="4d"
    ),
    pytest.param(
        torch.zeros(1, 2, 5),
        ValueError,
        r"x must .*d_model=6.*got shape \(1, 2, 5\)",
        id="last-dim",
    ),
    pytest.param(
        torch.zeros(1, 2, 7),
        ValueError,
        r"x must .*d_model=6.*got shape \(1, 2, 7\)",
        id="last-dim-7",
    ),
]


@pytest.mark.parametrize("module_name", MODULES)
@pytest.mark.parametrize(("x", "error", "match"), BAD_X)
def test_bad_x(module_name, x, error, match):
    with pytest.raises(error, match=match):
        MODULES[module_name]()(x)


@pytest.mark.parametrize("module_name", ["sinusoidal", "learned"])
@pytest.mark.parametrize(("offset", "error"), BAD_VALUES["nonnegative"])
def test_bad_offset(module_name, offset, error):
    with pytest.raises(error, match=rf"offset must .*{re.escape(repr(offset))}"):
        MODULES[module_name]()(torch.zeros(1, 2, 6), offset=offset)


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        ({"seq_len": 0}, ValueError, r"seq_len must .*got 0"),
        ({"seq_len": 2.0}, TypeError, r"seq_len must .*got 2\.0"),
        ({"seq_len": 2, "offset": -4}, ValueError, r"offset must .*got -4"),
        ({"seq_len": 2, "offset": True}, TypeError, r"offset must .*got True"),
    ],
)
def test_bad_encoding_window(arguments, error, match):
    with pytest.raises(error, match=match):
        SinusoidalPositionalEncoding(6, max_len=10).encoding(**arguments)


@pytest.mark.parametrize("module", [SinusoidalPositionalEncoding(6), LearnedPositionalEncoding(6)])
def test_empty_sequence_is_rejected_by_the_callers_name(module):
    """An empty sequence is named as the caller's ``x`` with its shape, not as ``seq_len``."""
    with pytest.raises(ValueError, match=r"x must hold at least one position.*\(2, 0, 6\)"):
        module(torch.zeros(2, 0, 6))


#: Huge positions and sizes: float64 holds every integer only up to 2**53, so a table there
#: would repeat rows.
HUGE = [
    (
        lambda: sinusoidal_table(4, 2, offset=2**53 + 1),
        ValueError,
        r"offset must be a non-negative int at most 2\*\*53 - 1.*got 9007199254740993",
    ),
    (
        lambda: sinusoidal_table(4, 2, offset=10**30),
        ValueError,
        r"offset .*2\*\*53 - 1.*got 1000",
    ),
    (
        lambda: sinusoidal_table(4, 2, offset=2**53 - 2),
        ValueError,
        r"offset \+ num_positions - 1 \(the last position\) must be at most 2\*\*53 - 1.*"
        r"offset=9007199254740990 and num_positions=4",
    ),
    (lambda: sinusoidal_table(4, 2, device="gpu7"), ValueError, r"device must .*'gpu7'"),
    (lambda: sinusoidal_table(4, 2, device=0), TypeError, r"device must .*got 0"),
    (
        lambda: sinusoidal_table(4, 2, device="cuda:99"),
        ValueError,
        r"device must be a device available here, got 'cuda:99'",
    ),
    (
        lambda: sinusoidal_table(2**40, 2**40),
        ValueError,
        r"num_positions \* d_model must be at most 2\*\*63 - 1",
    ),
    (
        lambda: relative_shift_matrix(10**20, 16),
        ValueError,
        r"k must be an int of absolute value at most 2\*\*53 - 1.*got 100000000000000000000",
    ),
    (
        lambda: SinusoidalPositionalEncoding(4)(torch.zeros(1, 3, 4), offset=2**60),
        ValueError,
        r"offset must be a non-negative int at most 2\*\*53 - 1.*got 1152921504606846976",
    ),
    (
        lambda: SinusoidalPositionalEncoding(4)(torch.zeros(1, 3, 4), offset=2**53 - 2),
        ValueError,
        r"offset \+ x.shape\[1\] - 1 \(the last position\).*offset=9007199254740990",
    ),
    (
        lambda: SinusoidalPositionalEncoding(4).encoding(3, offset=2**53 - 2),
        ValueError,
        r"offset \+ seq_len - 1 \(the last position\)",
    ),
    (
        lambda: LearnedPositionalEncoding(4)(torch.zeros(1, 3, 4), offset=2**60),
        ValueError,
        r"offset must be a non-negative int at most 2\*\*53 - 1",
    ),
]
#: RoPE's arguments.
ROPE = [
    (
        lambda: apply_rope(torch.randn(2, 5, 7)),
        ValueError,
        r"x must have an even head_dim.*head_dim=7",
    ),
    (
        lambda: apply_rope(torch.ones(2, 5, 8, dtype=torch.int64)),
        TypeError,
        r"x must have a floating dtype.*torch.int64",
    ),
    (lambda: apply_rope([[1.0, 2.0]]), TypeError, r"x must be a torch.Tensor, got list"),
    (
        lambda: apply_rope(torch.randn(8)),
        ValueError,
        r"x must have shape \(\.\.\., seq_len, head_dim\).*\(8,\)",
    ),
    (
        lambda: apply_rope(torch.randn(5, 8), torch.arange(5.0)),
        TypeError,
        r"positions must have dtype torch.int64.*torch.float32",
    ),
    (
        lambda: apply_rope(torch.randn(5, 8), torch.arange(5, dtype=torch.int32)),
        TypeError,
        r"positions.*torch.int32",
    ),
    (
        lambda: apply_rope(torch.randn(5, 8), [0, 1, 2, 3, 4]),
        TypeError,
        r"positions must be an int64 torch.Tensor.*list",
    ),
    (
        lambda: apply_rope(torch.randn(5, 8), torch.arange(6)),
        ValueError,
        r"positions must have shape \(seq_len,\).*got shape \(6,\)",
    ),
    (
        lambda: apply_rope(torch.randn(2, 3, 5, 8), torch.zeros(2, 5, dtype=torch.int64)),
        ValueError,
        r"positions must have shape \(5,\) or \(2, 3, 5\).*got shape \(2, 5\)",
    ),
    (
        lambda: apply_rope(torch.randn(5, 8), torch.tensor([0, 1, -1, 2, 3])),
        ValueError,
        r"positions must be non-negative.*-1",
    ),
    (lambda: apply_rope(torch.randn(5, 8), torch.tensor(3)), ValueError, r"positions.*0-d"),
    (
        lambda: apply_rope(torch.randn(5, 8), layout="concat"),
        ValueError,
        r"layout must be one of 'interleaved', 'half', got 'concat'",
    ),
    (
        lambda: apply_rope(torch.randn(5, 8), layout=None),
        TypeError,
        r"layout must be one of.*None",
    ),
    (
        lambda: apply_rope(torch.randn(5, 8), base=1.0),
        ValueError,
        r"base must be a finite number > 1.*1\.0",
    ),
    (
        lambda: apply_rope(torch.randn(5, 8), base=-3),
        ValueError,
        r"base must be a finite number > 1.*-3",
    ),
    (
        lambda: apply_rope(torch.randn(5, 8), base="big"),
        TypeError,
        r"base must be a real number > 1.*'big'",
    ),
    (
        lambda: apply_rope(torch.randn(2, 8), torch.tensor([0, 2**53])),
        ValueError,
        r"positions must be at most 2\*\*53 - 1.*9007199254740992",
    ),
    (
        lambda: apply_rope(
            torch.randn(2, 8), torch.tensor([0.0, float("nan")], dtype=torch.float64)
        ),
        ValueError,
        r"positions must be finite",
    ),
    (
        lambda: apply_rope(torch.randn(2, 8), torch.tensor([0.0, -0.5], dtype=torch.float64)),
        ValueError,
        r"positions must be non-negative.*-0\.5",
    ),
    (
        lambda: RotaryEmbedding(8)(torch.randn(2, 8), torch.randn(2, 8), offset=2**53 - 1),
        ValueError,
        r"offset \+ q.shape\[-2\] - 1 \(the last position\) must be at most 2\*\*53 - 1.*offset=9007199254740991",
    ),
    (lambda: RotaryEmbedding(8, max_len=0), ValueError, r"max_len must be a positive int.*0"),
    (
        lambda: RotaryEmbedding(8)(torch.randn(2, 8), torch.randn(2, 8), seq_len=1),
        ValueError,
        r"seq_len must be at least offset \+ q.shape\[-2\] = 2.*seq_len=1",
    ),
    (lambda: rope_angles(torch.arange(4), 5), ValueError, r"head_dim must be even.*5"),
    (
        lambda: rope_angles(torch.arange(4), 0),
        ValueError,
        r"head_dim must be a positive int.*0",
    ),
    (lambda: rope_angles(torch.arange(4.0), 4), TypeError, r"positions.*torch.float32"),
    (
        lambda: RotaryEmbedding(6, layout="rotate_half"),
        ValueError,
        r"layout must be one of.*'rotate_half'",
    ),
    (lambda: RotaryEmbedding(7), ValueError, r"head_dim must be even.*7"),
    (lambda: RotaryEmbedding(8, base=0.5), ValueError, r"base.*0\.5"),
    (
        lambda: RotaryEmbedding(8)(torch.randn(3, 8), torch.randn(4, 8)),
        ValueError,
        r"q and k must have the same seq_len.*\(3, 8\).*\(4, 8\)",
    ),
    (
        lambda: RotaryEmbedding(8)(torch.randn(3, 6), torch.randn(3, 6)),
        ValueError,
        r"q must have head_dim=8.*\(3, 6\)",
    ),
    (
        lambda: RotaryEmbedding(8)(torch.randn(3, 8), torch.randn(3, 8), offset=-1),
        ValueError,
        r"offset must be a non-negative int.*-1",
    ),
    (
        lambda: RotaryEmbedding(8)(torch.randn(3, 8), torch.randn(3, 8), offset=1.5),
        TypeError,
        r"offset must be an int, got 1\.5",
    ),
]
#: The edges of real configs (issue 27): each of these was accepted, or failed with a message
#: naming another argument or no argument at all.
_LINEAR = {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0}
_DYNAMIC = {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}
_LONGROPE_L1 = {
    "rope_type": "longrope",
    "factor": 4.0,
    "short_factor": [1.0] * 4,
    "long_factor": [2.0] * 4,
    "original_max_position_embeddings": 1,
    "rope_theta": 10000.0,
}
#: Llama 4's or SmolLM3's rope_parameters: one layer type without RoPE.
_NOPE_LAYERS = {"full_attention": _LINEAR, "no_rope": None}
_GIVE_LENGTH = (
    r"scaling=pe_lib\.rope\.scaling\.resolve_scaling\(entry, max_position_embeddings=\.\.\.\)"
)


def _meta(*shape: int) -> torch.Tensor:
    return torch.empty(*shape, device="meta")


def _check_rope_with_dynamic() -> None:
    from pe_lib.checks import check_rope

    check_rope(lambda x, positions: x, head_dim=8, scaling=_DYNAMIC)


EDGES = [
    (
        lambda: apply_rope(torch.randn(5, 8), seq_len="abc"),
        TypeError,
        r"seq_len must be an int, got 'abc'",
    ),
    (
        lambda: apply_rope(torch.randn(5, 8), seq_len=-5),
        ValueError,
        r"seq_len must be a positive int.*-5",
    ),
    (
        lambda: apply_rope(torch.randn(5, 8), scaling=_LINEAR, seq_len=1),
        ValueError,
        r"seq_len must be at least the last position \+ 1 = 5.*seq_len=1",
    ),
    (
        lambda: rope_angles(torch.arange(5), 8, seq_len=3),
        ValueError,
        r"seq_len must be at least the last position \+ 1 = 5.*seq_len=3",
    ),
    (
        lambda: apply_rope(
            torch.randn(2, 8), torch.tensor([0.0, 511.5], dtype=torch.float64), seq_len=512
        ),
        ValueError,
        r"seq_len must be at least the last position \+ 1 = 512\.5.*seq_len=512",
    ),
    (
        lambda: apply_rope(torch.randn(3, 0)),
        ValueError,
        r"x must have an even head_dim \(last dimension\) of at least 2.*head_dim=0",
    ),
    (
        lambda: RotaryEmbedding(8, base=1e4, scaling=_LONGROPE_L1),
        ValueError,
        r"scaling\['original_max_position_embeddings'\] must be at least 2 .*'longrope'.*got 1",
    ),
    (
        lambda: apply_rope(
            _meta(4, 8),
            _meta(4).long(),
            scaling=resolve_scaling(_DYNAMIC, max_position_embeddings=2),
        ),
        ValueError,
        r"apply_rope on the meta device needs seq_len=",
    ),
    (
        lambda: apply_rope(torch.randn(4, 8), out=torch.empty(1, 8).expand(4, 8)),
        ValueError,
        r"out must not hold two elements in one memory location.*\(4, 8\).*\(0, 1\)",
    ),
    (
        lambda: apply_rope(torch.randn(4, 8), scaling=_DYNAMIC),
        ValueError,
        r"'dynamic' needs the model's max_position_embeddings.*" + _GIVE_LENGTH,
    ),
    (
        lambda: RotaryEmbedding(8, scaling=_DYNAMIC),
        ValueError,
        r"'dynamic' needs the model's max_position_embeddings.*" + _GIVE_LENGTH,
    ),
    (
        lambda: rope_angles(torch.arange(4), 8, scaling=_DYNAMIC),
        ValueError,
        r"'dynamic' needs the model's max_position_embeddings.*" + _GIVE_LENGTH,
    ),
    (
        _check_rope_with_dynamic,
        ValueError,
        r"'dynamic' needs the model's max_position_embeddings.*" + _GIVE_LENGTH,
    ),
    (
        lambda: apply_rope(torch.randn(4, 8), scaling=_NOPE_LAYERS),
        ValueError,
        r"scaling holds one entry per layer type \('full_attention', 'no_rope'\).*layer_type=",
    ),
    (
        lambda: rope_frequencies(8, scaling=_NOPE_LAYERS, layer_type="no_rope"),
        ValueError,
        r"layer_type='no_rope' has no rotary embedding.*None.*'full_attention'",
    ),
    (
        lambda: rope_frequencies(
            128,
            scaling={
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192,
            },
        ),
        ValueError,
        r"scaling \(rope_type 'llama3'\) has no 'rope_theta' and base is None.*base=",
    ),
]
#: ALiBi's arguments.
ALIBI = [
    (lambda: alibi_slopes(0), ValueError, r"num_heads must be a positive int.*got 0"),
    (lambda: alibi_slopes(4.0), TypeError, r"num_heads must be an int, got 4\.0"),
    (lambda: alibi_slopes(True), TypeError, r"num_heads must be an int, got True"),
    (lambda: alibi_bias(0, 3, 3), ValueError, r"num_heads must be a positive int.*got 0"),
    (lambda: alibi_bias(4, 0, 3), ValueError, r"q_len must be a positive int.*got 0"),
    (lambda: alibi_bias(4, 3, -2), ValueError, r"k_len must be a positive int.*got -2"),
    (lambda: alibi_bias(4, 5, 3), ValueError, r"q_len must be at most k_len=3.*q_len=5"),
    (lambda: alibi_bias(4, 3, 3, causal=1), TypeError, r"causal must be True or False, got 1"),
    (
        lambda: alibi_bias(4, 3, 3, dtype=torch.int64),
        TypeError,
        r"dtype must be a floating torch.dtype.*torch.int64",
    ),
    (lambda: alibi_bias(4, 3, 3, device=0.5), TypeError, r"device must be.*float"),
]


@pytest.mark.parametrize(("call", "error", "match"), [*HUGE, *ROPE, *EDGES, *ALIBI])
def test_errors_name_the_argument_and_the_value(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_the_largest_exact_position_still_works():
    """Position 2**53 - 1 is the last one float64 holds: its row is the formula's."""
    last = 2**53 - 1
    row = sinusoidal_table(1, 2, offset=last, dtype=torch.float64)[0]
    expected = torch.tensor([math.sin(float(last)), math.cos(float(last))], dtype=torch.float64)
    torch.testing.assert_close(row, expected, rtol=0, atol=1e-15)
    before = sinusoidal_table(1, 2, offset=last - 1, dtype=torch.float64)[0]
    assert not torch.equal(row, before)


# --- nothing escapes as another exception ----------------------------------------------------

INTS = [0, -1, True, 2**53, 2**63, 10**30, 1.0, math.nan, None, "3", np.int64(3), torch.tensor(3)]
FLOATS = [
    math.nan,
    math.inf,
    -math.inf,
    0.0,
    -1.0,
    True,
    1e308,
    "x",
    None,
    torch.tensor(2.0),
    complex(2, 0),
]
TENSORS = [
    torch.zeros(2, 0, 8),
    torch.zeros(0, 3, 8),
    torch.zeros(2, 3, 8, dtype=torch.int64),
    torch.zeros(3, 8),
    torch.full((2, 3, 8), math.nan),
    torch.zeros(2, 3, 8, dtype=torch.complex64),
    torch.zeros(2, 3, 7),
    np.zeros((2, 3, 8)),
    [[1.0]],
    torch.zeros(2, 3, 8, dtype=torch.bool),
]
CALLS = {
    "sinusoidal_table": (
        lambda **k: sinusoidal_table(**{"num_positions": 3, "d_model": 4, **k}),
        {
            "num_positions": INTS,
            "d_model": INTS,
            "offset": INTS,
            "base": FLOATS,
            "layout": [1, "x", None],
            "dtype": [torch.int32, "float32", None, torch.complex64],
            "device": [1, "bogus", "cuda:99", "meta"],
        },
    ),
    "angular_frequencies": (
        lambda **k: angular_frequencies(**{"d_model": 4, **k}),
        {"d_model": INTS, "base": FLOATS},
    ),
    "relative_shift_matrix": (
        lambda **k: relative_shift_matrix(**{"k": 1, "d_model": 4, **k}),
        {
            "k": INTS + [-(10**30)],
            "d_model": INTS,
            "base": FLOATS,
            "layout": [1, "x"],
            "dtype": [torch.int64],
        },
    ),
    "alibi_slopes": (lambda **k: alibi_slopes(**{"num_heads": 4, **k}), {"num_heads": INTS}),
    "alibi_bias": (
        lambda **k: alibi_bias(**{"num_heads": 4, "q_len": 3, "k_len": 3, **k}),
        {
            "num_heads": INTS,
            "q_len": INTS,
            "k_len": INTS,
            "causal": [1, None],
            "dtype": [torch.int64],
            "device": [3, "nope"],
        },
    ),
    "Sinusoidal": (
        lambda **k: SinusoidalPositionalEncoding(**{"d_model": 8, **k}),
        {"d_model": INTS, "max_len": INTS, "dropout": FLOATS, "base": FLOATS},
    ),
    "Learned": (
        lambda **k: LearnedPositionalEncoding(**{"d_model": 8, **k}),
        {"d_model": INTS, "max_len": [0, 2**53, 10**30, True], "dropout": FLOATS},
    ),
    "Sinusoidal.forward": (
        lambda **k: SinusoidalPositionalEncoding(8, 16)(**{"x": torch.zeros(2, 3, 8), **k}),
        {"x": TENSORS, "offset": INTS},
    ),
    "Sinusoidal.encoding": (
        lambda **k: SinusoidalPositionalEncoding(8, 16).encoding(**{"seq_len": 3, **k}),
        {"seq_len": INTS, "offset": INTS},
    ),
    "Learned.forward": (
        lambda **k: LearnedPositionalEncoding(8, 16)(**{"x": torch.zeros(2, 3, 8), **k}),
        {"x": TENSORS, "offset": INTS},
    ),
    "SelfAttention": (
        lambda **k: SelfAttention(**{"d_model": 8, **k}),
        {"d_model": INTS, "d_k": INTS},
    ),
    "SelfAttention.forward": (
        lambda **k: SelfAttention(8)(**{"x": torch.zeros(2, 3, 8), **k}),
        {
            "x": TENSORS,
            "mask": [
                torch.zeros(3, 3, dtype=torch.bool),
                torch.ones(4, 3, dtype=torch.bool),
                1,
                torch.ones(3, 3),
            ],
        },
    ),
    "sdpa": (
        lambda **k: scaled_dot_product_attention(
            **{"q": torch.zeros(3, 4), "k": torch.zeros(3, 4), "v": torch.zeros(3, 4), **k}
        ),
        {
            "q": [
                torch.zeros(0, 4),
                torch.zeros(4),
                torch.zeros(3, 5),
                torch.zeros(3, 4, dtype=torch.int64),
                torch.zeros(2, 3, 4, dtype=torch.float64),
            ],
            "k": [torch.zeros(0, 4), torch.zeros(5, 4), torch.zeros(7, 3, 4)],
            "v": [torch.zeros(0, 4), torch.zeros(3, 0), torch.zeros(4, 4)],
            "mask": [torch.ones(3, 3), torch.ones(2, 2, dtype=torch.bool)],
            "bias": [torch.zeros(3, 3, dtype=torch.int64), torch.zeros(9), 1.0],
        },
    ),
    "plot_encoding_heatmap": (
        lambda **k: plot_encoding_heatmap(**{"table": torch.zeros(3, 4), **k}),
        {
            "table": [
                torch.zeros(0, 4),
                torch.zeros(3, 4, dtype=torch.complex64),
                "x",
                torch.zeros(3),
                np.zeros((3, 4), dtype=object),
            ],
            "cmap": ["nope", 1],
            "title": [1],
            "ax": [1],
        },
    ),
    "plot_dimensions": (
        lambda **k: plot_dimensions(**{"table": torch.zeros(3, 4), "dims": [0], **k}),
        {
            "dims": [[5], [], "01", [True], 3, [2**70], np.array([0.5])],
            "offset": INTS,
        },
    ),
    "plot_wavelengths": (
        lambda **k: plot_wavelengths(**{"d_model": 4, **k}),
        {"d_model": INTS, "base": FLOATS},
    ),
    "plot_dot": (
        lambda **k: plot_dot_product_vs_distance(**{"table": torch.zeros(3, 4), **k}),
        {"reference_positions": [[5], [], "0", [True], 3]},
    ),
    "plot_attention_weights": (
        lambda **k: plot_attention_weights(
            **{"weights": torch.zeros(2, 2), "tokens": ["a", "b"], **k}
        ),
        {
            "weights": [torch.zeros(3, 3), torch.zeros(2), "x"],
            "tokens": ["ab", [1, 2], None, ["a"]],
        },
    ),
    "draw_frequency_view": (
        lambda **k: draw_frequency_view(**{"d_model": 8, "dims": (0,), "num_positions": 5, **k}),
        {
            "d_model": INTS,
            "base": FLOATS,
            "dims": [(9,), (), "0", (True,), None],
            "num_positions": INTS,
        },
    ),
    "parse_dims": (
        lambda **k: parse_dims(**{"text": "0", "d_model": 8, **k}),
        {"text": [1, "", "a", "9", "0,0", "1e3", "99999999999999999999"], "d_model": INTS},
    ),
    "shifted_copy_batch": (
        lambda **k: shifted_copy_batch(**{"batch_size": 2, "seq_len": 4, **k}),
        {"batch_size": INTS, "seq_len": INTS, "vocab_size": INTS, "lag": INTS, "generator": [1]},
    ),
    "ShiftedCopyModel": (
        lambda **k: ShiftedCopyModel(**{"position": "none", "d_model": 8, "num_heads": 2, **k}),
        {
            "position": [1, "x", None, "rope "],
            "vocab_size": INTS,
            "d_model": [0, 7, True, 2**53],
            "num_heads": INTS,
            "max_len": INTS,
        },
    ),
    "model.forward": (
        lambda **k: ShiftedCopyModel("sinusoidal", d_model=8, num_heads=2, max_len=8)(
            **{"tokens": torch.zeros(2, 3, dtype=torch.int64), **k}
        ),
        {
            "tokens": [
                torch.zeros(2, 0, dtype=torch.int64),
                torch.zeros(0, 3, dtype=torch.int64),
                torch.zeros(2, 3),
                torch.full((2, 3), 99, dtype=torch.int64),
                torch.zeros(3, dtype=torch.int64),
                [[0]],
            ],
            "return_weights": [1, None],
        },
    ),
    "train": (
        lambda **k: train(
            **{
                "model": ShiftedCopyModel("none", d_model=8, num_heads=2),
                "steps": 1,
                "seq_len": 4,
                "batch_size": 2,
                **k,
            }
        ),
        {
            "model": [1],
            "steps": INTS,
            "seq_len": INTS,
            "batch_size": INTS,
            "lag": INTS,
            "lr": FLOATS,
            "seed": INTS,
        },
    ),
    "evaluate": (
        lambda **k: evaluate(
            **{
                "model": ShiftedCopyModel("learned", d_model=8, num_heads=2, max_len=8),
                "seq_len": 4,
                "num_sequences": 2,
                **k,
            }
        ),
        {"model": [1], "seq_len": INTS + [9], "num_sequences": INTS, "lag": INTS, "seed": INTS},
    ),
}

ESCAPE_CASES = [
    pytest.param(call, argument, value, id=f"{name}-{argument}-{i}")
    for name, (call, arguments) in CALLS.items()
    for argument, values in arguments.items()
    for i, value in enumerate(values)
]


@pytest.mark.parametrize(("call", "argument", "value"), ESCAPE_CASES)
def test_bad_input_raises_only_type_or_value_error(call, argument, value):
    torch.manual_seed(0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call(**{argument: value})
    except (TypeError, ValueError):
        pass
    finally:
        plt.close("all")
