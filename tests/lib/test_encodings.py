"""pe_lib.encodings: every registered encoding keeps the one contract and what it declares,
the toy model builds each, and the package's modules are all documented (the RoPE scaling
registry likewise)."""

from __future__ import annotations

import pkgutil

import pytest
from encoding_contract import (
    PROPERTY_CHECKS,
    check_api,
    check_parts,
    check_properties,
    check_toy_model,
    documented_modules,
)

import pe_lib
from pe_lib.encodings import ENCODINGS, PROPERTIES, Encoding, register
from pe_lib.experiments.toy import POSITION_KINDS

NAMES = list(ENCODINGS)


def test_registry_holds_the_books_encodings_in_order() -> None:
    assert NAMES[:4] == ["sinusoidal", "learned", "rope", "alibi"]
    assert all(
        isinstance(entry, Encoding) and entry.name == key for key, entry in ENCODINGS.items()
    )


#: What every entry is checked for: the contract of its parts, the properties it declares,
#: the toy model built from it, its public names documented.
ENTRY_CHECKS = {
    "parts": check_parts,
    "properties": check_properties,
    "toy model": check_toy_model,
    "api": check_api,
}


@pytest.mark.parametrize("check", ENTRY_CHECKS)
@pytest.mark.parametrize("name", NAMES)
def test_entry_keeps_the_contract(name: str, check: str) -> None:
    ENTRY_CHECKS[check](ENCODINGS[name])


def test_every_property_has_a_check_and_rope_declares_both() -> None:
    assert set(PROPERTY_CHECKS) == set(PROPERTIES)
    assert ENCODINGS["rope"].properties == {"preserves_norms", "relative_scores"}


def test_toy_position_kinds_are_none_then_the_registry() -> None:
    assert POSITION_KINDS == ("none", *NAMES)


@pytest.mark.parametrize(
    ("changes", "error", "match"),
    [
        ({"additive": None}, ValueError, r"must act somewhere"),
        ({"properties": frozenset({"unitary"})}, ValueError, r"properties must be among"),
        (
            {
                "additive": None,
                "score_bias": ENCODINGS["alibi"].score_bias,
                "properties": frozenset({"preserves_norms"}),
            },
            ValueError,
            r"about a rotation, but it has none",
        ),
    ],
)
def test_an_entry_that_breaks_the_contract_is_refused(changes, error, match) -> None:
    fields = {"name": "x", "summary": "s", "reference": "r (2020)", "api": ("a.b",)}
    with pytest.raises(error, match=match):
        Encoding(**{**fields, "additive": ENCODINGS["learned"].additive, **changes})


def test_register_refuses_a_taken_name_and_a_non_entry() -> None:
    with pytest.raises(ValueError, match=r"encoding.name must be a new name, got 'rope'"):
        register(ENCODINGS["rope"])
    with pytest.raises(TypeError, match=r"encoding must be an Encoding, got 'rope'"):
        register("rope")


# --- the package's modules, documented ----------------------------------------------


def _public_modules() -> list[str]:
    return sorted(
        info.name
        for info in pkgutil.walk_packages(pe_lib.__path__, prefix="pe_lib.")
        if not any(part.startswith("_") for part in info.name.split("."))
    )


def test_api_page_documents_exactly_the_public_modules() -> None:
    private_sections = {m for m in documented_modules() if "._" in m}
    assert set(_public_modules()) == documented_modules() - private_sections
    for module in private_sections:  # e.g. pe_lib.checks._core, for its shared classes
        __import__(module)


def test_every_rope_scaling_is_named_on_the_api_page() -> None:
    import pe_lib.rope.scaling as rope_scaling

    assert "pe_lib.rope.scaling" in documented_modules()
    missing = [
        method
        for method in rope_scaling.ROPE_SCALINGS
        if f"``{method}``" not in (rope_scaling.__doc__ or "")
        and f'``"{method}"``' not in (rope_scaling.__doc__ or "")
    ]
    assert not missing, f"the rope_scaling docstring (the API page) does not name {missing}"
