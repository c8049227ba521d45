"""pe_lib.encodings.modules: dtype/device, buffers and state_dict, offsets, dropout, the learned table."""

from __future__ import annotations

import inspect
import math
import os
import shutil

import numpy as np
import pytest
import torch
from pe_reference import reference_table
from torch import nn

from pe_lib import (
    LearnedPositionalEncoding,
    PositionalEncoding,
    SinusoidalPositionalEncoding,
    sinusoidal_table,
)

FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


class ArticlePositionalEncoding(nn.Module):
    """A local copy of the article's module: a *persistent* float32 ``pe`` buffer."""

    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.1) -> None:
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len).unsqueeze(1).float()
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(x + self.pe[: x.size(1)])


def table64(num_positions: int, d_model: int, offset: int = 0) -> torch.Tensor:
    return sinusoidal_table(num_positions, d_model, offset=offset, dtype=torch.float64)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_output_follows_input_dtype_and_rounds_float64_values(dtype):
    """What holds, precisely, for an input of dtype D:

    * ``out`` is bitwise ``x + t.to(D)``, the sum in D of x and the float64 table rounded to D;
    * so ``x = 0`` gives exactly ``t.to(D)``: the float64 values cast to D, no float32 angles;
    * against the exact sum, ``|out - (x + t)| <= u * (|out| + |t|)`` (times 1.01) with
      u = eps(D) / 2: one rounding of the table, one of the sum. It is *not* always
      ``(x.double() + t).to(D)``: two roundings may differ from one by an ulp, and by more
      where x + t cancels. (torch also casts float64 to bfloat16/float16 through float32,
      which the 1.01 covers.)
    """
    torch.manual_seed(0)
    module = SinusoidalPositionalEncoding(10, max_len=40).eval()
    x = (3 * torch.randn(4, 30, 10, dtype=torch.float64)).to(dtype)
    t = table64(30, 10)
    out = module(x)
    assert out.dtype == dtype and out.device == x.device and out.shape == x.shape
    assert torch.equal(out, x + t.to(dtype))
    assert torch.equal(module(torch.zeros_like(x)), t.to(dtype).expand_as(x))
    unit_roundoff = torch.finfo(dtype).eps / 2
    error = (out.double() - (x.double() + t)).abs()
    bound = unit_roundoff * (out.double().abs() + t.abs()) * 1.01
    assert torch.all(error <= bound)


@pytest.mark.parametrize("cast", ["bfloat16", "half", "float", "double"])
def test_dtype_casts_keep_the_float64_table(cast):
    module = SinusoidalPositionalEncoding(12, max_len=300).eval()
    module = getattr(module, cast)() if cast != "bfloat16" else module.to(torch.bfloat16)
    assert module.pe.dtype == torch.float64
    assert torch.equal(module.pe, table64(300, 12))
    # A float32 input proves it: a table rounded to bfloat16/float16 would show in float32.
    x = torch.randn(2, 300, 12)
    assert torch.equal(module(x), x + table64(300, 12).float())


def test_no_parameters_empty_state_dict_and_a_buffer():
    module = SinusoidalPositionalEncoding(16, max_len=64)
    assert list(module.parameters()) == []
    assert module.state_dict() == {}
    buffers = dict(module.named_buffers())
    assert list(buffers) == ["pe"] and buffers["pe"].shape == (64, 16)


@pytest.mark.parametrize("max_len", [100, 40, 300])
def test_loads_the_article_state_dict_strictly(max_len):
    article = ArticlePositionalEncoding(16, max_len=100)
    state = article.state_dict()
    assert list(state) == ["pe"] and state["pe"].shape == (100, 16)
    module = PositionalEncoding(16, max_len).eval()
    before = module(torch.zeros(1, 20, 16))
    result = module.load_state_dict(state, strict=True)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert torch.equal(module(torch.zeros(1, 20, 16)), before)  # the table is the formula's
    assert "pe" in state  # the caller's dict is left alone
    # Nested under a parent module, the key carries a prefix ("0.pe") and still loads.
    nested = nn.Sequential(PositionalEncoding(16, max_len))
    nested.load_state_dict(nn.Sequential(article).state_dict(), strict=True)


