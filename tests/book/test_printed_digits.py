"""Printed digits: a number that came out of training is printed through ``pe_lib.digits.stable``.

A stored output must not depend on the CPU that executed the chapter, and a value that comes
out of training moves between kernels by far more than last-bit noise: its training's last bits
compound over the steps. ``pe_lib.digits.stable(value, digits, kind)`` prints a value with the
decimals its kind's measured margin allows. This test makes the fault of printing such a value
at a precision chosen by hand hard to store again. It reads every chapter's code cells (their
syntax trees; lines of IPython magics are read as ``pass``), in order, and fails on:

1. **A rounding helper of the chapter's own**: a function named ``stable``; a function that
   formats a number with a precision computed at run time (``f"{value:.{digits}f}"``); or one
   that checks a margin (an ``assert`` or a comparison) and returns text holding a number
   formatted at a fixed precision, or a ``round(...)`` (``return f"[{low:.1f}, {low + 0.1:.1f})"``
   after ``assert value - low >= margin``). The one helper, with its margins, is
   ``pe_lib.digits``: a function that calls its ``stable`` or ``margin_of`` takes its margin
   from there (a band that asserts ``margin_of(value, kind)`` from its edges) and is not one.
2. **A trained number formatted outside** ``stable``. Each cell's top-level statements are read
   in order. A statement *trains* if it calls, anywhere inside it (a function it defines
   included), a function named ``train`` or ``train_lms`` with arguments
   (``pe_lib.experiments.toy.train``, ``pe_lib.experiments.lm.train_lms``) or a method ``.step()`` with none (an
   optimiser's step). A statement that trains, or that reads a *trained name*, makes trained the
   names it binds: those it assigns (loop and comprehension variables included; a function's
   parameters and locals are not bound at the cell's scope), the functions and classes it
   defines, the variables it assigns into or fills (``models[kind] = ...``,
   ``runs.append(...)``) and the model a training call is given (``train(model, ...)``). A
   statement that does neither makes the names it binds clean again, and names bound by an
   import are never trained. In a statement that trains or reads a trained name, a float format
   applied to an expression that reads a trained name fails, unless it is inside
   ``stable(...)``: an f-string or ``format`` spec with a precision (``.2f``, ``.3g``, ``.1%``)
   or whose default is six decimals (``f``, ``e``, ``%``), a ``"...".format(...)`` or ``%``
   template with such a field, or ``round(...)``. Text that ``stable`` returns needs no float
   format (``f"{stable(accuracy, 2, kind):>6}"``).

Numbers a formula computes may still be printed with a plain format, in cells that neither
train nor read a trained name; in those that do, ``stable(value, digits, "formula")`` states
which kind they are.
"""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "book").glob("[0-9]*.ipynb"))

TRAINING_FUNCTIONS = frozenset({"train", "train_lms"})
DIGITS_HELPERS = frozenset({"stable", "margin_of"})
# a float presentation with a precision (".2f", ".3g", ".1%"), or one whose default is six
# decimals ("f", "e", "%"); a bare "g" prints a short number as it is (8.0 as "8")
FLOAT_SPEC = re.compile(r"(\.\d+[eEfFgG%]|(^|[^.\d])\d*[eEfF%])$")
PERCENT_FIELD = re.compile(r"%[-+ #0]*(\d+|\*)?(\.(\d+|\*))?[eEfFgG]")


def _python(source: str) -> ast.Module:
    """A code cell's syntax tree; a line of IPython magic (``%pip ...``, ``!ls``) reads as
    ``pass`` at its indentation."""
    lines = []
    for line in source.splitlines():
        stripped = line.lstrip()
        if stripped.startswith(("%", "!")):
            line = line[: len(line) - len(stripped)] + "pass"
        lines.append(line)
    return ast.parse("\n".join(lines))


