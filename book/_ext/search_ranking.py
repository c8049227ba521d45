"""The search page ranks the chapter about a word above the API entries whose names hold it.

Sphinx scores a page that has the searched word in its text at 5, whatever it says about it, and
an API object whose name holds the word at 11 or more: a search for "rotary" listed four API
entries before the chapter on RoPE, which writes "rotary" twice and "RoPE" throughout. This
extension gives the search page what it needs to tell which page is about a word:

- while each document is read (``doctree-read``), how often each word (stemmed as the search
  index stems it, by the edition's search language) occurs in its prose, code and outputs left
  out, and the abbreviations its prose defines, "RoPE (rotary position embedding)" or "rotary
  position embedding (RoPE)"; both kept in the environment, so that an incremental build keeps
  the pages it does not read again;
- when the HTML build ends, ``_static/pe-search-weights.js``: for each word, the pages whose prose
  uses it at least ``MIN_COUNT`` times and how densely (uses per thousand words), where each use
  of an abbreviation counts for the words it stands for;
- in the Korean edition, the glossary's terms (``locale/ko/glossary.tsv``): each use of a
  one-word Korean term (파장) counts for the English word it translates (wavelength), which the
  API reference, in English in both editions, names; the same file gives the search page's
  snippets those terms (``window.peSearchTranslations``), so that a Korean page found by an
  English word is quoted where its prose says it in Korean;
- Sphinx's documented hook for ranking, ``html_search_scorer``: ``search_scorer.js`` (next to
  this file) keeps Sphinx's scores and adds to a page's score up to ``Scorer.pageBoost``, in
  proportion to its density against the densest page for the searched words.

``book/_ext/page_assets.py`` adds the weights to the search page alone.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.search import SearchLanguage, languages

WEIGHTS_FILE = "pe-search-weights.js"
GLOSSARY = Path(__file__).resolve().parents[2] / "locale" / "ko" / "glossary.tsv"
GLOSSARY_ENTRY = "(glossary)"
SCORER = Path(__file__).with_name("search_scorer.js")
# A page counts as using a word from this many uses on.
MIN_COUNT = 3
# An abbreviation: at least two capitals (RoPE, ALiBi, NTK, YaRN).
ABBREVIATION = r"[A-Z][A-Za-z]*[A-Z][A-Za-z]*"
# "ABBR (what it stands for)" and "what it stands for (ABBR)".
ABBREVIATION_FIRST = re.compile(rf"\b({ABBREVIATION})\s*\(([^()\d]{{3,60}})\)")
ABBREVIATION_LAST = re.compile(
    rf"((?:[^\W\d_][\w-]*\s+){{0,5}}[^\W\d_][\w-]*)\s*\(({ABBREVIATION})\)"
)
LATIN = re.compile(r"[A-Za-z]")
# Prose only: what the reader reads as text, not code, outputs or formulas.
NOT_PROSE = (
    nodes.literal_block,
    nodes.literal,
    nodes.raw,
    nodes.comment,
    nodes.math,
    nodes.math_block,
    nodes.FixedTextElement,
)


def _language(app: Sphinx) -> SearchLanguage:
    name = app.config.html_search_language or app.config.language or "en"
    found = languages.get(name) or languages["en"]
    if isinstance(found, str):
        from sphinx.util import import_object

        found = import_object(found, "search language")
    return found(app.config.html_search_options)


def _words(language: SearchLanguage, text: str) -> list[str]:
    return [
        stem
        for word in language.split(text)
        if (stem := language.stem(word))
        and language.word_filter(stem)
        and stem not in language.stopwords
    ]


def _stands_for(abbreviation: str, words: list[str]) -> list[str]:
    """The words before "(ABBR)" that it stands for: from the last word that starts with its
    first letter (Latin), else as many words as it has capitals."""
    capitals = sum(1 for letter in abbreviation if letter.isupper())
    if all(LATIN.match(word) for word in words):
        for start in range(len(words) - 1, -1, -1):
            if words[start][0].lower() == abbreviation[0].lower():
                return words[start:]
        return []
    return words[-capitals:]


def abbreviations(text: str) -> dict[str, list[str]]:
    """The abbreviations ``text`` defines, each with the words it stands for."""
    found: dict[str, list[str]] = {}
    for match in ABBREVIATION_FIRST.finditer(text):
        abbreviation, words = match.group(1), match.group(2).split()
        latin = all(LATIN.match(word) for word in words)
        if 1 <= len(words) <= 6 and (not latin or words[0][0].lower() == abbreviation[0].lower()):
            found[abbreviation] = words
    for match in ABBREVIATION_LAST.finditer(text):
        words = _stands_for(match.group(2), match.group(1).split())
        if words:
            found[match.group(2)] = words
    return found


def _literal(pattern: str) -> str | None:
    """The first English form a glossary pattern matches ("wavelengths?" -> "wavelength",
    "frequenc(?:y|ies)" -> "frequency"), or None where the pattern is more than that."""
    depth, end = 0, len(pattern)
    for at, char in enumerate(pattern):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "|" and depth == 0:
            end = at
            break
    first = pattern[:end]
    first = re.sub(r"\(\?<?[!=][^)]*\)", "", first)  # lookarounds
    first = re.sub(r"\(\?:[^)]*\)\?", "", first)  # an optional group
    first = re.sub(r"\(\?:([^|)]*)(?:\|[^)]*)?\)", r"\1", first)  # a group: its first choice
    first = re.sub(r"\[(.)[^\]]*\]", r"\1", first)  # a class: its first letter
    first = re.sub(r".\?", "", first)  # an optional letter
    return None if re.search(r"[\\()\[\]?*+|{}]", first) else first


def glossary(path: Path = GLOSSARY) -> dict[str, str]:
    """The glossary's one-word Korean terms, each with the English words it translates."""
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or "\t" not in line:
            continue
        english, korean = line.split("\t")[:2]
        literal = _literal(english)
        if literal and english != "english" and len(korean.split()) == 1:
            found.setdefault(korean, literal)
    return found


