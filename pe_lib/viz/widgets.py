r"""Interactive explorer of the sinusoidal encoding (needs the optional ``ipywidgets``).

:func:`draw_frequency_view` draws one view as a plain matplotlib figure: chosen columns of the
table against position, next to the wavelength :math:`\lambda_i = 2\pi\,\mathrm{base}^{2i/d}`
of every sine/cosine pair (Vaswani et al., 2017, section 3.5). :func:`frequency_explorer` wraps
the same drawing in sliders, so a reader with a running kernel can change ``d_model``, ``base``,
the columns and the number of positions and see the view redrawn. Readers without a kernel get
the static figure, or the last rendered state saved with the notebook.

``ipywidgets`` is imported only inside :func:`frequency_explorer`; install it with
``pip install ipywidgets`` (or ``pip install "pe_lib[widgets]"``).
"""

from __future__ import annotations

import base64
import functools
import io
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .._validation import check_base, check_indices, check_positive_int
from ..encodings.sinusoidal import DEFAULT_BASE, sinusoidal_table
from ..encodings.sinusoidal import wavelengths as _wavelengths
from .plotting import plot_dimensions, plot_wavelengths

if TYPE_CHECKING:  # pragma: no cover
    import ipywidgets

__all__ = ["draw_frequency_view", "frequency_explorer", "parse_dims"]


def _check_dims(dims: object, d_model: int) -> tuple[int, ...]:
    """Distinct column indices in ``[0, d_model)``, at least one."""
    return tuple(check_indices("dims", dims, d_model, distinct=True))


def parse_dims(text: str, d_model: int) -> tuple[int, ...]:
    """Column indices from comma-separated text such as ``"0, 1, 10, 30"``.

    Args:
        text: comma-separated integers (spaces allowed).
        d_model: number of columns; every index must lie in ``[0, d_model)``.

    Returns:
        the indices as a tuple of ints, in the order given.
    """
    if not isinstance(text, str):
        raise TypeError(
            f"text must be a str of comma-separated column indices, got {text!r} "
            f"of type {type(text).__name__}"
        )
    d_model = check_positive_int("d_model", d_model)
    pieces = [piece.strip() for piece in text.split(",")]
    try:
        values = [int(piece) for piece in pieces if piece]
    except ValueError:
        raise ValueError(
            f"dims must be comma-separated integers such as '0, 1, 10, 30', got {text!r}"
        ) from None
    return _check_dims(values, d_model)


def _check_view(
    d_model: object, base: object, dims: object, num_positions: object
) -> tuple[int, float, tuple[int, ...], int]:
    d_model = check_positive_int("d_model", d_model)
    base = check_base("base", base)
    num_positions = check_positive_int("num_positions", num_positions)
    return d_model, base, _check_dims(dims, d_model), num_positions