@pytest.mark.parametrize("shape", [(20, 8), (1, 20, 8), (20, 1, 8), (1, 1, 8), (7, 8)])
def test_loads_the_tutorials_table_in_each_shape_they_store_it(shape):
    """The annotated transformer keeps (1, max_len, d_model), the PyTorch tutorial (max_len, 1,
    d_model): both are the discarded table, as the module checker accepts them."""
    module = PositionalEncoding(8, max_len=20).eval()
    before = module(torch.zeros(1, 5, 8))
    result = module.load_state_dict({"pe": torch.full(shape, 3.0)}, strict=True)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert torch.equal(module(torch.zeros(1, 5, 8)), before)


@pytest.mark.parametrize(
    ("stored", "got"),
    [
        (torch.zeros(100, 8), r"got shape \(100, 8\)"),
        (torch.zeros(2, 100, 16), r"got shape \(2, 100, 16\)"),
        (torch.zeros(1, 1, 100, 16), r"got shape \(1, 1, 100, 16\)"),
        (torch.zeros(16), r"got shape \(16,\)"),
        ([0.0] * 16, "got list"),
    ],
)
def test_wrong_stored_table_is_rejected(stored, got):
    module = PositionalEncoding(16, 100)
    with pytest.raises(ValueError, match=r"state_dict\['pe'\].*d_model=16.*" + got):
        module.load_state_dict({"pe": stored}, strict=True)


@pytest.mark.parametrize("module_class", [SinusoidalPositionalEncoding, LearnedPositionalEncoding])
@pytest.mark.parametrize("offset", [0, 3, 20])
def test_offset_within_max_len(module_class, offset):
    module = module_class(6, max_len=30).eval()
    x = torch.randn(2, 10, 6, dtype=torch.float64)
    rows = module.pe if module_class is SinusoidalPositionalEncoding else module.weight
    torch.testing.assert_close(module(x, offset=offset), x + rows[offset : offset + 10])


@pytest.mark.parametrize(("offset", "seq_len"), [(0, 31), (25, 10), (30, 5), (1000, 7)])
def test_sinusoidal_beyond_max_len_follows_the_formula(offset, seq_len):
    small = SinusoidalPositionalEncoding(6, max_len=30).eval()
    large = SinusoidalPositionalEncoding(6, max_len=offset + seq_len).eval()
    x = torch.randn(3, seq_len, 6)
    out = small(x, offset=offset)
    assert torch.equal(out, large(x, offset=offset))
    expected = x.double().numpy() + reference_table(seq_len, 6, offset=offset)
    np.testing.assert_allclose(out.numpy(), expected, rtol=0, atol=1e-6)
    assert small.pe.shape == (30, 6)  # forward computed the window without growing the buffer


def test_encoding_rows():
    module = SinusoidalPositionalEncoding(5, max_len=20)
    assert torch.equal(module.encoding(8, offset=4), table64(8, 5, offset=4))
    assert torch.equal(module.encoding(10, offset=15), table64(10, 5, offset=15))
    assert module.encoding(3).dtype == torch.float64


@pytest.mark.parametrize("module_class", [SinusoidalPositionalEncoding, LearnedPositionalEncoding])
def test_dropout_only_in_train_mode(module_class):
    torch.manual_seed(0)
    module = module_class(8, max_len=64, dropout=0.5)
    x = torch.randn(4, 64, 8)
    clean = module.eval()(x)
    assert torch.equal(module(x), clean)  # eval: deterministic, no dropout
    noisy = module.train()(x)
    dropped = noisy == 0
    assert 0.3 < dropped.float().mean().item() < 0.7
    torch.testing.assert_close(noisy[~dropped], clean[~dropped] / 0.5)
    no_dropout = module_class(8, max_len=64, dropout=0.0).train()
    if module_class is LearnedPositionalEncoding:
        no_dropout.load_state_dict(module.state_dict())
    assert torch.equal(no_dropout(x), clean)


