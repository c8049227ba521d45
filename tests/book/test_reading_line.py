"""The reading line: a code cell whose source only asserts or only draws is folded.

A chapter reads as an argument; code that teaches stays open, and a cell whose whole job is to
check a claim or to draw a figure carries the tag ``hide-input`` (its input behind a toggle, its
output on the page, still run by nbval), or ``remove-input`` / ``remove-cell``.

"Only asserts or draws" is decided from the cell's syntax tree: every top-level statement is

- an ``assert`` statement, or a call of a checking function: a name or attribute beginning
  with ``assert`` (``torch.testing.assert_close``) or ``check_`` (``pe_lib.checks``'s
  checkers), or anything under ``pe_lib.checks``;
- a drawing call, alone or assigned to names: a call under ``plt``, of a matplotlib method
  (``ax.plot``, ``fig.colorbar``, ... the names in ``DRAWING_METHODS``), of one of pe_lib's
  figure helpers (``plot_*``, ``*_chart``, ``line_colours``), or ``display``;
- an assignment of a figure's inputs: a value built from names, literals and operators with
  no call but those of ``SHAPING`` (``range``, ``zip``, ``np.arange``, ...) or drawing calls
  (``where = torch.arange(1, 128)``, ``markers = {"none": "o"}``), in a cell that draws or
  asserts;
- ``pass``, or a ``for`` / ``if`` / ``with`` whose own statements are all of the above.

A cell with anything else (a computation, a print, a definition, an import) teaches something
and may stay open. A cell of IPython magics only is not Python and is left alone.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "book").glob("[0-9]*.ipynb"))
FOLDED = {"hide-input", "remove-input", "remove-cell"}

# Methods of matplotlib's Axes and Figure that only draw or lay out.
DRAWING_METHODS = frozenset(
    """
    plot scatter bar barh hist step stairs imshow matshow pcolormesh pcolor contour contourf
    fill_between fill_betweenx errorbar axhline axvline axhspan axvspan hlines vlines text
    annotate arrow legend colorbar grid set set_title set_xlabel set_ylabel set_xlim set_ylim
    set_xticks set_yticks set_xticklabels set_yticklabels set_xscale set_yscale set_aspect
    tick_params label_outer suptitle supxlabel supylabel tight_layout savefig show subplots
    add_subplot twinx twiny semilogx semilogy loglog axis invert_yaxis invert_xaxis margins
    spines set_visible set_color set_linewidth secondary_xaxis secondary_yaxis clabel quiver
    add_patch add_artist
    """.split()
)
DRAWING_HELPERS = frozenset({"display", "line_colours"})
# Calls that only arrange values a figure or a check is given.
SHAPING = frozenset({"range", "zip", "dict", "list", "tuple", "enumerate", "arange", "linspace"})


def _dotted(node: ast.expr) -> list[str]:
    """``a.b.c`` as ``["a", "b", "c"]``; a call or subscript inside the chain is looked through
    (``axes[0].plot`` gives ``["axes", "plot"]``)."""
    parts: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Name):
            parts.append(node.id)
            return parts[::-1]
        else:
            return parts[::-1]


def is_check_call(node: ast.expr) -> bool:
    if not isinstance(node, ast.Call):
        return False
    names = _dotted(node.func)
    if not names:
        return False
    last = names[-1]
    return (
        last.startswith(("assert", "check_"))
        or names[:2] == ["pe_lib", "checks"]
        or names[0] == "checks"
    )


def is_drawing_call(node: ast.expr) -> bool:
    if not isinstance(node, ast.Call):
        return False
    names = _dotted(node.func)
    if not names:
        return False
    last = names[-1]
    return (
        names[0] == "plt"
        or (len(names) > 1 and last in DRAWING_METHODS)
        or last.startswith("plot_")
        or last.endswith("_chart")
        or last in DRAWING_HELPERS
    )


def is_figure_input(node: ast.expr) -> bool:
    """A value that computes nothing: no call in it but shaping or drawing calls."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and not is_drawing_call(inner):
            names = _dotted(inner.func)
            if not names or names[-1] not in SHAPING:
                return False
        if isinstance(inner, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield)):
            return False
    return True


def only_asserts_or_draws(statement: ast.stmt) -> bool:
    """Whether one statement only checks or only draws (see the module's docstring)."""
    if isinstance(statement, (ast.Assert, ast.Pass)):
        return True
    if isinstance(statement, ast.Expr):
        return is_check_call(statement.value) or is_drawing_call(statement.value)
    if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
        return is_drawing_call(statement.value) or is_figure_input(statement.value)
    if isinstance(statement, (ast.For, ast.If, ast.With)):
        body = statement.body + getattr(statement, "orelse", [])
        return all(only_asserts_or_draws(s) for s in body)
    return False


def cell_only_asserts_or_draws(source: str) -> bool:
    """Whether a code cell's every statement only checks or draws (``False`` for an empty
    cell, and for one that is not Python, such as IPython magics)."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return False
    statements = tree.body
    # Assignments alone neither check nor draw: a cell must do one of the two.
    acts = any(
        not isinstance(s, (ast.Assign, ast.AnnAssign, ast.Pass))
        for s in ast.walk(tree)
        if isinstance(s, ast.stmt)
    )
    return bool(statements) and acts and all(only_asserts_or_draws(s) for s in statements)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("assert x > 0\ntorch.testing.assert_close(a, b)", True),
        ("check_sinusoidal_table(table)\npe_lib.checks.check_rope(f)", True),
        ('fig, ax = plt.subplots()\nax.plot(x, y)\nax.set(xlabel="p")\nplt.show()', True),
        ("for k in kinds:\n    axes[0].plot(x[k], label=k)\nfig.colorbar(im)", True),
        ("alibi_bias_chart(num_heads=8, max_distance=32)", True),
        ("for k in kinds:\n    assert accuracy[k] > 0.9", True),
        ("assert x > 0\nprint(x)", False),
        ("y = f(x)\nassert y > 0", False),
        ("fig, ax = plt.subplots()\nwhere = torch.arange(9)\nax.plot(where)", True),
        ("fig, ax = plt.subplots()\ntable = build(9)\nax.plot(table)", False),
        ("x = 3\ny = 4", False),
        ("def f(x):\n    assert x", False),
        ("%pip install x", False),
        ("", False),
    ],
)
def test_the_definition(source: str, expected: bool) -> None:
    assert cell_only_asserts_or_draws(source) is expected


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_cells_that_only_assert_or_draw_are_folded(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    open_cells = [
        f"cell {index}: {cell.source.splitlines()[0][:60]}"
        for index, cell in enumerate(notebook.cells)
        if cell.cell_type == "code"
        and not FOLDED & set(cell.get("metadata", {}).get("tags", []))
        and cell_only_asserts_or_draws(cell.source)
    ]
    assert not open_cells, (
        f"{path.name}: cells that only assert or draw, shown open (tag them hide-input):\n  "
        + "\n  ".join(open_cells)
    )
