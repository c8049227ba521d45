"""Matplotlib figures used by the chapters.

Every helper draws on ``ax`` when one is given (otherwise on a new figure), returns
``(figure, axes)`` and never calls ``plt.show()``. Colormaps are perceptually uniform and
colour-blind safe (``viridis`` for values, ``cividis`` for attention weights); lines take the
colours of :mod:`pe_lib.viz.style`. :func:`use_book_figures` applies the book's house style.
"""

from __future__ import annotations

import reprlib
from collections.abc import Sequence
from typing import Any, Literal

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.cm import ScalarMappable
from matplotlib.figure import Figure

from .._validation import check_indices, check_nonnegative_int, renamed_keyword
from ..encodings.sinusoidal import wavelengths as _wavelengths
from .style import LINE_CYCLE

__all__ = [
    "BOOK_RC",
    "FIGURE_WIDTH_IN",
    "SMALLEST_TEXT_PT",
    "plot_attention_weights",
    "plot_dimensions",
    "plot_dot_product_vs_distance",
    "plot_encoding_heatmap",
    "plot_wavelengths",
    "smallest_text",
    "use_book_figures",
]

#: The width of every figure of the book in inches (500 CSS px at 100 dpi), whatever size
#: the code asked for; the height follows the aspect asked for. The text column at 1280 px
#: (784 px wide) shows it at 1 to 1, so text has one size across figures; a phone's column at
#: 400 px (352 px, 330 in a solution's box) scales it by 0.7, where a figure 6.4 in wide was
#: scaled by 0.54 and its 10 pt tick labels showed at 7.5 CSS px.
FIGURE_WIDTH_IN = 5.0

#: The size in points of the smallest text a figure may hold (tick labels, legends,
#: annotations). At 100 dpi it is 14.6 CSS px where the figure is shown at 1 to 1 (a desktop),
#: and 10 px in a phone's column at 400 px (9.4 px in a solution's box), never under 9 CSS px
#: (about 6.75 pt, the smallest type print journals accept in a figure). The book's style,
#: :func:`use_book_figures`, refuses to show a figure with smaller text.
SMALLEST_TEXT_PT = 10.5

#: The book's house style for matplotlib figures (README, section Contributing, Figures), as
#: rcParams. Text sizes suit the figure width above and stay legible at 400 px (none below
#: :data:`SMALLEST_TEXT_PT`); lines take the colours of :mod:`pe_lib.viz.style`; PNG output has
#: twice the displayed resolution.
BOOK_RC: dict[str, Any] = {
    "figure.dpi": 100,
    "figure.figsize": (FIGURE_WIDTH_IN, 3.0),
    "font.size": 11.5,
    "axes.titlesize": 11.5,
    "axes.labelsize": 11.5,
    "xtick.labelsize": SMALLEST_TEXT_PT,
    "ytick.labelsize": SMALLEST_TEXT_PT,
    "legend.fontsize": SMALLEST_TEXT_PT,
    "legend.title_fontsize": SMALLEST_TEXT_PT,
    "figure.titlesize": 12.5,
    "figure.labelsize": 11.5,
    "lines.linewidth": 1.8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "savefig.facecolor": "white",
    "figure.facecolor": "white",
    "svg.hashsalt": "pe-book",
}


def smallest_text(fig: Figure) -> tuple[float, str] | None:
    """The size in points of the smallest visible text ``fig`` draws, and that text.

    Lays the figure out first (tick labels exist once it is drawn); ``None`` if it draws no
    text. Mathtext's sub- and superscripts are part of their label and not counted apart.
    """
    from matplotlib.text import Text

    fig.draw_without_rendering()
    found: tuple[float, str] | None = None
    for artist in fig.findobj(Text):
        if not artist.get_visible() or not artist.get_text().strip():
            continue
        axes = artist.axes
        if axes is not None and not axes.get_visible():
            continue
        size = float(artist.get_fontsize())
        if found is None or size < found[0]:
            found = (size, artist.get_text())
    return found


