"""The Korean notebooks (``tools/korean_notebooks.py``): the chapters with the catalogues' prose.

Their code cells and outputs are the English chapters', byte for byte; their prose is Korean;
every catalogue message is used; the cell after the hidden first one makes the checkers speak
Korean, so a wrong answer gets Korean feedback; the Korean pages' download buttons serve them and
their launch buttons name the branch ``korean`` that the Pages workflow fills with them. The
tests marked ``korean`` read the built Korean edition (``make korean-test``); the others only
the chapters and the catalogues.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import nbformat
import pytest
import yaml
from nbclient import NotebookClient

from tests.book_sources import ROOT

TOOLS = ROOT / "tools"
KOREAN_HTML = ROOT / "_build" / "html-ko"
KOREAN_NOTEBOOKS = ROOT / "_build" / "ko" / "notebooks"
HANGUL = re.compile(r"[\uac00-\ud7a3]")
LATIN = re.compile(r"[A-Za-z]")
# As for the Korean pages (tests/book/test_korean.py): the least share of Hangul among the
# letters of the prose, code, math, roles and labels aside.
MIN_HANGUL_SHARE = 0.6


def _tool(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # (dataclasses look their module up there)
    spec.loader.exec_module(module)
    return module


korean_notebooks = _tool("korean_notebooks")
korean_edition = _tool("korean_edition")
CHAPTERS = korean_notebooks.chapters()


def _korean(chapter: Path) -> tuple[nbformat.NotebookNode, object]:
    catalogue = korean_notebooks.Catalogue.read(korean_notebooks.LOCALE / f"{chapter.stem}.po")
    return korean_notebooks.korean_notebook(chapter, catalogue), catalogue


@pytest.fixture(scope="module")
def pairs() -> dict[str, tuple[nbformat.NotebookNode, nbformat.NotebookNode]]:
    """Each chapter's (English, Korean) notebooks."""
    return {
        chapter.name: (nbformat.read(chapter, as_version=4), _korean(chapter)[0])
        for chapter in CHAPTERS
    }


def _cell_json(cell: nbformat.NotebookNode) -> str:
    """The cell as JSON, but a figure's caption and alt text (prose, translated)."""
    cell = copy.deepcopy(cell)
    mystnb = cell.get("metadata", {}).get("mystnb", {})
    mystnb.get("figure", {}).pop("caption", None)
    mystnb.get("image", {}).pop("alt", None)
    return json.dumps(cell, sort_keys=True, ensure_ascii=False)


def _is_language_cell(cell: nbformat.NotebookNode) -> bool:
    return cell.get("id") == korean_notebooks.LANGUAGE_CELL_ID


