"""The contract every entry of ``pe_lib.encodings.ENCODINGS`` keeps, as functions of the entry,
so that the registry's tests and the test of an encoding defined outside the package run the
same checks. Each function raises AssertionError naming what the entry breaks."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from pathlib import Path

import torch

from pe_lib.encodings import PROPERTIES, Encoding
from pe_lib.experiments.toy import ShiftedCopyModel

ROOT = Path(__file__).resolve().parents[1]
# The API pages: book/api.md and one page per subpackage under book/api/.
API_PAGES = [ROOT / "book" / "api.md", *sorted((ROOT / "book" / "api").glob("*.md"))]
API_TEXT = "\n".join(page.read_text(encoding="utf-8") for page in API_PAGES)


def documented_modules() -> set[str]:
    """The modules with an ``.. automodule::`` section on an API page."""
    return set(re.findall(r"^\.\. automodule:: (\S+)", API_TEXT, re.M))


def check_parts(entry: Encoding) -> None:
    """Each part it has keeps the shapes and meaning the registry documents."""
    assert entry.summary and re.search(r"\(\d{4}\)", entry.reference), entry.reference
    if entry.additive is not None:
        module = entry.additive(8, 16, 0.0).eval()
        table = module(torch.zeros(1, 16, 8))[0]  # (16, 8): P itself
        x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(0))
        out = module(x, offset=3)
        assert out.shape == x.shape and out.dtype == x.dtype
        torch.testing.assert_close(out, x + table[3:8])
    if entry.rotation is not None:
        q, k = _queries_and_keys()
        q_rot, k_rot = entry.rotation(8)(q, k)
        assert q_rot.shape == q.shape and k_rot.shape == k.shape
        assert not torch.allclose(q_rot, q), f"{entry.name}'s rotation leaves q unchanged"
    if entry.score_bias is not None:
        bias = entry.score_bias(4, 3, 5, dtype=torch.float32, device="cpu")
        assert bias.shape == (4, 3, 5) and bias.dtype == torch.float32
        # queries are the last 3 of 5 positions: query i sees keys 0 .. i + 2
        visible = torch.ones(3, 5, dtype=torch.bool).tril(diagonal=2)
        assert torch.isfinite(bias[:, visible]).all()


def _queries_and_keys() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return tuple(  # type: ignore[return-value]
        torch.randn(2, 3, 6, 8, dtype=torch.float64, generator=generator) for _ in range(2)
    )


def _preserves_norms(entry: Encoding) -> None:
    assert entry.rotation is not None
    q, k = _queries_and_keys()
    q_rot, k_rot = entry.rotation(8)(q, k)
    torch.testing.assert_close(q_rot.norm(dim=-1), q.norm(dim=-1))
    torch.testing.assert_close(k_rot.norm(dim=-1), k.norm(dim=-1))


def _relative_scores(entry: Encoding) -> None:
    """Shifting every position by the same offset leaves the scores unchanged."""
    assert entry.rotation is not None
    rotation = entry.rotation(8)
    q, k = _queries_and_keys()
    near, far = rotation(q, k), rotation(q, k, 1000)
    torch.testing.assert_close(far[0] @ far[1].mT, near[0] @ near[1].mT)


#: One check per name of ``pe_lib.encodings.PROPERTIES``.
PROPERTY_CHECKS: dict[str, Callable[[Encoding], None]] = {
    "preserves_norms": _preserves_norms,
    "relative_scores": _relative_scores,
}


def check_properties(entry: Encoding) -> None:
    """Every property the entry declares holds for it."""
    assert set(PROPERTY_CHECKS) == set(PROPERTIES), "a declared property has no check here"
    for name in sorted(entry.properties):
        PROPERTY_CHECKS[name](entry)


def check_toy_model(entry: Encoding) -> None:
    """``ShiftedCopyModel(entry.name)`` builds each part of the entry and runs causally."""
    model = ShiftedCopyModel(entry.name, d_model=16, num_heads=2, max_len=12).eval()
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


def check_api(entry: Encoding) -> None:
    """Every name the entry lists resolves to a documented object; those of pe_lib are public
    names (``__all__``) of a module an API page documents."""
    assert entry.api, f"{entry.name} lists no public functions or classes"
    for qualified_name in entry.api:
        module_name, _, name = qualified_name.rpartition(".")
        module = importlib.import_module(module_name)
        obj = getattr(module, name)
        assert getattr(obj, "__doc__", None), f"{qualified_name} has no docstring"
        if module_name.split(".")[0] == "pe_lib":
            assert name in getattr(module, "__all__", ()), f"{qualified_name} is not public"
            assert module_name in documented_modules(), (
                f"{qualified_name} (encoding {entry.name!r}): no API page (book/api/) has an "
                f"automodule section for {module_name}"
            )
