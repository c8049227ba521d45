"""Formulas typeset when the book is built, by KaTeX, through Sphinx's math-renderer registry.

KaTeX's own JavaScript (``book/_ext/katex/katex.min.js``, the pinned release that
``tools/fetch_katex.py`` fetches and digest-checks) runs in Python inside an embedded V8
(``mini-racer``): one context for the whole build, and each distinct formula (its TeX and
whether it is displayed) is rendered once. A page carries each formula as KaTeX's HTML and a
visually hidden MathML copy for screen readers (``htmlAndMathml``), whose TeX annotation is what
copying a formula gives (``_static/pe-math.js``); it loads no math script to draw them.

The renderer is registered with ``app.add_html_math_renderer`` and chosen with
``html_math_renderer = "katex"``, so ``sphinx.ext.mathjax`` adds nothing to the pages. The
markup follows Sphinx's own MathJax visitor: ``span.math`` for inline math, ``div.math`` with
the equation's anchor for display math, and a numbered equation's ``span.eqno`` (with its
permalink) before the formula, so ``math_numfig`` and ``{eq}`` references work unchanged.
A display of several lines gets the alignment Sphinx gives it (``split`` when a part holds
``\\``, one line per blank-line-separated part); amsmath environments (MyST's ``amsmath``) are
rendered in their starred, unnumbered form, since Sphinx numbers the equation.

A formula KaTeX cannot render is a Sphinx warning at the formula's source line (the build runs
with ``-W``: it fails there), and the page shows its TeX in a ``pe-math-error`` box. TeX macros
the book defines go in ``katex_macros`` (a dict, as KaTeX's ``macros`` option).

After the build, ``_static/katex`` receives KaTeX's stylesheet as released and its WOFF2 fonts
(a browser fetches only those a page's formulas draw with), each cut down to the characters the
built pages' formulas hold (``subset_katex_fonts``: fontTools, as ``hangul_font.py`` cuts the
Korean font): a page's KaTeX fonts weigh about half as much. A page with formulas preloads the
fonts its formulas draw with (``FONTS``: KaTeX's main and math italic faces on nearly every page,
the large delimiters' and operators' where there are some), so that they arrive with the
stylesheet rather than after it.
"""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from docutils import nodes
from font_preloads import add_font_preloads, fonts_drawn
from sphinx.locale import _
from sphinx.util import logging
from sphinx.util.math import get_node_equation_number

logger = logging.getLogger(__name__)

KATEX = Path(__file__).resolve().parent / "katex"
FETCH = "python tools/fetch_katex.py"

# Run once in the V8 context: render one formula, returning its HTML or KaTeX's error, and
# report what KaTeX's strict mode finds (a construct LaTeX itself would not accept) as an error.
RENDER = """
function peRender(tex, display, macros) {
  try {
    return {html: katex.renderToString(tex, {
      displayMode: display, output: "htmlAndMathml", throwOnError: true, strict: "error",
      trust: false, macros: Object.assign({}, macros)})};
  } catch (error) {
    const where = error && error.position !== undefined ? ` (at character ${error.position + 1})` : "";
    return {error: String(error && (error.rawMessage || error.message) || error) + where};
  }
}
"""

# amsmath's numbered environments, which KaTeX would number itself.
AMSMATH_NUMBERED = re.compile(r"\\(begin|end)\{(equation|align|alignat|gather|multline|flalign)\}")


class Renderer:
    """One V8 context holding KaTeX, and the formulas rendered so far."""

    def __init__(self, macros: dict[str, str]) -> None:
        source = KATEX / "katex.min.js"
        if not source.is_file():
            raise RuntimeError(f"{source} is missing: run `{FETCH}`")
        from py_mini_racer import MiniRacer

        self.context = MiniRacer()
        self.context.eval(source.read_text(encoding="utf-8"))
        self.context.eval(RENDER)
        self.macros = dict(macros)
        self.cache: dict[tuple[str, bool], tuple[str | None, str | None]] = {}

    def render(self, tex: str, display: bool) -> tuple[str | None, str | None]:
        """``(html, None)``, or ``(None, KaTeX's error message)``."""
        key = (tex, display)
        if key not in self.cache:
            result = json.loads(
                self.context.eval(
                    f"JSON.stringify(peRender({json.dumps(tex)}, {json.dumps(display)}, "
                    f"{json.dumps(self.macros)}))"
                )
            )
            self.cache[key] = (result.get("html"), result.get("error"))
        return self.cache[key]