def _prose(doctree: nodes.Node) -> list[str]:
    texts = []
    for node in doctree.findall(nodes.Text):
        parent = node.parent
        outside = True
        while parent is not None:
            classes = parent.get("classes", []) if isinstance(parent, nodes.Element) else []
            if isinstance(parent, NOT_PROSE) or "cell_output" in classes or "cell_input" in classes:
                outside = False
                break
            parent = parent.parent
        if outside:
            texts.append(node.astext())
    return texts


def _read(app: Sphinx, doctree: nodes.document) -> None:
    env = app.env
    language = _language(app)
    prose = _prose(doctree)
    words: list[str] = []
    for text in prose:
        words.extend(_words(language, text))
    found: dict[str, list[str]] = {}
    for paragraph in doctree.findall(nodes.paragraph):
        found.update(abbreviations(paragraph.astext()))
    stems = {
        language.stem(abbreviation): _words(language, " ".join(stands_for))
        for abbreviation, stands_for in found.items()
    }
    if not hasattr(env, "pe_search_words"):
        env.pe_search_words = {}
        env.pe_search_abbreviations = {}
    env.pe_search_words[env.docname] = (len(words), dict(Counter(words)))
    env.pe_search_abbreviations[env.docname] = stems


def _purge(app: Sphinx, env: Any, docname: str) -> None:
    for name in ("pe_search_words", "pe_search_abbreviations"):
        getattr(env, name, {}).pop(docname, None)


def _merge(app: Sphinx, env: Any, docnames: set[str], other: Any) -> None:
    for name in ("pe_search_words", "pe_search_abbreviations"):
        if not hasattr(env, name):
            setattr(env, name, {})
        for docname in docnames:
            if docname in getattr(other, name, {}):
                getattr(env, name)[docname] = getattr(other, name)[docname]


def weights(
    words: dict[str, tuple[int, dict[str, int]]], defined: dict[str, dict[str, list[str]]]
) -> dict[str, dict[str, float]]:
    """For each stemmed word, the pages whose prose uses it at least MIN_COUNT times, with how
    densely (per thousand words); an abbreviation's uses count for each word it stands for, once
    per word, wherever in the book it is defined."""
    stands_for: dict[str, set[str]] = {}
    for found in defined.values():
        for abbreviation, stems in found.items():
            stands_for.setdefault(abbreviation, set()).update(
                stem for stem in stems if stem != abbreviation
            )
    table: dict[str, dict[str, float]] = {}
    for docname, (total, counts) in sorted(words.items()):
        counted = Counter(counts)
        for abbreviation, stems in stands_for.items():
            for stem in stems:
                counted[stem] += counts.get(abbreviation, 0)
        for stem, count in counted.items():
            if count >= MIN_COUNT and total:
                table.setdefault(stem, {})[docname] = round(1000 * count / total, 1)
    return table


def _write(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    defined = dict(getattr(app.env, "pe_search_abbreviations", {}))
    language = _language(app)
    if language.lang == "ko" and GLOSSARY.is_file():
        defined[GLOSSARY_ENTRY] = {
            language.stem(korean): _words(language, english)
            for korean, english in glossary().items()
        }
    table = weights(getattr(app.env, "pe_search_words", {}), defined)
    static = Path(app.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    # The glossary's Korean terms for each English word, for the snippets (pe-search.js).
    translations: dict[str, list[str]] = {}
    for korean, stems in defined.get(GLOSSARY_ENTRY, {}).items():
        for stem in stems:
            translations.setdefault(stem, []).append(korean)
    text = json.dumps(table, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    translated = json.dumps(translations, ensure_ascii=False, sort_keys=True)
    (static / WEIGHTS_FILE).write_text(
        f"window.peSearchWeights = {text};\nwindow.peSearchTranslations = {translated};\n",
        encoding="utf-8",
    )


def _scorer(app: Sphinx, config: Any) -> None:
    config.html_search_scorer = str(SCORER)


def setup(app: Sphinx) -> dict[str, Any]:
    # The search page's other half: the text its snippets quote, a small file per page.
    app.setup_extension("search_text")
    app.connect("config-inited", _scorer)
    app.connect("doctree-read", _read)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("build-finished", _write)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