def test_forward_does_not_change_the_module():
    module = SinusoidalPositionalEncoding(8, max_len=16).eval()
    buffer, snapshot = module.pe, module.pe.clone()
    module(torch.randn(2, 10, 8), offset=3)
    module(torch.randn(2, 40, 8), offset=100)  # beyond max_len
    module(torch.randn(2, 4, 8, dtype=torch.bfloat16))
    assert module.pe is buffer and torch.equal(module.pe, snapshot)


def test_to_moves_the_buffer_and_parameters():
    sinusoidal = SinusoidalPositionalEncoding(8, max_len=16).to("meta")
    assert sinusoidal.pe.device.type == "meta" and sinusoidal.pe.dtype == torch.float64
    for dtype in (torch.bfloat16, torch.float32):
        out = sinusoidal(torch.empty(2, 5, 8, device="meta", dtype=dtype))
        assert out.device.type == "meta" and out.dtype == dtype and out.shape == (2, 5, 8)
    beyond = sinusoidal(torch.empty(1, 30, 8, device="meta"), offset=4)
    assert beyond.device.type == "meta" and beyond.shape == (1, 30, 8)
    learned = LearnedPositionalEncoding(8, max_len=16).to("meta")
    assert learned.weight.device.type == "meta"
    assert learned(torch.empty(2, 5, 8, device="meta")).device.type == "meta"


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_learned_output_dtype_and_gradient(dtype):
    module = LearnedPositionalEncoding(6, max_len=20, dropout=0.0)
    x = torch.randn(3, 5, 6).to(dtype)
    out = module(x, offset=2)
    assert out.dtype == dtype and out.shape == x.shape
    out.float().sum().backward()
    touched = module.weight.grad.abs().sum(dim=1) != 0
    assert touched.tolist() == [2 <= row < 7 for row in range(20)]


def test_parameter_counts():
    assert sum(p.numel() for p in SinusoidalPositionalEncoding(512, 5000).parameters()) == 0
    learned = LearnedPositionalEncoding(512, max_len=512)
    assert sum(p.numel() for p in learned.parameters()) == 512 * 512
    assert learned.weight.requires_grad
    assert set(learned.state_dict()) == {"weight"}


def test_learned_table_is_berts_truncated_normal():
    """N(0, 0.02^2) cut at two standard deviations, as BERT's truncated_normal_initializer."""
    torch.manual_seed(0)
    weight = LearnedPositionalEncoding(768, max_len=512).weight.detach().double()
    sigma = LearnedPositionalEncoding.INIT_STD
    assert sigma == 0.02
    # every value inside the two-sigma bounds, and the bounds reached (no narrower cut)
    assert weight.abs().max() <= 2 * sigma
    assert weight.abs().max() > 0.99 * 2 * sigma
    # std of a standard normal truncated to [-2, 2]: sqrt(1 - 2 * 2 phi(2) / (2 Phi(2) - 1))
    phi_2 = math.exp(-2.0) / math.sqrt(2 * math.pi)
    inside = math.erf(2 / math.sqrt(2))  # P(|Z| < 2) = 2 Phi(2) - 1
    truncated_std = sigma * math.sqrt(1 - 4 * phi_2 / inside)
    assert abs(truncated_std - 0.0176) < 5e-5
    # 393,216 draws: the sample std is within about 2e-5 of its expectation; a plain
    # N(0, 0.02^2) would give 0.02, 24e-4 away
    assert abs(weight.std().item() - truncated_std) < 1e-4
    assert abs(weight.mean().item()) < 1e-4
    # the share outside one sigma: 1 - erf(1/sqrt 2) / erf(2/sqrt 2) for the truncated law
    outside_one = (weight.abs() > sigma).double().mean().item()
    expected_outside = 1 - math.erf(1 / math.sqrt(2)) / inside
    assert abs(outside_one - expected_outside) < 0.005