_renderer: Renderer | None = None


def renderer(config: Any) -> Renderer:
    global _renderer
    if _renderer is None:
        _renderer = Renderer(config.katex_macros or {})
    return _renderer


def _render(translator: Any, node: nodes.Element, tex: str, display: bool) -> str:
    html, error = renderer(translator.builder.config).render(tex, display)
    if html is not None:
        return html
    logger.warning(
        "KaTeX cannot typeset %r: %s", tex, error, location=node, type="katex", subtype="error"
    )
    tag = "div" if display else "span"
    return f'<{tag} class="pe-math-error">{translator.encode(tex)}</{tag}>'


def display_tex(node: nodes.math_block) -> str:
    """The TeX KaTeX renders for a display: Sphinx's wrapping (``split`` around a part with
    several lines, one line per part) or, for an amsmath environment, its starred form."""
    text = node.astext()
    if node.get("nowrap"):
        return AMSMATH_NUMBERED.sub(lambda m: rf"\{m.group(1)}{{{m.group(2)}*}}", text)
    parts = [part for part in text.split("\n\n") if part.strip()]
    lines = [rf"\begin{{split}}{part}\end{{split}}" if r"\\" in part else part for part in parts]
    if len(lines) == 1:
        return lines[0]
    return r"\begin{gathered}" + r"\\".join(lines) + r"\end{gathered}"


def visit_math(self: Any, node: nodes.math) -> None:
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate nohighlight"))
    self.body.append(_render(self, node, node.astext(), display=False))
    self.body.append("</span>")
    raise nodes.SkipNode


def visit_displaymath(self: Any, node: nodes.math_block) -> None:
    self.body.append(self.starttag(node, "div", CLASS="math notranslate nohighlight"))
    if node.get("number"):
        number = get_node_equation_number(self, node)
        self.body.append(f'<span class="eqno">({number})')
        self.add_permalink_ref(node, _("Link to this equation"))
        self.body.append("</span>")
    self.body.append(_render(self, node, display_tex(node), display=True))
    self.body.append("</div>\n")
    raise nodes.SkipNode


def copy_katex(outdir: Path) -> None:
    """KaTeX's stylesheet as released and its WOFF2 fonts into ``_static/katex`` (not the script,
    which only the build runs). A browser fetches a font only when a formula on the page draws
    with it, and of each font's sources the first it reads, WOFF2."""
    target = outdir / "_static" / "katex"
    shutil.rmtree(target, ignore_errors=True)
    missing = [
        name for name in ("katex.min.css", "LICENSE", "fonts") if not (KATEX / name).exists()
    ]
    if missing:
        raise RuntimeError(f"{KATEX} lacks {missing}: run `{FETCH}`")
    shutil.copytree(KATEX, target, ignore=shutil.ignore_patterns("*.js"))


class FormulaText(HTMLParser):
    """The characters of a page's typeset formulas: the text inside KaTeX's ``katex-html`` (what
    its fonts draw; the hidden MathML beside it is read by screen readers, not drawn)."""

    VOID = frozenset({"area", "br", "col", "embed", "hr", "img", "input", "link", "meta", "wbr"})

    def __init__(self) -> None:
        super().__init__()
        self.inside: list[bool] = []  # per open element: whether it is in a formula's HTML
        self.chars: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in self.VOID:
            classes = (dict(attrs).get("class") or "").split()
            self.inside.append(bool(self.inside and self.inside[-1]) or "katex-html" in classes)

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.VOID and self.inside:
            self.inside.pop()

    def handle_data(self, data: str) -> None:
        if self.inside and self.inside[-1]:
            self.chars.update(data)