def _name_of(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _base(node: ast.expr) -> str | None:
    """The variable under a subscript or attribute chain: ``models`` of ``models[k].weight``."""
    while isinstance(node, (ast.Subscript, ast.Attribute, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _training_calls(tree: ast.AST, *, directly: bool = False) -> list[ast.Call]:
    """The training calls in a tree (``directly``: not those inside a function it defines)."""
    found, nodes = [], [tree]
    while nodes:
        node = nodes.pop()
        if directly and isinstance(node, FUNCTIONS):
            continue
        nodes.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Call):
            name = _name_of(node.func)
            has_arguments = bool(node.args or node.keywords)
            if name in TRAINING_FUNCTIONS and has_arguments:
                found.append(node)
            elif name == "step" and isinstance(node.func, ast.Attribute) and not has_arguments:
                found.append(node)
    return found


def _imported(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.add((alias.asname or alias.name).split(".")[0])
    return names


MUTATORS = frozenset({"append", "extend", "update", "add", "insert", "setdefault"})
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _targets(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _local_names(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """A function's parameters and the names it assigns."""
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    names = {a.arg for a in every}
    if not isinstance(function, ast.Lambda):
        names |= {
            n.id
            for n in ast.walk(function)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
    return names


def _reads(node: ast.AST) -> set[str]:
    """The free names an expression or statement reads: the names it loads, less those local
    to the functions, lambdas and comprehensions inside it."""
    if isinstance(node, ast.Name):
        return {node.id} if isinstance(node.ctx, ast.Load) else set()
    found: set[str] = set()
    for child in ast.iter_child_nodes(node):
        found |= _reads(child)
    if isinstance(node, FUNCTIONS):
        found -= _local_names(node)
    elif isinstance(node, COMPREHENSIONS):
        found -= set().union(*(_targets(g.target) for g in node.generators))
    return found


def _bound(statement: ast.stmt) -> set[str]:
    """The names a simple statement (or a definition) binds or changes at the cell's scope: the
    names it assigns, the function or class it defines, the variables it assigns into or fills
    (``models[kind] = ...``, ``runs.append(...)``) and the model a training call is given
    (``train(model, ...)``)."""
    names = set()
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        names.add(statement.name)
        inner: list[ast.AST] = []
    else:
        inner = [statement]
    while inner:
        node = inner.pop()
        if isinstance(node, FUNCTIONS) or isinstance(node, COMPREHENSIONS):
            continue  # their names are their own
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Store):
            names.add(_base(node) or "")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in MUTATORS
        ):
            names.add(_base(node.func.value) or "")
        inner.extend(ast.iter_child_nodes(node))
    for call in _training_calls(statement):
        if call.args:
            names.add(_base(call.args[0]) or "")
    return names - {""}


def _spec_text(spec: ast.expr | None) -> tuple[str, bool]:
    """A format spec's constant text, and whether part of it is computed at run time."""
    if spec is None:
        return "", False
    assert isinstance(spec, ast.JoinedStr)
    text, dynamic = "", False
    for part in spec.values:
        if isinstance(part, ast.Constant):
            text += str(part.value)
        else:
            dynamic = True
            text += "0"  # stands in for the computed part
    return text, dynamic


def _float_format(node: ast.AST) -> tuple[ast.AST, bool] | None:
    """If ``node`` is a float format or a ``round``: the value it formats, and whether its
    precision is computed at run time."""
    if isinstance(node, ast.FormattedValue):
        text, dynamic = _spec_text(node.format_spec)
        return (node.value, dynamic) if FLOAT_SPEC.search(text) else None
    if isinstance(node, ast.Call):
        name = _name_of(node.func)
        if name == "round" and node.args:
            return node.args[0], False
        if isinstance(node.func, ast.Name) and name == "format" and node.args:
            spec = node.args[1] if len(node.args) > 1 else None
            if spec is not None and not isinstance(spec, ast.Constant):
                return node.args[0], True
            if spec is not None and FLOAT_SPEC.search(str(spec.value)):
                return node.args[0], False
        if (
            name == "format"
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Constant)
            and isinstance(node.func.value.value, str)
        ):
            fields = list(string.Formatter().parse(node.func.value.value))
            if any(spec and FLOAT_SPEC.search(spec) for _, _, spec, _ in fields):
                return node, any("{" in (spec or "") for _, _, spec, _ in fields)
    if (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mod)
        and isinstance(node.left, ast.Constant)
        and isinstance(node.left.value, str)
        and PERCENT_FIELD.search(node.left.value)
    ):
        return node.right, "*" in node.left.value
    return None


def _rounding_helpers(tree: ast.AST) -> Iterator[tuple[str, int]]:
    """Rule 1: ``(function name, line)`` of every rounding helper a cell defines."""
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if node.name == "stable":
            yield node.name, node.lineno
            continue
        calls = {_name_of(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
        if calls & DIGITS_HELPERS:
            continue  # its margin is pe_lib.digits'
        formats = [f for n in ast.walk(node) if (f := _float_format(n))]
        returned = [r.value for r in ast.walk(node) if isinstance(r, ast.Return) and r.value]
        rounds_on_return = any(_float_format(n) for r in returned for n in ast.walk(r))
        checks_a_margin = any(isinstance(n, (ast.Assert, ast.Compare)) for n in ast.walk(node))
        if any(dynamic for _, dynamic in formats) or (rounds_on_return and checks_a_margin):
            yield node.name, node.lineno


def _trained_formats(node: ast.AST, trained: set[str]) -> Iterator[tuple[ast.AST, set[str]]]:
    """Rule 2 within one statement: every float format outside ``stable(...)`` whose value
    reads a trained name, with those names. A function's own names hide the cell's; a
    comprehension's variable is trained if its iterable reads a trained name."""
    if isinstance(node, ast.Call) and _name_of(node.func) == "stable":
        return
    if isinstance(node, FUNCTIONS):
        trained = trained - _local_names(node)
    elif isinstance(node, COMPREHENSIONS):
        trained = set(trained)
        for generator in node.generators:
            if _reads(generator.iter) & trained:
                trained |= _targets(generator.target)
            else:
                trained -= _targets(generator.target)
    found = _float_format(node)
    if found and _reads(found[0]) & trained:
        yield node, _reads(found[0]) & trained
    for child in ast.iter_child_nodes(node):
        yield from _trained_formats(child, trained)


class _Flow:
    """Rule 2 over a chapter: which names hold trained values, statement by statement."""

    def __init__(self, imported: set[str]) -> None:
        self.imported, self.trained, self.found = imported, set[str](), list[str]()

    def block(self, statements: list[ast.stmt], number: int, report: bool = True) -> None:
        for statement in statements:
            self.statement(statement, number, report)

    def statement(self, statement: ast.stmt, number: int, report: bool) -> None:
        body_of = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try)
        if isinstance(statement, body_of) and _training_calls(statement, directly=True):
            # a loop that trains: what it binds anywhere comes out of training
            self.trained |= _bound(statement) - self.imported
            self.check(statement, number, report)
            return
        if isinstance(statement, body_of):
            header: list[ast.AST] = []
            if isinstance(statement, (ast.For, ast.AsyncFor)):
                header = [statement.iter]
                targets = _targets(statement.target) - self.imported
                derived = _training_calls(statement.iter) or _reads(statement.iter) & self.trained
                self.trained = self.trained | targets if derived else self.trained - targets
            elif isinstance(statement, (ast.While, ast.If)):
                header = [statement.test]
            elif isinstance(statement, (ast.With, ast.AsyncWith)):
                header = list(statement.items)
                for item in statement.items:
                    if item.optional_vars is not None:
                        targets = _targets(item.optional_vars) - self.imported
                        if _reads(item.context_expr) & self.trained:
                            self.trained |= targets
                        else:
                            self.trained -= targets
            for expression in header:
                self.check(expression, number, report)
            bodies = [getattr(statement, name, []) for name in ("body", "orelse", "finalbody")]
            bodies += [h.body for h in getattr(statement, "handlers", [])]
            loops = isinstance(statement, (ast.For, ast.AsyncFor, ast.While))
            for body in bodies:
                if loops:  # once more for what a pass hands the next one
                    self.block(body, number, report=False)
                self.block(body, number, report)
            return
        bound = _bound(statement) - self.imported
        if _training_calls(statement) or _reads(statement) & self.trained:
            self.trained |= bound
            self.check(statement, number, report)
        else:
            self.trained -= bound

    def check(self, node: ast.AST, number: int, report: bool) -> None:
        for fault, names in _trained_formats(node, self.trained):
            if report:
                self.found.append(
                    f"code cell {number}, line {getattr(fault, 'lineno', '?')}: a value read "
                    f"from trained names ({', '.join(sorted(names))}) is formatted at a fixed "
                    "precision; print it with pe_lib.digits.stable(value, digits, kind)"
                )


def violations(cells: list[str]) -> list[str]:
    """What the rules find in a chapter's code cells, in order: one line per fault."""
    trees = [_python(source) for source in cells]
    flow = _Flow(set().union(*map(_imported, trees)) if trees else set())
    found = []
    for number, tree in enumerate(trees):
        for name, line in _rounding_helpers(tree):
            found.append(
                f"code cell {number}, line {line}: defines its own rounding helper {name}(); "
                "print through pe_lib.digits.stable(value, digits, kind) instead"
            )
        flow.found = []
        flow.block(tree.body, number)
        found += flow.found
    return found


def _code_cells(chapter: Path) -> list[str]:
    notebook = nbformat.read(chapter, as_version=4)
    return [cell.source for cell in notebook.cells if cell.cell_type == "code"]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_trained_numbers_are_printed_through_stable(chapter: Path) -> None:
    assert not violations(_code_cells(chapter)), "\n".join(violations(_code_cells(chapter)))


# The rule itself, on cells written the ways a chapter could get it wrong (and right).
TRAIN = "model = Model()\ntrain(model, steps=10)\naccuracy = evaluate(model, 32)"
PLANTED = {
    # chapter 7's probe cell as it was: a helper of its own, margins for last-bit noise
    "own stable": (
        [
            TRAIN,
            "def stable(value):\n"
            "    for digits, margin in ((2, 0.0005), (1, 0.005)):\n"
            "        scale = 10**digits\n"
            "        if abs(value * scale % 1 - 0.5) / scale >= margin:\n"
            "            return f'{value:.{digits}f}'\n"
            "    raise AssertionError(value)\n"
            "print(stable(accuracy))",
        ],
        ["own rounding helper stable()"],
    ),
    # chapter 7's bands as they were: a helper that returns fixed-precision text
    "own band": (
        [
            TRAIN + "\ndef tenths(value, margin=0.002):\n    low = int(value * 10) / 10\n"
            "    assert value - low >= margin and low + 0.1 - value >= margin\n"
            "    return f'[{low:.1f}, {low + 0.1:.1f})'\nprint(tenths(accuracy))"
        ],  # fmt: skip
        ["own rounding helper tenths()"],
    ),
    "f-string in the training cell": ([TRAIN + "\nprint(f'{accuracy:.2f}')"], ["(accuracy)"]),
    "in a later cell": ([TRAIN, "share = accuracy / 2", "print(f'{share:>6.1%}')"], ["(share)"]),
    "an optimiser's step": (
        ["for _ in range(3):\n    loss = f(net)\n    optimiser.step()", "print('%.3f' % loss)"],
        ["(loss)"],
    ),
    "format and round": (
        [TRAIN, "print(format(accuracy, '.2f'), round(accuracy, 2), '{:.1e}'.format(accuracy))"],
        ["(accuracy)", "(accuracy)", "(accuracy)"],
    ),
    "a model trained in place": (
        ["net = Net()", "train(net, steps=5)", "print(f'{net.bias.item():.3f}')"],
        ["(net)"],
    ),
    # right: the helper, a verdict, a formula's value, and a name bound again without training
    "through stable": (
        [TRAIN, "print(f\"{stable(accuracy, 2, 'training accuracy'):>6}\")"],
        [],
    ),
    "a verdict": ([TRAIN, "print(f'above 0.95: {accuracy > 0.95}')"], []),
    "a formula beside": ([TRAIN, "import math\nprint(f'{math.pi:.4f} {1 / 16:.4f}')"], []),
    "bound again": ([TRAIN, "accuracy = 0.5", "print(f'{accuracy:.2f}')"], []),
    # a helper that formats a value it does not round on purpose
    "a plain helper": (["def base_of(entry):\n    return f\"{entry['theta']:,.0f}\""], []),
    # a band whose margin is pe_lib.digits'
    "a band with the kind's margin": (
        [
            "def band(value):\n"
            "    assert abs(value - 0.5) >= margin_of(value, 'training accuracy')\n"
            "    return f'[{0.5 if value > 0.5 else 0:g}, ...)'"
        ],
        [],
    ),
    "a comprehension's own variable": (
        [
            TRAIN + "\nnames = [f'{n} tokens' for n in (1, 2)]",
            "print([f'{n:.1f}' for n in (1, 2)])",
        ],
        [],
    ),
    "a comprehension over trained values": (
        [TRAIN + "\nruns = [accuracy]", "print(', '.join(f'{a:.2f}' for a in runs))"],
        ["(a)"],
    ),
    "train mode": (["net.train()\nx = net(y).mean()\nprint(f'{x:.2f}')"], []),
    "magics": (["if missing:\n    %pip install pe_lib\nx = 1.0\nprint(f'{x:.1f}')"], []),
}


@pytest.mark.parametrize("case", PLANTED)
def test_the_rule_on_planted_cells(case: str) -> None:
    cells, expected = PLANTED[case]
    found = violations(cells)
    assert len(found) == len(expected), found
    for line, part in zip(found, expected, strict=True):
        assert part in line, (line, part)
