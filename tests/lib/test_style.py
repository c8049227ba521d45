"""One style per method: every registered encoding and scaling has one, and no two collide."""

import pytest

from pe_lib.encodings import ENCODINGS
from pe_lib.rope.scaling import ROPE_SCALINGS
from pe_lib.viz.style import METHOD_STYLES, method_style


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


# ------------------------------------------------------------------ contrast in both themes

from pe_lib.viz.style import (  # noqa: E402
    LINE_CYCLE,
    MIN_CONTRAST,
    PAGE_BACKGROUNDS,
    RAMP_STOPS,
    contrast_ratio,
    dark_variants,
    line_colours,
    on_dark_plate,
    theme_colour,
)

WHITE = PAGE_BACKGROUNDS["light"]


def _palette() -> list[str]:
    return [s.color for s in METHOD_STYLES.values()] + list(LINE_CYCLE) + line_colours(12)


def test_contrast_ratio_matches_wcag_examples() -> None:
    assert contrast_ratio("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast_ratio("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)
    assert contrast_ratio("#123456", "#123456") == pytest.approx(1.0)
    with pytest.raises(ValueError, match="#rrggbb"):
        contrast_ratio("red", "#ffffff")


def test_every_colour_of_a_figure_holds_3_to_1_on_the_light_page_and_the_dark_plate() -> None:
    """PNG figures: a line on white, and the same line as the dark theme's filter shows it."""
    plate = on_dark_plate(WHITE)
    weak = {
        colour: (
            round(contrast_ratio(colour, WHITE), 2),
            round(contrast_ratio(on_dark_plate(colour), plate), 2),
        )
        for colour in _palette()
        if min(contrast_ratio(colour, WHITE), contrast_ratio(on_dark_plate(colour), plate))
        < MIN_CONTRAST
    }
    assert not weak, f"colours below {MIN_CONTRAST}:1 (on white, on the dark plate): {weak}"


def test_every_colour_of_a_chart_holds_3_to_1_on_the_dark_page() -> None:
    """Vega charts in dark mode draw each colour's dark variant on the dark page."""
    page = PAGE_BACKGROUNDS["dark"]
    charted = [s.color for s in METHOD_STYLES.values()] + list(LINE_CYCLE)
    shown = {c: theme_colour(c, "dark") for c in charted + line_colours(RAMP_STOPS)}
    shown.update({c: c for c in line_colours(12, "dark")})
    weak = {c: v for c, v in shown.items() if contrast_ratio(v, page) < MIN_CONTRAST}
    assert not weak, f"colours below {MIN_CONTRAST}:1 on the dark page: {weak}"


def test_dark_variants_keep_the_methods_apart() -> None:
    colours = [s.colour("dark") for s in METHOD_STYLES.values()]
    assert len(set(colours)) == len(colours)
    assert set(dark_variants().values()) >= {s.dark_color for s in METHOD_STYLES.values()} - {None}


def test_the_dark_plate_is_the_theme_filter_of_white() -> None:
    # brightness(0.8) contrast(1.2): 1 -> (0.8 - 0.5) * 1.2 + 0.5 = 0.86, 219 of 255
    assert on_dark_plate("#ffffff") == "#dbdbdb"
    assert on_dark_plate("#000000") == "#000000"
