"""book/_ext/katex_math.py in small Sphinx builds: formulas typeset at build time by KaTeX, with
the markup Sphinx's own math renderer writes (numbers, anchors, references), no math script, and
a formula KaTeX cannot render failing the build at its source line."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import katex_math
import pytest
from bs4 import BeautifulSoup
from conftest import ROOT, build_site
from fontTools.ttLib import TTFont

pytestmark = pytest.mark.skipif(
    not (katex_math.KATEX / "katex.min.js").is_file(),
    reason="KaTeX is not fetched: run `python tools/fetch_katex.py` (make does)",
)

CONF = """
extensions = ["myst_parser", "katex_math"]
myst_enable_extensions = ["dollarmath", "amsmath"]
html_math_renderer = "katex"
math_numfig = True
numfig = True
math_eqref_format = "({number})"
html_static_path = []
"""
PAGE = r"""# Page

Inline $\texttt{low\_freq\_factor} = 8$, $\left(\sum_i x_i\right)$ and a display:

$$
\omega_i = 10000^{-2i/d}
$$ (eq-omega)

$$
a &= b \\
c &= d
$$ (eq-split)

\begin{align}
x &= 1 \\
y &= 2
\end{align}

As {eq}`eq-omega` and {eq}`eq-split` say.
"""


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> BeautifulSoup:
    out = build_site(tmp_path_factory.mktemp("site"), CONF, {"index.md": PAGE})
    return BeautifulSoup((out / "index.html").read_text(encoding="utf-8"), "html.parser")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return build_site(tmp_path_factory.mktemp("site"), CONF, {"index.md": PAGE})


def test_formulas_are_typeset_html_with_hidden_mathml_and_their_tex(page) -> None:
    inline = page.select_one("span.math")
    assert inline.select_one(".katex-html") is not None
    assert inline.select_one(".katex-mathml math") is not None
    tex = inline.select_one('annotation[encoding="application/x-tex"]').get_text()
    assert tex == r"\texttt{low\_freq\_factor} = 8"
    # What the reader sees: the identifier with its underscores, no backslash, no raw TeX.
    seen = inline.select_one(".katex-html").get_text()
    assert "low_freq_factor" in seen
    assert "\\" not in seen
    assert "\\(" not in page.get_text() and "$$" not in page.get_text()


def test_no_page_loads_a_math_script(page) -> None:
    scripts = [script.get("src", "") for script in page.select("script")]
    assert not [src for src in scripts if "mathjax" in src.lower() or "katex" in src.lower()]
    assert "MathJax" not in str(page)


def test_equations_are_numbered_once_and_referenced(page) -> None:
    displays = page.select("div.math")
    assert len(displays) == 3
    numbers = [display.select_one("span.eqno") for display in displays]
    assert [re.match(r"\(\d+\)", n.get_text(strip=True))[0] for n in numbers] == [
        "(1)",
        "(2)",
        "(3)",
    ]
    # The amsmath environment is numbered once, by Sphinx, and not again by KaTeX per line.
    assert not page.select("div.math .katex .tag")
    assert [display.get("id") for display in displays[:2]] == [
        "equation-eq-omega",
        "equation-eq-split",
    ]
    references = page.select('a[href="#equation-eq-omega"], a[href="#equation-eq-split"]')
    assert {ref.get_text() for ref in references} >= {"(1)", "(2)"}


def test_a_multi_line_display_is_aligned(page) -> None:
    split = page.select("div.math")[1]
    tex = split.select_one('annotation[encoding="application/x-tex"]').get_text()
    assert tex.startswith(r"\begin{split}")
    assert len(split.select(".katex-html .mtable .col-align-r")) == 1


def test_katex_s_stylesheet_is_served_as_released_with_its_woff2_fonts(site) -> None:
    katex = site / "_static" / "katex"
    css = (katex / "katex.min.css").read_bytes()
    assert css == (katex_math.KATEX / "katex.min.css").read_bytes()
    fonts = {path.name for path in (katex / "fonts").iterdir()}
    assert fonts == {path.name for path in (katex_math.KATEX / "fonts").iterdir()}
    assert "KaTeX_Main-Regular.woff2" in fonts
    assert all(name.endswith(".woff2") for name in fonts)
    assert not list(katex.rglob("*.js"))  # the build's script is not served
    link = BeautifulSoup((site / "index.html").read_text(encoding="utf-8"), "html.parser")
    assert not link.select('link[href*="katex.min.css"]')  # page_assets.py is not loaded here


def _code_points(path: Path) -> set[int]:
    with TTFont(path) as font:
        return set(font.getBestCmap() or {})


def test_each_katex_font_holds_the_characters_of_the_built_formulas_and_no_more(site) -> None:
    """A font keeps its glyph for every character a built formula holds, and drops the rest:
    the page's prose ("Page", "As", "say") adds nothing, the formulas' letters are kept."""
    html = (site / "index.html").read_text(encoding="utf-8")
    drawn = {
        ord(char)
        for formula in BeautifulSoup(html, "html.parser").select(".katex-html")
        for char in formula.get_text()
    }
    assert {ord(char) for char in "ωxi∑=("} <= drawn and ord("P") not in drawn
    assert katex_math.formula_chars(site) == {chr(point) for point in drawn}
    served = site / "_static" / "katex" / "fonts"
    for release in sorted((katex_math.KATEX / "fonts").glob("*.woff2")):
        kept = _code_points(served / release.name)
        assert kept == _code_points(release) & (drawn | {ord(" ")}), release.name
        assert (served / release.name).stat().st_size < release.stat().st_size, release.name
    assert ord("ω") in _code_points(served / "KaTeX_Math-Italic.woff2")


def test_formula_text_leaves_out_the_hidden_mathml_and_the_prose() -> None:
    parser = katex_math.FormulaText()
    parser.feed(
        '<p>Prose <span class="katex"><span class="katex-mathml"><math><mi>q</mi></math></span>'
        '<span class="katex-html" aria-hidden="true"><span class="mord">a<br>b</span>'
        '<svg><path d="M0 0"/></svg><span>c</span></span></span> more prose</p>'
    )
    assert parser.chars == set("abc")


def test_the_page_preloads_the_fonts_its_formulas_use(site) -> None:
    page = BeautifulSoup((site / "index.html").read_text(encoding="utf-8"), "html.parser")
    preloads = {link["href"] for link in page.select('link[rel="preload"][as="font"]')}
    # the main and math italic faces, \texttt's, and the inline sum's (a small operator)
    assert preloads == {
        "_static/katex/fonts/KaTeX_Main-Regular.woff2",
        "_static/katex/fonts/KaTeX_Math-Italic.woff2",
        "_static/katex/fonts/KaTeX_Typewriter-Regular.woff2",
        "_static/katex/fonts/KaTeX_Size1-Regular.woff2",
    }
    assert all((site / href).is_file() for href in preloads)


def test_a_formula_katex_cannot_render_fails_the_build_at_its_line(tmp_path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "conf.py").write_text(CONF, encoding="utf-8")
    (source / "index.md").write_text(
        "# Page\n\nFine $x$.\n\nBroken $\\undefinedmacro{x}$ here.\n", encoding="utf-8"
    )
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(ROOT / "book" / "_ext")!r})
        from sphinx.cmd.build import main
        sys.exit(main(["-W", "-q", "-b", "html", {str(source)!r}, {str(tmp_path / "out")!r}]))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert result.returncode != 0
    assert re.search(r"index\.md:5: ?KaTeX cannot typeset .*undefinedmacro", result.stderr), (
        result.stderr
    )


def test_each_distinct_formula_is_rendered_once() -> None:
    renderer = katex_math.Renderer({r"\pe": r"\mathrm{PE}"})
    first = renderer.render(r"\pe(x)", display=False)
    again = renderer.render(r"\pe(x)", display=False)
    assert first is again
    assert first[0] is not None and "PE" in first[0]
    assert renderer.render(r"\pe(x)", display=True) is not first
    assert len(renderer.cache) == 2


def test_amsmath_environments_are_rendered_starred() -> None:
    from docutils import nodes

    node = nodes.math_block(r"\begin{align}a\\b\end{align}", r"\begin{align}a\\b\end{align}")
    node["nowrap"] = True
    assert katex_math.display_tex(node) == r"\begin{align*}a\\b\end{align*}"