@pytest.mark.parametrize(("offset", "seq_len"), [(0, 9), (5, 4), (8, 1)])
def test_learned_overflow_names_max_len_the_length_and_the_fix(offset, seq_len):
    module = LearnedPositionalEncoding(4, max_len=8)
    end = offset + seq_len
    message = rf"max_len=8.*{offset}\.\.{end - 1}.*= {end} > max_len.*max_len >= {end}"
    with pytest.raises(ValueError, match=message):
        module(torch.zeros(1, seq_len, 4), offset=offset)


def test_article_name_and_signature():
    assert issubclass(PositionalEncoding, SinusoidalPositionalEncoding)
    parameters = list(inspect.signature(PositionalEncoding).parameters.values())
    assert [p.name for p in parameters[:3]] == ["d_model", "max_len", "dropout"]
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in parameters[:3])
    assert [p.default for p in parameters[1:3]] == [5000, 0.1]
    module = PositionalEncoding(32, 100, 0.25)
    assert (module.d_model, module.max_len, module.dropout.p) == (32, 100, 0.25)
    # Same outputs as the article's module, up to the article's float32 angle error.
    x = torch.randn(2, 100, 32)
    article = ArticlePositionalEncoding(32, 100, 0.25).eval()
    torch.testing.assert_close(module.eval()(x), article(x), rtol=0, atol=1e-5)


# --- tracing, compiling, scripting ---------------------------------------------------------------

MODULES = [
    lambda: SinusoidalPositionalEncoding(8, max_len=16, dropout=0.0),
    lambda: LearnedPositionalEncoding(8, max_len=16, dropout=0.0),
]
TRACE_IS_DEPRECATED = pytest.mark.filterwarnings(
    r"ignore:`torch\.jit\.\w+` is deprecated:DeprecationWarning"
)


@pytest.mark.parametrize("build", MODULES, ids=["sinusoidal", "learned"])
@TRACE_IS_DEPRECATED
def test_scripting_is_refused_with_the_alternatives(build):
    with pytest.raises(TypeError, match=r"cannot be compiled with torch.jit.script.*torch.compile"):
        torch.jit.script(build())


@pytest.mark.parametrize("build", MODULES, ids=["sinusoidal", "learned"])
def test_compiles_in_one_graph(build):
    """``fullgraph=True`` fails on any graph break; the ``aot_eager`` backend traces the graph
    through AOTAutograd without generating code, so it needs no C compiler."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    module = build().eval()
    compiled = torch.compile(module, fullgraph=True, backend="aot_eager")
    for seq_len, offset in ((5, 0), (7, 3)):
        x = torch.randn(2, seq_len, 8)
        assert torch.equal(compiled(x, offset=offset), module(x, offset=offset))


@pytest.mark.skipif(
    os.environ.get("PE_LIB_TEST_INDUCTOR") != "1",
    reason="inductor compiles C++ for about a minute; set PE_LIB_TEST_INDUCTOR=1 to run it",
)
@pytest.mark.skipif(
    shutil.which(os.environ.get("CXX", "c++")) is None,
    reason="torch.compile's inductor backend needs a C++ compiler, and none was found",
)
def test_compiles_with_inductor():
    torch._dynamo.reset()
    module = SinusoidalPositionalEncoding(8, max_len=16, dropout=0.0).eval()
    compiled = torch.compile(module, fullgraph=True)
    x = torch.randn(2, 5, 8)
    torch.testing.assert_close(compiled(x), module(x))


@pytest.mark.parametrize("build", MODULES, ids=["sinusoidal", "learned"])
def test_exports(build):
    torch.manual_seed(0)
    module = build().eval()
    x = torch.randn(2, 5, 8)
    exported = torch.export.export(module, (x,))
    assert torch.equal(exported.module()(x), module(x))


def test_a_learned_table_no_memory_could_hold_is_refused_naming_its_size():
    with pytest.raises(ValueError, match=r"d_model=4194304, max_len=4294967296.*64.0 PiB"):
        LearnedPositionalEncoding(2**22, max_len=2**32)
    with pytest.raises(
        ValueError, match=r"sinusoidal_table\(num_positions=4294967296.*float64 values.*128.0 PiB"
    ):
        SinusoidalPositionalEncoding(2**22, max_len=2**32)