def formula_chars(outdir: Path) -> set[str]:
    """The characters the formulas of every page built in ``outdir`` hold."""
    chars: set[str] = set()
    for page in sorted(outdir.rglob("*.html")):
        if "_static" in page.relative_to(outdir).parts:
            continue
        html = page.read_text(encoding="utf-8")
        if "katex-html" in html:
            parser = FormulaText()
            parser.feed(html)
            chars |= parser.chars
    return chars


def subset_katex_fonts(outdir: Path) -> None:
    """Each KaTeX font in ``outdir/_static/katex/fonts`` (copied there by this build) cut down
    to the characters the built pages' formulas hold, and the space: a text shaper draws the
    space's glyph, with no width, for the zero-width spaces KaTeX writes between stacked boxes
    (HarfBuzz's rule for invisible characters); the font's other glyphs no page draws."""
    from fontTools import subset

    points = sorted(ord(char) for char in formula_chars(outdir) | {" "})
    for path in sorted((outdir / "_static" / "katex" / "fonts").glob("*.woff2")):
        options = subset.Options()
        options.flavor = "woff2"
        font = subset.load_font(str(path), options)
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=points)
        subsetter.subset(font)
        subset.save_font(font, str(path), options)


# KaTeX's fonts, each with the classes of an element that draws with it (katex.min.css's rules):
# a page with such an element asks for the font at once (a preload), so that it arrives with the
# stylesheet rather than after the page is laid out. A font that arrives later makes the browser
# style and lay out the formulas again (their hidden MathML too), and pe-math.js fit them again.
FONTS: list[tuple[str, str]] = [
    ("katex", "KaTeX_Main-Regular"),
    ("mathnormal", "KaTeX_Math-Italic"),
    ("mathit", "KaTeX_Main-Italic"),
    ("mathbf", "KaTeX_Main-Bold"),
    ("boldsymbol", "KaTeX_Math-BoldItalic"),
    ("amsrm", "KaTeX_AMS-Regular"),
    ("mathbb", "KaTeX_AMS-Regular"),
    ("textbb", "KaTeX_AMS-Regular"),
    ("mathcal", "KaTeX_Caligraphic-Regular"),
    ("texttt", "KaTeX_Typewriter-Regular"),
    ("mathtt", "KaTeX_Typewriter-Regular"),
    ("textsf", "KaTeX_SansSerif-Regular"),
    ("mathsf", "KaTeX_SansSerif-Regular"),
    ("delimsizing size1", "KaTeX_Size1-Regular"),
    ("delim-size1", "KaTeX_Size1-Regular"),
    ("op-symbol small-op", "KaTeX_Size1-Regular"),
    ("delimsizing size2", "KaTeX_Size2-Regular"),
    ("op-symbol large-op", "KaTeX_Size2-Regular"),
    ("delimsizing size3", "KaTeX_Size3-Regular"),
    ("delimsizing size4", "KaTeX_Size4-Regular"),
    ("delim-size4", "KaTeX_Size4-Regular"),
]


def preload_fonts(
    app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    body = context.get("body") or ""
    if "katex" not in body:
        return
    fonts = fonts_drawn(body, FONTS)
    add_font_preloads(context, [f"_static/katex/fonts/{font}.woff2" for font in fonts])


def _finished(app: Any, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        copy_katex(Path(app.outdir))
        subset_katex_fonts(Path(app.outdir))


def setup(app: Any) -> dict[str, Any]:
    app.add_config_value("katex_macros", {}, "html", dict)
    app.add_html_math_renderer("katex", (visit_math, None), (visit_displaymath, None))
    app.connect("html-page-context", preload_fonts)
    app.connect("build-finished", _finished)
    return {"parallel_read_safe": True, "parallel_write_safe": False}