def use_book_figures() -> None:
    """Apply the book's figure style to matplotlib and, in IPython, to inline output.

    Sets :data:`BOOK_RC`; in a running IPython kernel, makes inline figures PNG at twice their
    resolution (sharp on high-DPI screens; nbval does not compare PNG bytes) and draws every
    figure :data:`FIGURE_WIDTH_IN` wide, scaling its height with it. A figure with text smaller
    than :data:`SMALLEST_TEXT_PT` is not shown: its output is a ``ValueError`` naming the text.
    Call it once, in a chapter's first code cell.
    """
    import matplotlib as mpl
    from cycler import cycler

    rc = dict(BOOK_RC)
    rc["axes.prop_cycle"] = cycler(color=list(LINE_CYCLE))
    params: Any = mpl.rcParams
    for key, value in rc.items():
        params[key] = value
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - matplotlib without IPython
        return
    shell = get_ipython()
    if shell is None:
        return
    from IPython.core.pylabtools import retina_figure

    # Activate the inline backend now: activating it later (at the first figure) would reset
    # the figure formatters and drop the one registered below.
    try:
        shell.run_line_magic("matplotlib", "inline")
    except NotImplementedError:  # a terminal shell without a GUI loop: no inline backend
        pass

    def book_png(fig: Figure) -> object:
        width, height = fig.get_size_inches()
        if width > 0 and abs(width - FIGURE_WIDTH_IN) > 1e-6:
            fig.set_size_inches(FIGURE_WIDTH_IN, height * FIGURE_WIDTH_IN / width)
        small = smallest_text(fig)
        if small is not None and small[0] < SMALLEST_TEXT_PT - 1e-9:
            raise ValueError(
                f"figure text {small[1]!r} is {small[0]:g} pt, below the book's smallest, "
                f"{SMALLEST_TEXT_PT:g} pt (illegible on a phone): leave text sizes to "
                "use_book_figures"
            )
        return retina_figure(fig, bbox_inches="tight")  # type: ignore[no-untyped-call]

    formatter = shell.display_formatter.formatters["image/png"]
    formatter.for_type(Figure, book_png)


def _as_numpy(name: str, table: torch.Tensor | np.ndarray, ndim: int = 2) -> np.ndarray:
    if isinstance(table, torch.Tensor):
        table = table.detach().to("cpu", torch.float64).numpy()
    if not isinstance(table, np.ndarray):
        raise TypeError(
            f"{name} must be a torch.Tensor or numpy array, "
            f"got {reprlib.repr(table)} of type {type(table).__name__}"
        )
    if table.ndim != ndim or table.size == 0:
        raise ValueError(
            f"{name} must be a non-empty array with {ndim} dimensions, got shape {table.shape}"
        )
    return table


def _axes(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize, layout="constrained")
        return fig, ax
    if not isinstance(ax, Axes):
        raise TypeError(
            f"ax must be a matplotlib Axes or None, got {ax!r} of type {type(ax).__name__}"
        )
    return ax.figure, ax  # type: ignore[return-value]


def _labelled(
    fig: Figure,
    ax: Axes,
    labels: tuple[str, str],
    title: str | None = None,
    colorbar: tuple[ScalarMappable, str] | None = None,
    legend: Literal["upper right", "lower right"] | None = None,
) -> tuple[Figure, Axes]:
    """Labels ``ax``'s axes ``(x, y)``; adds the title if any, a colour bar ``(image, label)``
    or a small legend at ``legend`` (a matplotlib location such as ``"upper right"``)."""
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    if title:
        ax.set_title(title)
    if colorbar is not None:
        fig.colorbar(colorbar[0], ax=ax, label=colorbar[1])
    if legend is not None:
        ax.legend(loc=legend)
    return fig, ax


def plot_encoding_heatmap(
    table: torch.Tensor | np.ndarray,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    cmap: str = "viridis",
) -> tuple[Figure, Axes]:
    """Heatmap of a ``(num_positions, d_model)`` table: positions down, dimensions across."""
    values = _as_numpy("table", table)
    fig, ax = _axes(ax, (7, 4))
    image = ax.imshow(values, aspect="auto", cmap=cmap, vmin=-1, vmax=1, interpolation="nearest")
    return _labelled(fig, ax, ("embedding dimension", "position"), title, (image, "value"))