def _without_language_cell(notebook: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [cell for cell in notebook.cells if not _is_language_cell(cell)]


def test_every_chapter_has_a_korean_notebook() -> None:
    assert [c.name for c in CHAPTERS] == sorted(
        p.name for p in (ROOT / "book").glob("[0-9]*.ipynb")
    )
    assert "10_inside_trained_models.ipynb" in {c.name for c in CHAPTERS}


@pytest.mark.parametrize("name", [c.name for c in CHAPTERS])
def test_code_cells_and_outputs_are_the_english_ones(name: str, pairs) -> None:
    english, korean = pairs[name]
    code = [c for c in english.cells if c.cell_type == "code"]
    kept = [c for c in korean.cells if c.cell_type == "code" and not _is_language_cell(c)]
    assert len(kept) == len(code) and any(c.get("outputs") for c in code)
    for ours, theirs in zip(kept, code, strict=True):
        assert ours.source == theirs.source, f"{name}: a code cell's source differs"
        assert ours.get("outputs") == theirs.get("outputs"), f"{name}: outputs differ"
        assert _cell_json(ours) == _cell_json(theirs), f"{name}: a code cell differs"
    # the same cells in the same order: markdown where the chapter has markdown
    kinds = [c.cell_type for c in korean.cells if not _is_language_cell(c)]
    assert kinds == [c.cell_type for c in english.cells]
    assert korean.metadata == english.metadata


def _prose(markdown: str) -> str:
    """The prose of a markdown cell: the article's quoted words kept, code, math, roles,
    labels and directive fences left out."""
    text = re.sub(r"\{article\}`([^`]*)`", r"\1", markdown)
    text = re.sub(r"^(```|:::|\(|:[a-z-]+:).*$", "", text, flags=re.M)
    text = re.sub(r"\$\$.*?\$\$", "", text, flags=re.S)
    text = re.sub(r"\$[^$]+\$", "", text)
    text = re.sub(r"\{[a-z:-]+\}`[^`]*`", "", text)
    text = re.sub(r"`[^`]*`", "", text)
    return re.sub(r"\]\([^)]*\)", "]", text)


def _share(notebook: nbformat.NotebookNode) -> float:
    prose = " ".join(_prose(c.source) for c in notebook.cells if c.cell_type == "markdown")
    hangul, latin = len(HANGUL.findall(prose)), len(LATIN.findall(prose))
    return hangul / max(hangul + latin, 1)


@pytest.mark.parametrize("name", [c.name for c in CHAPTERS])
def test_the_prose_is_korean(name: str, pairs) -> None:
    english, korean = pairs[name]
    share = _share(korean)
    print(f"\n{name}: Hangul {share:.0%} of the prose's letters")
    assert share >= MIN_HANGUL_SHARE, f"{name}: only {share:.0%} of the prose is Hangul"
    assert _share(english) < 0.05, "the measure tells the English prose apart"
    for en, ko in zip(english.cells, _without_language_cell(korean), strict=True):
        if en.cell_type == "markdown":
            if LATIN.search(_prose(en.source)):  # (a solution's gates alone have no prose)
                assert HANGUL.search(ko.source), f"{name}: a markdown cell with no Korean"


@pytest.mark.parametrize("name", [c.name for c in CHAPTERS])
def test_figures_captions_and_alt_texts_are_korean(name: str, pairs) -> None:
    english, korean = pairs[name]
    found = 0
    for en, ko in zip(english.cells, _without_language_cell(korean), strict=True):
        for key, part in (("figure", "caption"), ("image", "alt")):
            text = en.get("metadata", {}).get("mystnb", {}).get(key, {}).get(part)
            if text is not None:
                found += 1
                korean_text = ko.metadata["mystnb"][key][part]
                assert korean_text != text and HANGUL.search(korean_text), (name, text)
    if name.startswith(("02", "03")):
        assert found, f"{name} has figures with captions"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.name)
def test_every_catalogue_message_is_used(chapter: Path) -> None:
    _, catalogue = _korean(chapter)
    assert catalogue.used, f"{chapter.name}: no message used"
    assert catalogue.unused() == [], f"{chapter.name}: messages no block has"


def test_a_block_without_translation_stops_the_tool() -> None:
    chapter = CHAPTERS[0]
    catalogue = korean_notebooks.Catalogue.read(korean_notebooks.LOCALE / f"{chapter.stem}.po")
    title = nbformat.read(chapter, as_version=4).cells[0].source
    heading = re.search(r"^# (.+)$", title, re.M)
    assert heading and heading[1] in catalogue.messages
    del catalogue.messages[heading[1]]
    with pytest.raises(korean_notebooks.Untranslated, match=re.escape(repr(heading[1]))):
        korean_notebooks.korean_notebook(chapter, catalogue)
    stale = korean_notebooks.Catalogue(Path("x.po"), {"A sentence no chapter has.": "없다."})
    assert stale.unused() == ["A sentence no chapter has."]


