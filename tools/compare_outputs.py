"""The chapters' outputs as a run executed them, compared with the outputs stored in the chapters.

``make test`` builds the book, whose execution (jupyter-cache, in the notebooks' folder, with this
checkout's kernel) writes each executed chapter to ``_build/jupyter_execute/book``; this compares
those notebooks with the stored ones cell by cell, as ``make nbval`` compares its own run, so that
the test executes the chapters natively once, for the build, not again for nbval. The comparison is
nbval's (0.11): per code cell, the streams of one name joined, then every output field and
every MIME type of its data but the images, widget views, metadata and counts, each value through
the sanitizers of ``book/sanitize.cfg`` (nbval's ``--nbval-sanitize-with`` file), the values of
one field in their order. A cell tagged ``nbval-ignore-output`` is not compared, one tagged
``nbval-skip`` neither; any other nbval marker is refused, so that a chapter cannot ask for a
comparison this does not make.

Usage: ``python tools/compare_outputs.py SANITIZE_CFG EXECUTED_DIR NOTEBOOK...``; prints each
difference and exits 1 when there is any.
"""

from __future__ import annotations

import configparser
import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

# What nbval leaves out of the comparison (without --nbdime): the images too.
SKIPPED = {
    "metadata",
    "traceback",
    "prompt_number",
    "output_type",
    "name",
    "execution_count",
    "application/vnd.jupyter.widget-view+json",
    "image/png",
    "image/jpeg",
}
NOT_COMPARED = {"nbval-ignore-output", "nbval-skip"}
MARKER = re.compile(r"^\s*#\s*NBVAL_\w+", re.M)

Sanitizers = list[tuple[re.Pattern[str], str]]


def sanitizers(path: Path) -> Sanitizers:
    """The regex and replacement of each section of an nbval sanitize file, in order."""
    parser = configparser.ConfigParser()
    parser.read(path, encoding="utf-8")
    return [(re.compile(parser[s]["regex"]), parser[s]["replace"]) for s in parser.sections()]


def _text(value: Any) -> Any:
    return "".join(value) if isinstance(value, list) else value


def _sanitized(value: Any, rules: Sanitizers) -> Any:
    value = _text(value)
    if isinstance(value, str):
        for pattern, replacement in rules:
            value = pattern.sub(replacement, value)
    return value


def compared(outputs: list[dict[str, Any]], rules: Sanitizers) -> dict[str, list[Any]]:
    """A cell's outputs as nbval compares them: each field or MIME type, its values in order."""
    fields: dict[str, list[Any]] = defaultdict(list)
    streams: dict[str, str] = {}
    for output in outputs:
        if output.get("output_type") == "stream":
            streams[output["name"]] = streams.get(output["name"], "") + _text(output["text"])
            continue
        for key, value in output.items():
            if key == "data":
                for mime, content in value.items():
                    if mime not in SKIPPED:
                        fields[mime].append(_sanitized(content, rules))
            elif key not in SKIPPED:
                fields[key].append(_sanitized(value, rules))
    for name, text in streams.items():
        fields[name] = [_sanitized(_printed(text), rules)]
    return dict(fields)


def _printed(text: str) -> str:
    """A stream as nbval reads it: a line that a carriage return starts again, erased up to it."""
    return re.sub(r"^.*\r(?=[^\n])", "", text, flags=re.M)


def _code_cells(notebook: dict[str, Any]) -> list[dict[str, Any]]:
    return [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]


def differences(
    stored: dict[str, Any], executed: dict[str, Any], rules: Sanitizers, name: str = "notebook"
) -> list[str]:
    """Each code cell whose executed outputs differ from the stored ones, as nbval compares."""
    stored_cells, executed_cells = _code_cells(stored), _code_cells(executed)
    if [_text(c["source"]) for c in stored_cells] != [_text(c["source"]) for c in executed_cells]:
        return [f"{name}: the executed notebook's code is not the stored notebook's"]
    found = []
    for number, (cell, run) in enumerate(zip(stored_cells, executed_cells, strict=True)):
        tags = set(cell.get("metadata", {}).get("tags", []))
        unknown = {tag for tag in tags if tag.startswith("nbval-")} - NOT_COMPARED
        if unknown or MARKER.search(_text(cell["source"])):
            found.append(f"{name}, code cell {number}: nbval markers not compared here: {unknown}")
        if tags & NOT_COMPARED:
            continue
        want, got = compared(cell["outputs"], rules), compared(run["outputs"], rules)
        if want != got:
            fields = sorted(
                key for key in want.keys() | got.keys() if want.get(key) != got.get(key)
            )
            detail = "; ".join(
                f"{key}: stored {want.get(key)!r}, executed {got.get(key)!r}" for key in fields
            )
            found.append(f"{name}, code cell {number}: {detail[:2000]}")
    return found


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__.split("Usage: ")[1].split("\n\n")[0], file=sys.stderr)
        return 2
    rules = sanitizers(Path(argv[0]))
    executed_dir = Path(argv[1])
    found = []
    for path in map(Path, argv[2:]):
        executed = executed_dir / path.name
        if not executed.is_file():
            found.append(f"{path}: no executed notebook at {executed}")
            continue
        stored = json.loads(path.read_text(encoding="utf-8"))
        run = json.loads(executed.read_text(encoding="utf-8"))
        found += differences(stored, run, rules, str(path))
    for line in found:
        print(line)
    print(f"{len(argv) - 2} notebooks compared, {len(found)} differences")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
