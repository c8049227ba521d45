"""pe_lib.encodings: every registered encoding keeps the one contract, and nothing is registered
without tests and an API-page entry (the RoPE scaling registry likewise)."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest
import torch

import pe_lib
from pe_lib.encodings import ENCODINGS, Encoding
from pe_lib.toy import POSITION_KINDS, ShiftedCopyModel

ROOT = Path(__file__).resolve().parents[2]
API_PAGE = (ROOT / "book" / "api.md").read_text(encoding="utf-8")
LIBRARY_TESTS = {
    path.name: path.read_text(encoding="utf-8")
    for path in (ROOT / "tests" / "lib").glob("test_*.py")
    if path.name != Path(__file__).name
}
NAMES = list(ENCODINGS)


def _automodule_blocks() -> dict[str, str]:
    """Each ``.. automodule:: name`` of the API page, with the option lines that follow it."""
    blocks = {}
    for match in re.finditer(r"^\.\. automodule:: (\S+)\n((?:[ \t]+:.*\n)*)", API_PAGE, re.M):
        blocks[match[1]] = match[2]
    return blocks


def _documented(qualified_name: str) -> bool:
    module, _, name = qualified_name.rpartition(".")
    options = _automodule_blocks().get(module)
    if options is None:
        return False
    members = re.search(r":members:(.*)", options)
    if members is None:
        return False
    listed = [m.strip() for m in members[1].split(",") if m.strip()]
    return not listed or name in listed


def _resolve(qualified_name: str) -> object:
    module, _, name = qualified_name.rpartition(".")
    return getattr(importlib.import_module(module), name)


# --- the contract ---------------------------------------------------------------------------------


def test_registry_holds_the_books_encodings_in_order() -> None:
    assert NAMES[:4] == ["sinusoidal", "learned", "rope", "alibi"]
    assert all(
        isinstance(entry, Encoding) and entry.name == key for key, entry in ENCODINGS.items()
    )


@pytest.mark.parametrize("name", NAMES)
def test_entry_acts_somewhere_and_cites_its_source(name: str) -> None:
    entry = ENCODINGS[name]
    assert entry.additive or entry.rotation or entry.score_bias, f"{name} does nothing"
    assert entry.summary and re.search(r"\(\d{4}\)", entry.reference), entry.reference
    assert entry.api, f"{name} lists no public functions or classes"


@pytest.mark.parametrize("name", [n for n in NAMES if ENCODINGS[n].additive])
def test_additive_module_adds_a_window_of_one_table(name: str) -> None:
    """``module(x, offset)`` is ``x + P[offset : offset + seq_len]`` for one table ``P``."""
    torch.manual_seed(0)
    factory = ENCODINGS[name].additive
    assert factory is not None
    module = factory(8, 16, 0.0).eval()
    table = module(torch.zeros(1, 16, 8))[0]  # (16, 8): P itself
    x = torch.randn(2, 5, 8)
    out = module(x, offset=3)
    assert out.shape == x.shape and out.dtype == x.dtype
    torch.testing.assert_close(out, x + table[3:8])


@pytest.mark.parametrize("name", [n for n in NAMES if ENCODINGS[n].rotation])
def test_rotation_keeps_shapes_norms_and_makes_scores_relative(name: str) -> None:
    """Rotated scores ``q_m . k_n`` depend on ``n - m`` only: shifting every position by the
    same offset leaves them unchanged; each vector keeps its norm."""
    factory = ENCODINGS[name].rotation
    assert factory is not None
    rotation = factory(8)
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(2, 3, 6, 8, dtype=torch.float64, generator=generator)
    k = torch.randn(2, 3, 6, 8, dtype=torch.float64, generator=generator)
    q_rot, k_rot = rotation(q, k)
    assert q_rot.shape == q.shape and k_rot.shape == k.shape
    torch.testing.assert_close(q_rot.norm(dim=-1), q.norm(dim=-1))
    assert not torch.allclose(q_rot, q)
    q_far, k_far = rotation(q, k, 1000)
    torch.testing.assert_close(q_far @ k_far.transpose(-2, -1), q_rot @ k_rot.transpose(-2, -1))


@pytest.mark.parametrize("name", [n for n in NAMES if ENCODINGS[n].score_bias])
def test_score_bias_shape_dtype_and_finite_on_the_visible_keys(name: str) -> None:
    score_bias = ENCODINGS[name].score_bias
    assert score_bias is not None
    bias = score_bias(4, 3, 5, dtype=torch.float32, device="cpu")
    assert bias.shape == (4, 3, 5) and bias.dtype == torch.float32
    # queries are the last 3 of 5 positions: query i sees keys 0 .. i + 2
    visible = torch.ones(3, 5, dtype=torch.bool).tril(diagonal=2)
    assert torch.isfinite(bias[:, visible]).all()


# --- the toy model reads the registry ---------------------------------------------------------------


def test_toy_position_kinds_are_none_then_the_registry() -> None:
    assert POSITION_KINDS == ("none", *NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_toy_model_uses_each_part_of_the_entry(name: str) -> None:
    entry = ENCODINGS[name]
    model = ShiftedCopyModel(name, d_model=16, num_heads=2, max_len=12).eval()
    if entry.additive is None:
        assert isinstance(model.encoding, torch.nn.Identity)
    else:
        assert type(model.encoding) is type(entry.additive(16, 12, 0.0))
    assert (model.rotation is None) == (entry.rotation is None)
    assert model.score_bias is entry.score_bias
    logits, weights = model(torch.randint(16, (3, 12)), return_weights=True)
    assert logits.shape == (3, 12, 16) and torch.isfinite(logits).all()
    assert weights.shape == (3, 2, 12, 12)
    torch.testing.assert_close(weights.sum(dim=-1), torch.ones(3, 2, 12))
    assert (weights.triu(diagonal=1) == 0).all()  # causal


# --- nothing registered without tests and documentation ----------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_every_public_name_of_an_encoding_is_documented_and_tested(name: str) -> None:
    for qualified_name in ENCODINGS[name].api:
        obj = _resolve(qualified_name)
        assert getattr(obj, "__doc__", None), f"{qualified_name} has no docstring"
        assert _documented(qualified_name), (
            f"{qualified_name} (encoding {name!r}) is missing from book/api.md: add an "
            f"automodule section for its module that lists it"
        )
        short = qualified_name.rpartition(".")[2]
        tested_in = [f for f, text in LIBRARY_TESTS.items() if re.search(rf"\b{short}\b", text)]
        assert tested_in, (
            f"{qualified_name} (encoding {name!r}) appears in no test of tests/lib: test it"
        )


def _scaling_registry() -> dict[str, object]:
    try:
        module = importlib.import_module("pe_lib.rope_scaling")
    except ModuleNotFoundError:
        return {}
    return dict(getattr(module, "ROPE_SCALINGS", {}))


@pytest.mark.parametrize("method", list(_scaling_registry()) or ["(no scaling registry)"])
def test_every_rope_scaling_is_documented_and_tested(method: str) -> None:
    if not _scaling_registry():
        pytest.skip("pe_lib.rope_scaling has no ROPE_SCALINGS registry")
    import pe_lib.rope_scaling as rope_scaling

    assert "pe_lib.rope_scaling" in _automodule_blocks(), "book/api.md lacks pe_lib.rope_scaling"
    assert re.search(rf"``\"?{method}\"?``", rope_scaling.__doc__ or ""), (
        f"the rope_scaling docstring (the API page) does not name the method {method!r}"
    )
    rope_tests = "".join(text for f, text in LIBRARY_TESTS.items() if f.startswith("test_rope"))
    assert re.search(rf"[\"']{method}[\"']", rope_tests), (
        f"the scaling {method!r} appears in no tests/lib/test_rope*.py"
    )


def _public_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(pe_lib.__path__, prefix="pe_lib."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("module", _public_modules())
def test_api_page_documents_every_public_module(module: str) -> None:
    assert module in _automodule_blocks(), f"book/api.md has no automodule section for {module}"


def test_a_new_entry_is_a_new_choice_of_the_toy_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registering an encoding is all the toy model needs: here a sinusoidal table of base 100,
    added to the embeddings, and the RoPE rotation inside attention at once."""

    def base_100(d_model: int, max_len: int, dropout: float) -> torch.nn.Module:
        return pe_lib.SinusoidalPositionalEncoding(d_model, max_len, dropout, base=100.0)

    entry = Encoding(
        name="both",
        summary="a base-100 table added to the embeddings, and rotated queries and keys",
        reference="Vaswani et al. (2017) and Su et al. (2021), together",
        api=("pe_lib.modules.SinusoidalPositionalEncoding", "pe_lib.rope.RotaryEmbedding"),
        additive=base_100,
        rotation=ENCODINGS["rope"].rotation,
    )
    monkeypatch.setitem(ENCODINGS, "both", entry)
    model = ShiftedCopyModel("both", d_model=16, num_heads=2, max_len=8).eval()
    assert model.encoding.base == 100.0 and model.rotation is not None
    logits, weights = model(torch.randint(16, (2, 8)), return_weights=True)
    assert logits.shape == (2, 8, 16) and weights.shape == (2, 2, 8, 8)
    monkeypatch.delitem(ENCODINGS, "both")
    with pytest.raises(ValueError, match="position must be one of 'none', 'sinusoidal'"):
        ShiftedCopyModel("both")