def plot_dimensions(
    table: torch.Tensor | np.ndarray,
    dims: Sequence[int],
    *,
    offset: int | None = None,
    ax: Axes | None = None,
    start: int | None = None,
) -> tuple[Figure, Axes]:
    """Chosen columns of a ``(num_positions, d_model)`` table against position.

    Args:
        table: the table, a tensor or array of shape ``(num_positions, d_model)``.
        dims: column indices in ``[0, d_model)``, at least one.
        offset: the position of the table's first row, >= 0 (default 0), for the x axis.
        ax: the axes to draw on, or ``None`` for a new figure.
        start: the older name of ``offset``, still accepted.
    """
    values = _as_numpy("table", table)
    columns = check_indices("dims", dims, values.shape[1])
    offset_name, first = renamed_keyword("offset", offset, "start", start, 0)
    first = check_nonnegative_int(offset_name, first)
    fig, ax = _axes(ax, (7, 3.5))
    positions = np.arange(first, first + values.shape[0])
    # Neighbouring columns (a sine and its cosine) must not look alike: qualitative colours,
    # the Okabe-Ito set of pe_lib.viz.style, cycled.
    palette = [colour for colour in LINE_CYCLE if colour != "#7f7f7f"]
    colors = [palette[index % len(palette)] for index in range(len(columns))]
    for d, color in zip(columns, colors, strict=True):
        ax.plot(positions, values[:, d], color=color, label=f"dim {d}")
    ax.set_xlabel("position")
    ax.set_ylabel("encoding value")
    ax.legend(loc="upper right", ncols=min(len(columns), 4))
    return fig, ax


def plot_wavelengths(
    d_model: int, *, base: float = 10000.0, ax: Axes | None = None
) -> tuple[Figure, Axes]:
    """Wavelength of each sine/cosine pair against its dimension ``2i``, on a log scale."""
    lam = _wavelengths(d_model, base).numpy()
    fig, ax = _axes(ax, (6, 3.5))
    ax.semilogy(2 * np.arange(lam.size), lam, marker=".", linestyle="none")
    ax.axhline(2 * np.pi, color="0.5", linestyle=":", label=r"$2\pi$")
    ax.axhline(2 * np.pi * base, color="0.5", linestyle="--", label=r"$2\pi\cdot$base")
    # Each line named where it runs clear of the points (which rise from one to the other): a
    # legend in any corner covered one of the lines.
    where: tuple[str, str] = ("axes fraction", "data")
    for text, y, x, ha, va in (
        (r"$2\pi$", 2 * np.pi, 1, "right", "bottom"),
        (r"$2\pi\cdot$base", 2 * np.pi * base, 0, "left", "top"),
    ):
        offset = (4 if x == 0 else -4, 2 if va == "bottom" else -2)
        ax.annotate(
            text, (x, y), xytext=offset, xycoords=where, textcoords="offset points", ha=ha, va=va
        )
    return _labelled(fig, ax, ("dimension 2i", "wavelength (positions)"))


def plot_dot_product_vs_distance(
    table: torch.Tensor | np.ndarray,
    *,
    reference_positions: Sequence[int] = (0,),
    ax: Axes | None = None,
) -> tuple[Figure, Axes]:
    """``PE(p) . PE(q)`` against ``q - p`` for each reference position ``p``."""
    values = _as_numpy("table", table)
    references = check_indices("reference_positions", reference_positions, values.shape[0])
    fig, ax = _axes(ax, (6, 3.5))
    positions = np.arange(values.shape[0])
    for p in references:
        ax.plot(positions - p, values @ values[p], label=f"p = {p}")
    return _labelled(fig, ax, ("distance q - p", r"$PE(p)\cdot PE(q)$"), legend="upper right")


def plot_attention_weights(
    weights: torch.Tensor | np.ndarray,
    tokens: Sequence[str],
    *,
    ax: Axes | None = None,
    title: str | None = None,
) -> tuple[Figure, Axes]:
    """Heatmap of a ``(seq_len, seq_len)`` attention matrix with token labels."""
    values = _as_numpy("weights", weights)
    if isinstance(tokens, str) or not all(isinstance(t, str) for t in tokens):
        raise TypeError(f"tokens must be a sequence of str, got {reprlib.repr(tokens)}")
    tokens = list(tokens)
    if values.shape != (len(tokens), len(tokens)):
        raise ValueError(
            f"weights must have shape (len(tokens), len(tokens)) = {(len(tokens),) * 2}, "
            f"got {values.shape}"
        )
    fig, ax = _axes(ax, (4, 3.5))
    image = ax.imshow(values, cmap="cividis", vmin=0, vmax=1)
    ax.set_xticks(range(len(tokens)), tokens)
    ax.set_yticks(range(len(tokens)), tokens)
    return _labelled(fig, ax, ("key (attended to)", "query"), title, (image, "weight"))
