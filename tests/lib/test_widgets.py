"""Tests of pe_lib.viz.widgets: the static frequency view and its ipywidgets explorer."""

from __future__ import annotations

import base64
import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from pe_lib.encodings.sinusoidal import sinusoidal_table, wavelengths
from pe_lib.viz.widgets import draw_frequency_view, frequency_explorer, parse_dims

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _view_text(explorer) -> str:
    (output,) = explorer.output.outputs
    return output["data"]["text/plain"]


def _view_png(explorer) -> bytes:
    (output,) = explorer.output.outputs
    return base64.b64decode(output["data"]["image/png"])


# --- draw_frequency_view -------------------------------------------------------------------


def test_draw_frequency_view_left_panel_plots_the_chosen_columns():
    dims = (0, 3, 17)
    fig, (ax_waves, _) = draw_frequency_view(d_model=32, base=100.0, dims=dims, num_positions=50)
    lines = ax_waves.get_lines()
    assert len(lines) == len(dims)
    assert ax_waves.get_xlabel() == "position"
    assert ax_waves.get_ylabel() == "encoding value"
    table = sinusoidal_table(50, 32, base=100.0, dtype=torch.float64).numpy()
    for line, d in zip(lines, dims, strict=True):
        np.testing.assert_array_equal(line.get_xdata(), np.arange(50))
        np.testing.assert_allclose(line.get_ydata(), table[:, d])
        assert line.get_label() == f"dim {d}"
    assert fig.axes[0] is ax_waves


def test_draw_frequency_view_right_panel_shows_every_wavelength_and_marks_chosen_pairs():
    d_model, base, dims = 24, 500.0, (1, 6, 23)
    _, (_, ax_lengths) = draw_frequency_view(d_model, base, dims, 40)
    assert ax_lengths.get_xlabel() == "dimension 2i"
    assert ax_lengths.get_ylabel() == "wavelength (positions)"
    assert ax_lengths.get_yscale() == "log"
    points = ax_lengths.get_lines()[0]
    expected = wavelengths(d_model, base).numpy()
    np.testing.assert_array_equal(points.get_xdata(), 2 * np.arange(d_model // 2))
    np.testing.assert_allclose(points.get_ydata(), expected)
    (marks,) = ax_lengths.collections
    offsets = np.asarray(marks.get_offsets())
    pairs = [d // 2 for d in dims]
    np.testing.assert_array_equal(offsets[:, 0], [2 * i for i in pairs])
    np.testing.assert_allclose(offsets[:, 1], expected[pairs])


def test_draw_frequency_view_accepts_numpy_ints_and_odd_d_model():
    fig, (ax_waves, _) = draw_frequency_view(7, 10000.0, np.array([0, 6]), 10)
    assert len(ax_waves.get_lines()) == 2
    plt.close(fig)


def test_draw_frequency_view_opens_exactly_one_figure():
    before = set(plt.get_fignums())
    fig, _ = draw_frequency_view()
    assert set(plt.get_fignums()) - before == {fig.number}


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"d_model": 0}, ValueError, ["d_model", "0", ">= 1"]),
        ({"d_model": 64.0}, TypeError, ["d_model", "64.0", "int"]),
        ({"base": 1.0}, ValueError, ["base", "1.0", "> 1"]),
        ({"base": "10000"}, TypeError, ["base", "'10000'"]),
        ({"num_positions": -3}, ValueError, ["num_positions", "-3"]),
        ({"dims": ()}, ValueError, ["dims", "at least one"]),
        ({"dims": (0, 64)}, ValueError, ["dims", "[0, 64)", "64"]),
        ({"dims": (-1,)}, ValueError, ["dims", "-1"]),
        ({"dims": (2, 2)}, ValueError, ["dims", "repeat"]),
        ({"dims": (0, 1.5)}, TypeError, ["dims", "1.5"]),
        ({"dims": (True,)}, TypeError, ["dims", "True"]),
        ({"dims": "0, 1"}, TypeError, ["dims", "'0, 1'", "sequence"]),
        ({"dims": 3}, TypeError, ["dims", "3", "int"]),
    ],
)
def test_bad_arguments_name_the_argument_and_the_value(kwargs, error, words):
    for function in (draw_frequency_view, frequency_explorer):
        before = set(plt.get_fignums())
        with pytest.raises(error) as info:
            function(**kwargs)
        for word in words:
            assert word in str(info.value)
        assert set(plt.get_fignums()) == before


# --- parse_dims ----------------------------------------------------------------------------


