"""The theme's stylesheet without Font Awesome's icon rules, which no page uses (86 KB of 397 KB).

pydata-sphinx-theme links one minified stylesheet, ``styles/pydata-sphinx-theme.css``, that
bundles Font Awesome's: a rule per icon, ``.fa-bars:before{content:"\\f0c9"}``, about 2,000 of
them. They give a glyph to an element of class ``fa-*``; on the book's pages every such element
is drawn as inline SVG by the icon script (``site_assets.py``), and ``_static/icon-font.css``
gives those elements no glyph. The theme has no option to leave Font Awesome's CSS out, and
Sphinx no interface to change a theme's file, so after the build this drops those rules (a rule
whose selectors are all ``.fa-<name>:before`` or ``:after``) from the copied stylesheet, with the
source map that no longer matches it. It is the one place the build reads a dependency's
minified code; ``tests/tools/test_theme_icon_rules.py`` builds a page with the theme and fails,
naming the theme, when the stylesheet no longer has those rules or moved.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

STYLESHEET = Path("_static") / "styles" / "pydata-sphinx-theme.css"
# A rule without nested blocks: its selectors and its declarations (the stylesheet is minified).
RULE = re.compile(r"([^{}]*)\{([^{}]*)\}")
# The selectors of one of Font Awesome's icon rules.
ICON_SELECTORS = re.compile(r"\s*(\.fa-[a-z0-9-]+:(before|after)\s*,?\s*)+")
SOURCE_MAP = re.compile(r"/\*# sourceMappingURL=[^*]*\*/")


def without_icon_rules(css: str) -> tuple[str, int]:
    """``css`` less Font Awesome's icon rules, and how many it dropped."""
    dropped = 0

    def keep(rule: re.Match[str]) -> str:
        nonlocal dropped
        if ICON_SELECTORS.fullmatch(rule.group(1)):
            dropped += 1
            return ""
        return rule.group(0)

    return SOURCE_MAP.sub("", RULE.sub(keep, css)), dropped


#: Ends the stylesheet once its rules are dropped: a later build into the same folder may keep the
#: copy it finds there (Sphinx does not overwrite a static file it copied before).
DONE = "\n/* Font Awesome's icon rules dropped by the book's theme_icon_rules. */\n"


def drop_icon_rules(outdir: Path) -> None:
    path = outdir / STYLESHEET
    if not path.is_file():
        raise RuntimeError(
            f"{STYLESHEET} is not in the build: the theme renamed its stylesheet; update or "
            "drop book/_ext/theme_icon_rules.py"
        )
    text = path.read_text(encoding="utf-8")
    if text.endswith(DONE):
        return
    css, dropped = without_icon_rules(text)
    if dropped == 0:
        raise RuntimeError(
            f"{STYLESHEET} has no Font Awesome icon rules any more: drop "
            "book/_ext/theme_icon_rules.py"
        )
    path.write_text(css.rstrip("\n") + DONE, encoding="utf-8")
    path.with_name(path.name + ".map").unlink(missing_ok=True)


def _finished(app: Any, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        drop_icon_rules(Path(app.outdir))


def setup(app: Any) -> dict[str, Any]:
    app.connect("build-finished", _finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