def draw_frequency_view(
    d_model: int = 64,
    base: float = DEFAULT_BASE,
    dims: Sequence[int] = (0, 1, 10, 30),
    num_positions: int = 100,
) -> tuple[Figure, tuple[Axes, Axes]]:
    r"""Chosen columns of the sinusoidal table, beside the wavelength of every pair.

    Left: columns ``dims`` of ``sinusoidal_table(num_positions, d_model, base=base)`` against
    position (one line per column, :func:`pe_lib.viz.plotting.plot_dimensions`). Right: the
    wavelength :math:`2\pi\,\mathrm{base}^{2i/d}` of each pair ``i`` on a log scale
    (:func:`pe_lib.viz.plotting.plot_wavelengths`), with the pairs of the chosen columns circled in
    the colours of the left panel. Vaswani et al. (2017), section 3.5.

    Args:
        d_model: number of columns of the table, >= 1.
        base: frequency base, > 1.
        dims: distinct column indices in ``[0, d_model)``, at least one.
        num_positions: number of positions (rows) drawn, >= 1.

    Returns:
        ``(figure, (waves_axes, wavelength_axes))``; the figure is open in pyplot (close it,
        or show it with ``plt.show()``).
    """
    d_model, base, dims, num_positions = _check_view(d_model, base, dims, num_positions)
    table = sinusoidal_table(num_positions, d_model, base=base, dtype=torch.float64)
    fig, (ax_waves, ax_lengths) = plt.subplots(
        1, 2, figsize=(11, 3.8), layout="constrained", width_ratios=(3, 2)
    )
    plot_dimensions(table, dims, ax=ax_waves)
    ax_waves.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    ax_waves.set_title(f"columns {', '.join(map(str, dims))} (d_model={d_model})")

    plot_wavelengths(d_model, base=base, ax=ax_lengths)
    lam = _wavelengths(d_model, base).numpy()
    colors = plt.get_cmap("viridis")(np.linspace(0, 0.9, len(dims)))
    pairs = [d // 2 for d in dims]
    ax_lengths.scatter(
        [2 * i for i in pairs],
        lam[pairs],
        s=70,
        facecolors="none",
        edgecolors=colors,
        linewidths=1.5,
        label="chosen columns",
        zorder=3,
    )
    ax_lengths.legend(loc="lower right", fontsize="small")
    ax_lengths.set_title(f"wavelength per pair (base={base:g})")
    return fig, (ax_waves, ax_lengths)


def _describe_view(d_model: int, base: float, dims: Sequence[int], num_positions: int) -> str:
    """One sentence describing the view: the figure's alternative text."""
    lam = _wavelengths(d_model, base).numpy()
    lengths = ", ".join(f"{lam[d // 2]:.4g}" for d in dims)
    return (
        f"Columns {', '.join(map(str, dims))} of the sinusoidal encoding with d_model={d_model} "
        f"and base={base:g} over positions 0 to {num_positions - 1} (wavelengths {lengths} "
        f"positions), beside the wavelengths of all {lam.size} pairs on a log scale, "
        f"from {lam[0]:.4g} to {lam[-1]:.4g}."
    )


def _figure_output(fig: Figure, description: str) -> dict[str, Any]:
    """A notebook ``display_data`` message holding ``fig`` as a PNG, with a text fallback."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=fig.dpi, metadata={"Software": None})
    png = base64.b64encode(buffer.getvalue()).decode("ascii")
    return {
        "output_type": "display_data",
        "data": {"image/png": png, "text/plain": description},
        "metadata": {"image/png": {"alt": description}},
    }


def _error_output(message: str) -> dict[str, Any]:
    return {
        "output_type": "display_data",
        "data": {"text/plain": f"Cannot draw this view: {message}"},
        "metadata": {},
    }


@functools.cache
def _explorer_class() -> type:
    """The widget class, defined on first use so that importing pe_lib never needs ipywidgets."""
    try:
        import ipywidgets as widgets
    except ImportError as error:
        raise ImportError(
            "frequency_explorer needs ipywidgets, an optional extra of pe_lib: "
            'run `pip install ipywidgets` (or `pip install "pe_lib[widgets]"`) and restart the '
            "kernel; draw_frequency_view draws the same view as a static figure without it"
        ) from error

    class FrequencyExplorer(widgets.VBox):  # type: ignore[misc]  # ipywidgets is untyped
        """Sliders for ``d_model``, ``base`` and ``num_positions``, a text box for the columns,
        and the view of :func:`draw_frequency_view`, redrawn whenever a control changes."""

        def __init__(
            self, d_model: int, base: float, dims: tuple[int, ...], num_positions: int
        ) -> None:
            self.d_model_slider = widgets.IntSlider(
                value=d_model,
                min=1,
                max=max(512, d_model),
                step=1,
                description="d_model",
                continuous_update=False,
            )
            log_base = math.log10(base)
            self.base_slider = widgets.FloatLogSlider(
                value=base,
                base=10,
                min=min(0.5, log_base),
                max=max(6.0, log_base),
                step=0.1,
                description="base",
                readout_format=".4g",
                continuous_update=False,
            )
            self.dims_text = widgets.Text(
                value=", ".join(map(str, dims)),
                description="dims",
                placeholder="comma-separated columns, e.g. 0, 1, 10, 30",
                continuous_update=False,
            )
            self.num_positions_slider = widgets.IntSlider(
                value=num_positions,
                min=min(10, num_positions),
                max=max(1000, num_positions),
                step=1,
                description="positions",
                continuous_update=False,
            )
            self.output = widgets.Output()
            self.render_count = 0
            controls = widgets.HBox(
                [
                    widgets.VBox([self.d_model_slider, self.base_slider]),
                    widgets.VBox([self.dims_text, self.num_positions_slider]),
                ],
                # On a narrow screen (a phone) the second column of controls moves below the first.
                layout=widgets.Layout(flex_flow="row wrap"),
            )
            super().__init__([controls, self.output])
            for control in (
                self.d_model_slider,
                self.base_slider,
                self.dims_text,
                self.num_positions_slider,
            ):
                control.observe(self._on_change, names="value")
            self.render()

        def __repr__(self) -> str:
            return (
                f"FrequencyExplorer(d_model={self.d_model_slider.value}, "
                f"base={self.base_slider.value:g}, dims='{self.dims_text.value}', "
                f"num_positions={self.num_positions_slider.value})"
            )

        def _on_change(self, change: dict[str, Any]) -> None:
            self.render()

        def render(self) -> None:
            """Redraw the view from the current control values (errors are shown, not raised)."""
            d_model = self.d_model_slider.value
            base = self.base_slider.value
            num_positions = self.num_positions_slider.value
            try:
                dims = parse_dims(self.dims_text.value, d_model)
                fig, _ = draw_frequency_view(d_model, base, dims, num_positions)
            except (TypeError, ValueError) as error:
                self.output.outputs = (_error_output(str(error)),)
            else:
                try:
                    description = _describe_view(d_model, base, dims, num_positions)
                    self.output.outputs = (_figure_output(fig, description),)
                finally:
                    plt.close(fig)
            self.render_count += 1

    return FrequencyExplorer


def frequency_explorer(
    d_model: int = 64,
    base: float = DEFAULT_BASE,
    dims: Sequence[int] = (0, 1, 10, 30),
    num_positions: int = 100,
) -> ipywidgets.VBox:
    """An ipywidgets explorer of :func:`draw_frequency_view`.

    Controls: an ``IntSlider`` for ``d_model`` (1 .. 512), a ``FloatLogSlider`` for ``base``
    (about 3 .. 10**6), a ``Text`` of comma-separated columns and an ``IntSlider`` for the
    number of positions (10 .. 1000); the ranges widen to include the starting values. Any
    change redraws the view into the widget's ``Output`` as a PNG image (the matplotlib figure
    is closed at once, so none accumulate); a choice that cannot be drawn, such as a column
    beyond ``d_model``, shows the error message instead.

    Args:
        d_model: starting number of columns, >= 1.
        base: starting frequency base, > 1.
        dims: starting columns, distinct indices in ``[0, d_model)``.
        num_positions: starting number of positions, >= 1.

    Returns:
        an ``ipywidgets.VBox`` subclass; its controls are the attributes ``d_model_slider``,
        ``base_slider``, ``dims_text`` and ``num_positions_slider``, the view is ``output``.

    Raises:
        ImportError: if ipywidgets is not installed (``pip install ipywidgets``).
    """
    d_model, base, dims, num_positions = _check_view(d_model, base, dims, num_positions)
    return _explorer_class()(d_model, base, dims, num_positions)