def test_parse_dims_reads_comma_separated_indices():
    assert parse_dims("0, 1,10 ,30", 64) == (0, 1, 10, 30)
    assert parse_dims("5,", 8) == (5,)


@pytest.mark.parametrize(
    ("text", "d_model", "error", "words"),
    [
        ("0, x", 64, ValueError, ["comma-separated integers", "'0, x'"]),
        ("1.5", 64, ValueError, ["'1.5'"]),
        ("", 64, ValueError, ["at least one"]),
        ("3, 8", 8, ValueError, ["[0, 8)", "8"]),
        (12, 64, TypeError, ["text", "12"]),
        ("1", 0, ValueError, ["d_model", "0"]),
    ],
)
def test_parse_dims_rejects_bad_text(text, d_model, error, words):
    with pytest.raises(error) as info:
        parse_dims(text, d_model)
    for word in words:
        assert word in str(info.value)


# --- frequency_explorer --------------------------------------------------------------------


def test_explorer_builds_with_the_given_values_and_renders_once():
    ipywidgets = pytest.importorskip("ipywidgets")
    explorer = frequency_explorer(d_model=48, base=500.0, dims=(2, 9), num_positions=120)
    assert isinstance(explorer, ipywidgets.VBox)
    assert explorer.d_model_slider.value == 48
    assert math.isclose(explorer.base_slider.value, 500.0)
    assert explorer.dims_text.value == "2, 9"
    assert explorer.num_positions_slider.value == 120
    assert explorer.output in explorer.children
    assert explorer.render_count == 1
    assert _view_png(explorer).startswith(PNG_SIGNATURE)
    assert "d_model=48" in _view_text(explorer)
    assert "positions 0 to 119" in _view_text(explorer)
    assert repr(explorer) == (
        "FrequencyExplorer(d_model=48, base=500, dims='2, 9', num_positions=120)"
    )


def test_explorer_slider_ranges_include_unusual_starting_values():
    pytest.importorskip("ipywidgets")
    explorer = frequency_explorer(d_model=1024, base=2.0, dims=(1000,), num_positions=5)
    assert explorer.d_model_slider.value == 1024
    assert math.isclose(explorer.base_slider.value, 2.0)
    assert explorer.num_positions_slider.value == 5
    assert "d_model=1024" in _view_text(explorer)


@pytest.mark.parametrize(
    ("control", "value", "expected_text"),
    [
        ("d_model_slider", 40, "d_model=40"),
        ("base_slider", 100.0, "base=100 "),
        ("dims_text", "0, 5", "Columns 0, 5 "),
        ("num_positions_slider", 300, "positions 0 to 299"),
    ],
)
def test_changing_a_control_redraws_the_view(control, value, expected_text):
    pytest.importorskip("ipywidgets")
    explorer = frequency_explorer()
    png_before = _view_png(explorer)
    getattr(explorer, control).value = value
    assert explorer.render_count == 2
    assert expected_text in _view_text(explorer)
    assert _view_png(explorer) != png_before


def test_explorer_closes_every_figure_it_draws():
    pytest.importorskip("ipywidgets")
    before = set(plt.get_fignums())
    explorer = frequency_explorer()
    for d_model in (32, 40, 63):
        explorer.d_model_slider.value = d_model
    explorer.dims_text.value = "0, 2"
    assert explorer.render_count == 5
    assert set(plt.get_fignums()) == before


def test_explorer_shows_an_error_for_a_view_it_cannot_draw_and_recovers():
    pytest.importorskip("ipywidgets")
    explorer = frequency_explorer()  # dims (0, 1, 10, 30)
    explorer.d_model_slider.value = 16
    (output,) = explorer.output.outputs
    assert "image/png" not in output["data"]
    message = output["data"]["text/plain"]
    assert "dims" in message and "[0, 16)" in message and "30" in message
    explorer.dims_text.value = "0, 1, 10"
    assert "Columns 0, 1, 10 " in _view_text(explorer)
    assert _view_png(explorer).startswith(PNG_SIGNATURE)
    explorer.dims_text.value = "zero"
    assert "comma-separated integers" in _view_text(explorer)


def test_explorer_without_ipywidgets_says_how_to_install(monkeypatch):
    import sys

    from pe_lib.viz import widgets

    widgets._explorer_class.cache_clear()
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # makes `import ipywidgets` fail
    try:
        with pytest.raises(ImportError, match="pip install ipywidgets"):
            frequency_explorer()
    finally:
        widgets._explorer_class.cache_clear()
