"""No bad argument escapes as anything but TypeError or ValueError.

Every public function and constructor of the layers below is called with each kind of bad
value in turn (sizes and positions that are huge, negative, bool, float, NaN or not numbers;
floats that are NaN or infinite; tensors that are empty, of the wrong dtype or shape; devices
that do not exist): each call either works or raises TypeError/ValueError, never an
OverflowError, IndexError, AssertionError or a RuntimeError from inside torch. What each
message says is tested beside each function.
"""

from __future__ import annotations

import math
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from pe_lib import (
    LearnedPositionalEncoding,
    SelfAttention,
    SinusoidalPositionalEncoding,
    angular_frequencies,
    relative_shift_matrix,
    scaled_dot_product_attention,
    sinusoidal_table,
)
from pe_lib.alibi import alibi_bias, alibi_slopes
from pe_lib.plotting import (
    plot_attention_weights,
    plot_dimensions,
    plot_dot_product_vs_distance,
    plot_encoding_heatmap,
    plot_wavelengths,
)
from pe_lib.toy import ShiftedCopyModel, evaluate, shifted_copy_batch, train
from pe_lib.widgets import draw_frequency_view, parse_dims

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
            "start": INTS,
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
            "start": INTS,
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

CASES = [
    pytest.param(call, argument, value, id=f"{name}-{argument}-{i}")
    for name, (call, arguments) in CALLS.items()
    for argument, values in arguments.items()
    for i, value in enumerate(values)
]


@pytest.mark.parametrize(("call", "argument", "value"), CASES)
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