def test_markdown_blocks_are_translated_in_place() -> None:
    catalogue = korean_notebooks.Catalogue(
        Path("x.po"),
        {
            "A title": "제목",
            "First line, second line.": "첫 줄, 둘째 줄.",
            "an item": "항목",
            "quoted": "인용",
            "cell": "칸",
            "head": "머리",
            "An exercise": "연습 문제",
            "Body.": "본문.",
        },
    )
    text = (
        "(label)=\n# A title\n\nFirst line,\nsecond line.\n\n* an item\n\n> quoted\n\n"
        "| head |\n| --- |\n| cell |\n\n```{exercise} An exercise\n:label: ex-a\n\nBody.\n```\n\n"
        "```python\nprint('code')\n```"
    )
    assert korean_notebooks.translate_markdown(text, catalogue, "test") == (
        "(label)=\n# 제목\n\n첫 줄, 둘째 줄.\n\n* 항목\n\n> 인용\n\n"
        "| 머리 |\n| --- |\n| 칸 |\n\n```{exercise} 연습 문제\n:label: ex-a\n\n본문.\n```\n\n"
        "```python\nprint('code')\n```"
    )
    assert catalogue.unused() == []
    with pytest.raises(korean_notebooks.Untranslated, match="does not know"):
        korean_notebooks.translate_markdown(
            "A term\n: a definition",
            korean_notebooks.Catalogue(Path("x.po"), {"A term": "용어", "a definition": "정의"}),
            "test",
        )


@pytest.mark.parametrize("name", [c.name for c in CHAPTERS])
def test_the_cell_after_the_hidden_first_one_sets_the_language(name: str, pairs) -> None:
    english, korean = pairs[name]
    added = [i for i, c in enumerate(korean.cells) if _is_language_cell(c)]
    first = next(i for i, c in enumerate(english.cells) if c.cell_type == "code")
    assert added == [first + 1], f"{name}: the language cell is not right after the first"
    cell = korean.cells[first + 1]
    assert 'pe_lib.checks.set_language("ko")' in cell.source
    assert cell.metadata["tags"] == ["remove-cell"] and not cell.get("outputs")
    assert "remove-cell" in english.cells[first].metadata.get("tags", [])
    nbformat.validate(korean)


def _run(cells: list[str], tmp_path: Path) -> str:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    return "".join(
        output.get("text", "") for cell in notebook.cells for output in cell.get("outputs", [])
    )


PLANTED = """
import numpy as np
from pe_lib.checks import CheckFailed, check_sinusoidal_table

pos, i = np.arange(50)[:, None], np.arange(0, 16, 2)[None, :]
mine = np.zeros((50, 16))
mine[:, 0::2] = np.cos(pos / 10000 ** (i / 16))  # the planted mistake: sin and cos swapped
mine[:, 1::2] = np.sin(pos / 10000 ** (i / 16))
try:
    check_sinusoidal_table(mine)
except CheckFailed as failure:
    print(failure.mistake, "|", failure)
"""


@pytest.mark.integration
def test_a_wrong_answer_in_a_korean_notebook_gets_korean_feedback(tmp_path: Path) -> None:
    """The Korean notebook's first cells, then a wrong table: the checker answers in Korean;
    after the English notebook's first cell, in English."""
    chapter = ROOT / "book" / "02_sinusoidal_formula.ipynb"
    korean, _ = _korean(chapter)
    english = nbformat.read(chapter, as_version=4)
    upto = [i for i, c in enumerate(korean.cells) if _is_language_cell(c)][0]
    first = [c.source for c in korean.cells[: upto + 1] if c.cell_type == "code"]
    printed = _run([*first, PLANTED], tmp_path)
    assert printed.startswith("swapped_sin_cos | "), printed
    assert "고치는 법:" in printed and "짝수 열에 코사인" in printed and "Fix:" not in printed
    english_first = next(c.source for c in english.cells if c.cell_type == "code")
    printed = _run([english_first, PLANTED], tmp_path)
    assert printed.startswith("swapped_sin_cos | ") and "Fix:" in printed
    assert not HANGUL.search(printed)


