"""Write the Korean edition's configuration: the book's ``_config.yml`` with the Korean settings.

The Korean edition (``make book-ko``) is the same book, built from the same notebooks with Sphinx's
translation catalogues (``locale/ko/LC_MESSAGES/*.po``), which carry the prose only: code cells and
their outputs are the English book's by construction. This tool writes the one configuration file
that differs, ``_build/ko/_config.yml``, from ``_config.yml`` and the few keys below, so that
every other setting is stated once, in ``_config.yml``. Its launch buttons name the branch
``korean``, where the Korean notebooks (``tools/korean_notebooks.py``) are published.

    python tools/korean_edition.py html      # _build/ko/_config.yml for the Korean HTML
    python tools/korean_edition.py gettext   # _build/ko/_config-gettext.yml: the English book
                                             # read for its messages, without executing it

The catalogues are updated from the extracted messages with ``make catalogues`` (sphinx-intl).
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "_build" / "ko"

# The book's title is its first page's heading: the Korean title is that heading's translation.
TITLE_CATALOGUE = ROOT / "locale" / "ko" / "LC_MESSAGES" / "book" / "intro.po"


def korean_title(title: str) -> str:
    """The translation of ``title`` in the intro's catalogue."""
    from babel.messages.pofile import read_po

    with TITLE_CATALOGUE.open("rb") as f:
        message = read_po(f).get(title)
    if message is None or not message.string:
        raise SystemExit(f"{TITLE_CATALOGUE.relative_to(ROOT)} does not translate {title!r}")
    return str(message.string)


# The repository branch the Korean edition's launch (Binder, Colab) and source buttons name: the
# Pages workflow pushes the Korean notebooks (tools/korean_notebooks.py) there, and `make book-ko`
# puts them behind the download buttons.
KOREAN_BRANCH = "korean"

# The Korean edition's language switch, back to the same page of the English book one folder up
# (the English book's own switch, to ko/, is in _config.yml).
SWITCH_TO_ENGLISH = {
    "href": "../",
    "label": "English",
    "lang": "en",
    "title": "This page in English",
}

# The text of the footer's link to the (English) PDF edition, and its Korean.
PDF_LINK = ("The whole book as one PDF", "책 전체를 PDF 하나로 (영어판)")


def korean(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` (the English book's) with the Korean edition's settings."""
    ko = copy.deepcopy(config)
    ko["title"] = korean_title(config["title"])
    ko["repository"]["branch"] = KOREAN_BRANCH
    sphinx = ko["sphinx"]["config"]
    sphinx["language"] = "ko"
    sphinx["locale_dirs"] = ["locale"]
    # One catalogue per page (locale/ko/LC_MESSAGES/book/02_sinusoidal_formula.po, ...).
    sphinx["gettext_compact"] = False
    # Messages without their line numbers, so that an edit elsewhere on a page leaves them be;
    # figures' alt texts are messages too (never code: literal blocks stay out).
    sphinx["gettext_location"] = False
    sphinx["gettext_additional_targets"] = ["image"]
    # Korean words with their particles, found by their stems (book/_ext/korean_search.py).
    sphinx["html_search_language"] = "ko"
    sphinx.setdefault("html_context", {})["edition_switch"] = SWITCH_TO_ENGLISH
    # The footer's link to the PDF edition, which is the English book.
    english, korean_text = PDF_LINK
    footer = config["html"]["extra_footer"]
    if english not in footer:
        raise SystemExit(
            f"_config.yml's extra_footer no longer reads {english!r}: update {PDF_LINK}"
        )
    ko["html"]["extra_footer"] = footer.replace(english, korean_text)
    # The config file sits in _build/ko: jupyter-book reads local extensions relative to it.
    ko["sphinx"]["local_extensions"] = {
        name: str(Path("..", "..", path)) for name, path in ko["sphinx"]["local_extensions"].items()
    }
    return ko


def gettext(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` for extracting the messages: the English book, its notebooks not executed."""
    out = korean(config)
    out["title"] = config["title"]
    out["sphinx"]["config"].pop("language")
    out["execute"]["execute_notebooks"] = "off"
    # The catalogues' header names the book.
    out["sphinx"]["config"]["project"] = config["title"]
    # myst-nb turns a figure's output into an image only for builders it knows a MIME order for;
    # given one for gettext, the figures' alt texts (cell metadata) become messages too.
    out["sphinx"]["config"]["nb_mime_priority_overrides"] = [
        ["gettext", "image/svg+xml", 10],
        ["gettext", "image/png", 20],
    ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", choices=["html", "gettext"])
    args = parser.parse_args()
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    if args.which == "html":
        text, name = korean(config), "_config.yml"
    else:
        text, name = gettext(config), "_config-gettext.yml"
    OUT.mkdir(parents=True, exist_ok=True)
    header = "# Generated by tools/korean_edition.py from _config.yml: edit that file instead.\n"
    target = OUT / name
    target.write_text(header + yaml.safe_dump(text, allow_unicode=True, sort_keys=False), "utf-8")
    print(target.relative_to(ROOT))


if __name__ == "__main__":
    main()
