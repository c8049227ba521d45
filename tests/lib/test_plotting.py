"""pe_lib.viz.plotting: each helper returns (Figure, Axes), labels its axes, draws what it is
given, draws on a given ax, never calls plt.show(), and rejects bad input."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pe_lib import sinusoidal_table, wavelengths
from pe_lib.viz.plotting import (
    FIGURE_WIDTH_IN,
    plot_attention_weights,
    plot_dimensions,
    plot_dot_product_vs_distance,
    plot_encoding_heatmap,
    plot_wavelengths,
)

TABLE = sinusoidal_table(40, 8, dtype=torch.float64)
WEIGHTS = torch.softmax(torch.arange(9.0).reshape(3, 3), dim=-1)
TOKENS = ["I", "ate", "rice"]

CALLS = {
    "heatmap": lambda **kw: plot_encoding_heatmap(TABLE, title="table", **kw),
    "dimensions": lambda **kw: plot_dimensions(TABLE, [0, 1, 6], offset=5, **kw),
    "wavelengths": lambda **kw: plot_wavelengths(8, **kw),
    "dot_product": lambda **kw: plot_dot_product_vs_distance(
        TABLE, reference_positions=[0, 20], **kw
    ),
    "attention": lambda **kw: plot_attention_weights(WEIGHTS, TOKENS, title="w", **kw),
}


@pytest.fixture(autouse=True)
def _show_is_forbidden(monkeypatch):
    def show(*args, **kwargs):
        raise AssertionError("a pe_lib plotting helper called plt.show()")

    monkeypatch.setattr(plt, "show", show)


@pytest.mark.parametrize("name", CALLS)
def test_returns_figure_and_labelled_axes(name):
    fig, ax = CALLS[name]()
    assert isinstance(fig, Figure) and isinstance(ax, Axes) and ax.figure is fig
    assert ax.get_xlabel() and ax.get_ylabel()
    assert ax.has_data()
    fig.canvas.draw()  # renders without error


@pytest.mark.parametrize("name", CALLS)
def test_draws_on_the_given_axes(name):
    fig, axes = plt.subplots(1, 2)
    before = plt.get_fignums()
    got_fig, got_ax = CALLS[name](ax=axes[1])
    assert got_fig is fig and got_ax is axes[1]
    assert plt.get_fignums() == before  # no new figure
    assert axes[1].has_data() and not axes[0].has_data()


def test_heatmap_shows_the_table():
    _, ax = plot_encoding_heatmap(TABLE.float())
    np.testing.assert_allclose(ax.images[0].get_array(), TABLE.float().numpy())
    assert ax.images[0].get_cmap().name == "viridis"


def test_dimensions_plots_the_chosen_columns_against_position():
    _, ax = plot_dimensions(TABLE.numpy(), [1, 6], offset=5)
    assert len(ax.lines) == 2
    for line, column in zip(ax.lines, [1, 6], strict=True):
        np.testing.assert_array_equal(line.get_xdata(), np.arange(5, 45))
        np.testing.assert_array_equal(line.get_ydata(), TABLE[:, column].numpy())


def test_wavelengths_plot_the_wavelengths():
    _, ax = plot_wavelengths(10, base=100.0)
    points = ax.lines[0]
    np.testing.assert_array_equal(points.get_xdata(), [0, 2, 4, 6, 8])
    np.testing.assert_allclose(points.get_ydata(), wavelengths(10, 100.0).numpy())
    assert ax.get_yscale() == "log"


def test_dot_product_against_distance():
    _, ax = plot_dot_product_vs_distance(TABLE, reference_positions=[0, 20])
    for line, p in zip(ax.lines, [0, 20], strict=True):
        np.testing.assert_array_equal(line.get_xdata(), np.arange(40) - p)
        np.testing.assert_allclose(line.get_ydata(), (TABLE @ TABLE[p]).numpy())


def test_attention_weights_carry_the_tokens():
    _, ax = plot_attention_weights(WEIGHTS.numpy(), TOKENS)
    assert [label.get_text() for label in ax.get_xticklabels()] == TOKENS
    assert [label.get_text() for label in ax.get_yticklabels()] == TOKENS


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: plot_encoding_heatmap([[0.0]]), TypeError, r"table must be .*\[\[0\.0\]\]"),
        (lambda: plot_encoding_heatmap(torch.zeros(4)), ValueError, r"table .*shape \(4,\)"),
        (lambda: plot_encoding_heatmap(np.zeros((0, 3))), ValueError, r"non-empty.*\(0, 3\)"),
        (lambda: plot_encoding_heatmap(TABLE, ax="left"), TypeError, r"ax must be .*'left'"),
        (lambda: plot_dimensions(TABLE, [0, 8]), ValueError, r"dims .*\[0, 8\).*\[0, 8\]"),
        (lambda: plot_dimensions(TABLE, [-1]), ValueError, r"dims .*got \[-1\]"),
        (
            lambda: plot_dimensions(TABLE, []),
            ValueError,
            r"dims must hold at least one index.*got \[\]",
        ),
        (lambda: plot_dimensions(TABLE, [True]), TypeError, r"dims .*ints.*\[True\]"),
        (lambda: plot_dimensions(TABLE, [1.0]), TypeError, r"dims .*ints.*\[1\.0\]"),
        (lambda: plot_dimensions(TABLE, 3), TypeError, r"dims must be a sequence.*got 3"),
        (lambda: plot_dimensions(TABLE, [0], offset=-2), ValueError, r"offset .*got -2"),
        (lambda: plot_wavelengths(0), ValueError, r"d_model .*got 0"),
        (lambda: plot_wavelengths(8, base=1.0), ValueError, r"base .*> 1.*got 1\.0"),
        (
            lambda: plot_dot_product_vs_distance(TABLE, reference_positions=[40]),
            ValueError,
            r"reference_positions .*\[0, 40\).*got \[40\]",
        ),
        (
            lambda: plot_dot_product_vs_distance(TABLE, reference_positions=[]),
            ValueError,
            r"reference_positions must hold at least one index.*got \[\]",
        ),
        (
            lambda: plot_attention_weights(torch.ones(2, 2) / 2, TOKENS),
            ValueError,
            r"weights must have shape .*\(3, 3\).*got \(2, 2\)",
        ),
        (lambda: plot_attention_weights(WEIGHTS, "abc"), TypeError, r"tokens .*str.*'abc'"),
        (lambda: plot_attention_weights(WEIGHTS, [1, 2, 3]), TypeError, r"tokens .*\[1, 2, 3\]"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_book_figures_share_one_width_and_text_size_and_render_at_twice_the_resolution():
    import matplotlib as mpl
    import matplotlib.pyplot as plt
    from IPython.core.interactiveshell import InteractiveShell

    from pe_lib.viz.plotting import BOOK_RC, FIGURE_WIDTH_IN, use_book_figures

    saved = dict(mpl.rcParams)
    shell = InteractiveShell.instance()
    try:
        use_book_figures()
        for key in ("font.size", "xtick.labelsize", "legend.fontsize", "figure.dpi"):
            assert mpl.rcParams[key] == BOOK_RC[key]
        formatter = shell.display_formatter.formatters["image/png"]
        sizes = []
        for figsize in ((11, 4), (4, 3)):
            fig, ax = plt.subplots(figsize=figsize)
            ax.plot([0, 1], [0, 1])
            data, metadata = formatter(fig)
            assert data[:8] == b"\x89PNG\r\n\x1a\n"
            # retina: the PNG has twice the pixels of the width it asks to be shown at
            assert metadata["width"] * 2 >= 0.95 * FIGURE_WIDTH_IN * BOOK_RC["figure.dpi"]
            assert fig.get_size_inches()[0] == pytest.approx(FIGURE_WIDTH_IN)
            sizes.append(fig.get_size_inches()[1] / fig.get_size_inches()[0])
            plt.close(fig)
        assert sizes == pytest.approx([4 / 11, 3 / 4])  # the aspect asked for is kept
    finally:
        mpl.rcParams.update(saved)
        InteractiveShell.clear_instance()


def test_neighbouring_dimensions_get_distinct_colours():
    from matplotlib.colors import to_rgb

    fig, ax = plot_dimensions(torch.zeros(10, 8), dims=(0, 1, 2))
    colours = [to_rgb(line.get_color()) for line in ax.get_lines()[:3]]
    distance = min(
        sum((a - b) ** 2 for a, b in zip(colours[i], colours[i + 1], strict=True)) ** 0.5
        for i in range(2)
    )
    assert distance > 0.3, colours


def test_book_text_is_never_smaller_than_the_smallest_size():
    from pe_lib.viz.plotting import BOOK_RC, SMALLEST_TEXT_PT

    sizes = {k: v for k, v in BOOK_RC.items() if k.endswith("size") and k != "figure.figsize"}
    assert sizes and min(sizes.values()) == SMALLEST_TEXT_PT
    # 100 dpi: where a figure is shown at 1 to 1 (a desktop's column) the smallest text is at
    # least 13 CSS px; scaled into the narrowest column at 400 px (330 px, a solution's box;
    # the figure as drawn is up to 20 px wider, its margins) it stays at 9 px or more.
    point = BOOK_RC["figure.dpi"] / 72
    assert SMALLEST_TEXT_PT * point >= 13
    assert SMALLEST_TEXT_PT * point * 330 / (FIGURE_WIDTH_IN * BOOK_RC["figure.dpi"] + 20) >= 9


@pytest.mark.parametrize("name", CALLS)
def test_helpers_draw_no_text_below_the_smallest_size(name):
    import matplotlib as mpl

    from pe_lib.viz.plotting import SMALLEST_TEXT_PT, smallest_text, use_book_figures

    with mpl.rc_context():
        use_book_figures()
        fig, _ = CALLS[name]()
        size, text = smallest_text(fig)
    assert size >= SMALLEST_TEXT_PT, f"{text!r} at {size} pt"
    plt.close(fig)


def test_smallest_text_finds_the_smallest_visible_text():
    from pe_lib.viz.plotting import smallest_text

    fig, ax = plt.subplots()
    assert smallest_text(plt.figure()) is None
    ax.set_xlabel("x", fontsize=14)
    ax.text(0.5, 0.5, "hidden", fontsize=3, visible=False)
    ax.text(0.5, 0.5, "   ", fontsize=4)
    ax.tick_params(labelsize=12)
    ax.set_title("title", fontsize=6)
    assert smallest_text(fig) == (6.0, "title")
    plt.close("all")


def test_book_figures_refuse_text_too_small_for_a_phone():
    import matplotlib as mpl
    from IPython.core.interactiveshell import InteractiveShell

    from pe_lib.viz.plotting import use_book_figures

    saved = dict(mpl.rcParams)
    shell = InteractiveShell.instance()
    try:
        use_book_figures()
        formatter = shell.display_formatter.formatters["image/png"]
        fig, ax = plt.subplots(figsize=(9, 3))
        ax.plot([0, 1], [0, 1], label="line")
        ax.legend(fontsize=8)
        with pytest.raises(ValueError, match=r"'line' is 8 pt, below the book's smallest, 10.5 pt"):
            formatter.lookup(fig)(fig)
        ax.legend()  # the book's size: shown
        data, _ = formatter.lookup(fig)(fig)
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        plt.close(fig)
    finally:
        mpl.rcParams.update(saved)
        InteractiveShell.clear_instance()