def test_the_korean_edition_names_the_korean_branch_and_the_workflow_fills_it() -> None:
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert korean_edition.korean(config)["repository"]["branch"] == "korean"
    assert config["repository"]["branch"] == "main", "the English book keeps its branch"
    workflow = (ROOT / ".github" / "workflows" / "book.yml").read_text(encoding="utf-8")
    assert "cp _build/ko/notebooks/*.ipynb book/" in workflow
    assert "HEAD:refs/heads/korean" in workflow


@pytest.mark.korean
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.name)
def test_korean_pages_download_and_launch_korean_notebooks(chapter: Path) -> None:
    page_path = KOREAN_HTML / "book" / f"{chapter.stem}.html"
    if not page_path.is_file():
        pytest.fail(f"{page_path.relative_to(ROOT)} is missing: run `make book-ko`")
    page = page_path.read_text(encoding="utf-8")
    launches = re.findall(r'href="(https://(?:colab|mybinder)[^"]+)"', page)
    assert launches, f"{chapter.name}: no launch links"
    for url in launches:
        assert "/korean" in url and "/main" not in url, url
        assert chapter.name in url, url
    download = re.search(r'href="([^"]*_sources/[^"]+\.ipynb)"', page)
    assert download, f"{chapter.name}: no notebook download"
    served = (page_path.parent / download[1]).resolve()
    made = KOREAN_NOTEBOOKS / chapter.name
    assert served.read_bytes() == made.read_bytes(), f"{download[1]} is not the Korean notebook"
    notebook = nbformat.reads(made.read_text(encoding="utf-8"), as_version=4)
    assert _share(notebook) >= MIN_HANGUL_SHARE
    assert any(_is_language_cell(c) for c in notebook.cells)


def test_the_article_s_words_become_quotation_marks() -> None:
    quoted = korean_notebooks.quoted
    assert (
        quoted("글은 “{article}`최대 길이 제한`”으로 적는다.")
        == "글은 “최대 길이 제한”으로 적는다."
    )
    assert quoted("{article}`학습 파라미터 없음`") == "“학습 파라미터 없음”"  # a table cell
    assert quoted("“$x${article}`는` $y${article}`의 변환.`”") == "“$x$는 $y$의 변환.”"
    assert (
        quoted("토큰 {article}`임베딩에 더하는 방법`", heading=True) == "토큰 임베딩에 더하는 방법"
    )
    catalogue = korean_notebooks.Catalogue(
        Path("x.po"),
        {"Title": "토큰 {article}`더하는 방법`", "It says so.": "글은 “{article}`가능`”이라 한다."},
    )
    assert korean_notebooks.translate_markdown("# Title\n\nIt says so.", catalogue, "test") == (
        "# 토큰 더하는 방법\n\n글은 “가능”이라 한다."
    )


@pytest.mark.parametrize("name", [c.name for c in CHAPTERS])
def test_no_role_shows_raw_and_every_quote_is_marked(name: str, pairs) -> None:
    """In a notebook the role would show as code: none is left, and each of the article's
    passages the chapter's catalogue quotes is in the notebook as plain words between quotation
    marks (or in a heading or a blockquote line, which mark it themselves)."""
    _, korean = pairs[name]
    catalogue = korean_notebooks.Catalogue.read(korean_notebooks.LOCALE / f"{Path(name).stem}.po")
    sources = "\n".join(c.source for c in korean.cells if c.cell_type == "markdown")
    assert "{article}" not in sources, name
    lines = sources.split("\n")
    for msgstr in catalogue.messages.values():
        for words in korean_notebooks.ARTICLE_ROLE.findall(msgstr):
            marked = [
                line
                for line in lines
                if words in line
                and (
                    line.lstrip().startswith(("#", ">"))
                    or any(words in q for q in korean_notebooks.KOREAN_QUOTE.findall(line))
                )
            ]
            assert marked, f"{name}: {words!r} is not in the notebook between quotation marks"
