"""book/references.bib: every entry cited by a page, each with the fields its type needs.

The bibliography page lists the whole file (``:all:``) and says that it holds what the chapters
rely on; that is true only while no entry sits there uncited. The strict build already fails on
a citation whose key is missing.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIB = ROOT / "book" / "references.bib"
ENTRY = re.compile(r"@(?P<type>\w+)\{(?P<key>[^,\s]+),(?P<body>.*?)\n\}", re.S)
CITATION = re.compile(r"\{(?:cite|footcite)(?::[a-z]+)?\}`(?P<keys>[^`]+)`")
# The fields without which an entry of each type cannot be found again.
REQUIRED = {
    "article": {"title", "author", "journal", "year"},
    "inproceedings": {"title", "author", "booktitle", "year"},
    "techreport": {"title", "author", "institution", "year"},
    "misc": {"title", "author", "year"},
}
# ... and, for a @misc (code, preprints), where to find it: at least one of these.
WHERE = {"misc": {"howpublished", "url", "eprint"}}


def entries() -> list[tuple[str, str, set[str]]]:
    found = []
    for match in ENTRY.finditer(BIB.read_text(encoding="utf-8")):
        fields = set(re.findall(r"^\s*(\w+)\s*=", match.group("body"), re.M))
        found.append((match.group("type").lower(), match.group("key"), fields))
    return found


def cited_keys() -> set[str]:
    keys: set[str] = set()
    for page in sorted((ROOT / "book").glob("*.ipynb")) + sorted((ROOT / "book").glob("*.md")):
        for match in CITATION.finditer(page.read_text(encoding="utf-8")):
            keys.update(key.strip() for key in match.group("keys").split(","))
    return keys


def test_every_entry_is_cited() -> None:
    uncited = sorted({key for _, key, _ in entries()} - cited_keys())
    assert not uncited, f"entries in references.bib that no page cites: {uncited}"


def test_keys_are_unique() -> None:
    keys = [key for _, key, _ in entries()]
    assert len(keys) == len(set(keys)), sorted(k for k in keys if keys.count(k) > 1)


@pytest.mark.parametrize(("kind", "key", "fields"), entries(), ids=lambda v: str(v)[:40])
def test_entry_has_the_fields_of_its_type(kind: str, key: str, fields: set[str]) -> None:
    assert kind in REQUIRED, f"{key}: entry type @{kind} is not one the book uses"
    missing = REQUIRED[kind] - fields
    assert not missing, f"{key} (@{kind}) lacks {sorted(missing)}"
    if kind in WHERE:
        assert fields & WHERE[kind], f"{key} (@{kind}) says nowhere where to find it"
