"""One style per method: every registered encoding and scaling has one, and no two collide."""

import pytest

from pe_lib.encodings import ENCODINGS
from pe_lib.rope_scaling import ROPE_SCALINGS
from pe_lib.style import METHOD_STYLES, method_style


def test_every_registered_method_has_a_style() -> None:
    for name in [*ENCODINGS, *ROPE_SCALINGS, "none"]:
        assert method_style(name).label


def test_default_scaling_is_drawn_as_plain_rope() -> None:
    assert method_style("default") == method_style("rope")


def test_no_two_methods_share_a_colour_or_a_name() -> None:
    colours = [style.color for style in METHOD_STYLES.values()]
    labels = [style.label for style in METHOD_STYLES.values()]
    assert len(set(colours)) == len(colours)
    assert len(set(labels)) == len(labels)


def test_unknown_method_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="one of .*sinusoidal"):
        method_style("xpos")
    with pytest.raises(TypeError, match="name must be a str"):
        method_style(3)  # type: ignore[arg-type]
