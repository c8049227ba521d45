"""Ship only the files pages load: a MathJax subset and the theme's icons as a small script.

MathJax: the pinned ``sphinx-mathjax-offline`` package holds the whole MathJax 3 distribution
(24 MB); pages load one component (``tex-chtml.js``, TeX input and CommonHTML output with the
menu and the assistive MathML built in) and the CommonHTML fonts, and the lazy-typesetting
extension (``ui/lazy``: each formula typeset as it nears the screen). This copies those, and the
licence, into ``_static/mathjax``.

Icons: the theme's ``scripts/fontawesome.js`` (1.5 MB) holds every Font Awesome icon and turns
each ``<i class="fa-...">`` or ``<span class="fa-...">`` into an inline SVG that keeps the
element's attributes. The pages use about twenty. After the build this
replaces that file with a script of the same name that draws just the icons the built pages name
and nothing else, each read from the SVG file Font Awesome publishes for it (the release the
theme bundles, fetched into ``book/_ext/fontawesome`` by ``tools/fetch_icons.py``).

Icon fonts: the theme's stylesheet still draws a few glyphs from the Font Awesome web fonts
(admonition titles, breadcrumbs, external-link marks) and would request the whole fonts (280 KB)
for them. ``_static/icon-font.css`` (in ``html_css_files``) sets the glyphs through the theme's
CSS variables and points the fonts' families at subsets; after the build this writes those
subsets, holding just the code points that stylesheet names, from the Font Awesome release the
theme bundles (its TrueType fonts, fetched with the SVG files). The stylesheet names each glyph
as a CSS string ("\\f058"); its ``@font-face`` rules come after the theme's (the theme links its
stylesheet before ``html_css_files``), and of two faces with the same descriptors a browser uses
the later, so the whole fonts are never fetched. It also gives the icon elements, which the icon
script draws as SVG, no glyph (``content: none``), also before the script has run.

Figures: matplotlib writes RGBA PNGs with zlib's default effort, though every pixel of the book's
figures is opaque. After the build this re-encodes each PNG under ``_images`` in the smallest mode
that holds the same pixels (RGB, or a palette when it has at most 256 colours) with Pillow's
``optimize``, checks that the pixels are unchanged, and keeps the smaller file.
"""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

# The components of MathJax's tex-chtml.js without its context menu (426 KB of the 1.16 MB file;
# the assistive MathML for screen readers stays): startup.js loads them from this list, and the
# TeX extensions a page needs beyond these on demand (autoload). And MathJax's lazy typesetting
# (ui/lazy, MathJax 3.2): a formula is typeset when it comes within MATHJAX_LAZY_MARGIN of the
# screen, not all of a chapter's formulas as the page loads (CommonHTML inserts and measures
# each one: seconds of layout work on a phone). What needs every formula asks for them all:
# _static/pe-math.js's peMath.typesetAll() (the PDF printer, the browser tests), and MathJax
# itself before the browser prints.
MATHJAX_ENTRY = "startup.js"
MATHJAX_COMPONENTS = [
    "core",
    "input/tex-base",
    "[tex]/ams",
    "[tex]/newcommand",
    "[tex]/configmacros",
    "[tex]/require",
    "[tex]/autoload",
    "output/chtml",
    "a11y/assistive-mml",
    "ui/lazy",
]
# How far outside the screen (above and below) a formula is typeset: about a phone's screen, so
# that reading or scrolling at a normal pace finds the formulas ahead already typeset.
MATHJAX_LAZY_MARGIN = "800px 0px"
MATHJAX_KEEP = (
    MATHJAX_ENTRY,
    "core.js",
    "input/tex-base.js",
    "input/tex/extensions",
    "output/chtml.js",
    "output/chtml/fonts/tex.js",
    "output/chtml/fonts/woff-v2",
    "a11y/assistive-mml.js",
    "ui/lazy.js",
)
# Font Awesome's styles, by the class names that select them (fa-solid, or the older fas).
PACKS = {"fa-solid": "solid", "fa-regular": "regular", "fa-brands": "brands"}
OLD_PACKS = {"fas": "fa-solid", "far": "fa-regular", "fab": "fa-brands"}
# The SVG file of each icon, by style: fontawesome/solid/bars.svg, ...
ICONS = Path(__file__).resolve().parent / "fontawesome"
# Classes that size, turn or animate an icon rather than name one (Font Awesome 6's "Styling").
MODIFIERS = re.compile(
    r"(xs|sm|lg|xl|2xl|2xs|\d+x|fw|border|pull-(left|right)|spin|spin-pulse|spin-reverse|pulse"
    r"|beat|beat-fade|bounce|fade|flip|shake|rotate-\d+|rotate-by|flip-(horizontal|vertical|both)"
    r"|stack|stack-1x|stack-2x|inverse|li|ul|layers|layers-text|layers-counter|sr-only)"
)
# An icon class on a page: fa-solid fa-bars, fab fa-github, ...
ICON_CLASSES = re.compile(r'class="([^"]*\bfa-[a-z0-9-]+[^"]*)"')
SVG = "{http://www.w3.org/2000/svg}"

ICON_SCRIPT = """// Font Awesome icons the book's pages use, drawn as inline SVG (a subset of the theme's
// fontawesome.js, written at build time by book/_ext/site_assets.py).
(function () {
  "use strict";
  const icons = %(icons)s;
  const style = document.createElement("style");
  style.textContent = ".svg-inline--fa{display:inline-block;height:1em;overflow:visible;"
    + "vertical-align:-.125em}.svg-inline--fa.fa-lg{font-size:1.25em;vertical-align:-.2em}";
  document.head.appendChild(style);
  function draw(root) {
    // The theme writes icons as <i> and <span> (the sidebar toggles); the theme switch's icons
    // carry data-mode, which its stylesheet reads to show the current mode's icon alone.
    for (const node of root.querySelectorAll("i[class*='fa-'], span[class*='fa-']")) {
      const classes = Array.from(node.classList);
      const pack = classes.find((name) => name in icons);
      const name = pack && classes.find((c) => c.startsWith("fa-") && c.slice(3) in icons[pack]);
      if (!name) continue;
      const [width, height, paths] = icons[pack][name.slice(3)];
      const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
      svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
      svg.setAttribute("aria-hidden", "true");
      svg.setAttribute("focusable", "false");
      for (const attribute of node.attributes) {
        if (attribute.name !== "class") svg.setAttribute(attribute.name, attribute.value);
      }
      svg.setAttribute("class", ["svg-inline--fa", ...classes].join(" "));
      for (const d of paths) {
        const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
        path.setAttribute("fill", "currentColor");
        path.setAttribute("d", d);
        svg.appendChild(path);
      }
      node.replaceWith(svg);
    }
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", () => draw(document));
  } else {
    draw(document);
  }
})();
"""


def _used_icons(outdir: Path) -> dict[str, set[str]]:
    """The icons the built pages name, by style (solid, regular, brands)."""
    used: dict[str, set[str]] = {style: set() for style in PACKS.values()}
    for page in outdir.rglob("*.html"):
        for classes in ICON_CLASSES.findall(page.read_text(encoding="utf-8")):
            names = [OLD_PACKS.get(name, name) for name in classes.split()]
            styles = [PACKS[name] for name in names if name in PACKS]
            for name in names:
                if name.startswith("fa-") and name not in PACKS and styles:
                    if not MODIFIERS.fullmatch(name[3:]):
                        used[styles[0]].add(name[3:])
    return used


def icon(style: str, name: str) -> list[Any]:
    """``[width, height, [path, ...]]`` of one Font Awesome icon, from its SVG file."""
    path = ICONS / style / f"{name}.svg"
    if not path.is_file():
        raise RuntimeError(
            f"the pages name the Font Awesome icon fa-{style} fa-{name}, which {ICONS} does not "
            "have: run `python tools/fetch_icons.py` (its VERSION is the release the theme "
            "bundles), or the theme now names icons of another release"
        )
    root = ElementTree.parse(path).getroot()
    _, _, width, height = (int(float(v)) for v in root.attrib["viewBox"].split())
    return [width, height, [p.attrib["d"] for p in root.iter(f"{SVG}path") if p.get("d")]]


def subset_icons(outdir: Path) -> None:
    target = outdir / "_static" / "scripts" / "fontawesome.js"
    if not target.is_file():
        return
    icons = {
        cls: {name: icon(style, name) for name in sorted(names)}
        for style, names in _used_icons(outdir).items()
        for cls, pack in PACKS.items()
        if pack == style
    }
    by_class = {**icons, **{old: icons[new] for old, new in OLD_PACKS.items()}}
    target.write_text(
        ICON_SCRIPT % {"icons": json.dumps(by_class, sort_keys=True)}, encoding="utf-8"
    )
    (target.parent / "fontawesome.js.map").unlink(missing_ok=True)


# The stylesheet that names the glyphs the pages draw and the subsets' @font-face rules.
ICON_FONT_CSS = Path(__file__).resolve().parents[1] / "_static" / "icon-font.css"
# A code point in a CSS string: "\f058".
CSS_ESCAPE = re.compile(r'"\\([0-9a-fA-F]{1,6})"')
# Font Awesome's fonts (in the release's webfonts/), written as _static/fontawesome/<name>.woff2.
ICON_FONTS = ("fa-solid-900", "fa-regular-400", "fa-brands-400")


def icon_code_points(stylesheet: Path = ICON_FONT_CSS) -> set[int]:
    """The code points ``stylesheet`` writes as CSS strings (the glyphs the pages draw)."""
    return {int(point, 16) for point in CSS_ESCAPE.findall(stylesheet.read_text(encoding="utf-8"))}


def subset_icon_fonts(outdir: Path, stylesheet: Path = ICON_FONT_CSS) -> None:
    """Font Awesome's fonts cut down to the glyphs ``stylesheet`` names, as WOFF2 files."""
    from fontTools import subset

    points = icon_code_points(stylesheet)
    target = outdir / "_static" / "fontawesome"
    target.mkdir(parents=True, exist_ok=True)
    for name in ICON_FONTS:
        source = ICONS / "webfonts" / f"{name}.ttf"
        if not source.is_file():
            raise RuntimeError(f"{source} is missing: run `python tools/fetch_icons.py`")
        options = subset.Options()
        options.flavor = "woff2"
        font = subset.load_font(str(source), options)
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=sorted(points))
        subsetter.subset(font)
        subset.save_font(font, str(target / f"{name}.woff2"), options)


def _fewest_channels(image: Any) -> Any:
    """The same pixels in the smallest mode: RGB when every pixel is opaque, a palette when
    there are at most 256 colours."""
    if image.mode == "RGBA" and image.getchannel("A").getextrema() == (255, 255):
        image = image.convert("RGB")
    if image.mode == "RGB":
        colours = image.getcolors(256)
        if colours is not None:
            image = image.quantize(colors=len(colours), method=2, dither=0)  # exact: few colours
    return image


def optimize_pngs(outdir: Path) -> None:
    from PIL import Image

    for path in sorted((outdir / "_images").glob("*.png")):
        with Image.open(path) as original:
            original.load()
            dpi = original.info.get("dpi")
            reference = original.convert("RGBA").tobytes()
            image = _fewest_channels(original)
            buffer = io.BytesIO()
            image.save(buffer, format="PNG", optimize=True, **({"dpi": dpi} if dpi else {}))
        data = buffer.getvalue()
        if len(data) >= path.stat().st_size:
            continue
        with Image.open(io.BytesIO(data)) as check:
            if check.convert("RGBA").tobytes() != reference:
                raise RuntimeError(f"re-encoding {path.name} changed its pixels")
        path.write_bytes(data)


def copy_mathjax(app: Any, outdir: Path) -> None:
    import importlib.util

    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    if spec is None or spec.origin is None:
        raise RuntimeError("the package sphinx-mathjax-offline (MathJax 3) is not installed")
    source = Path(spec.origin).parent / "static" / "mathjax"
    target = outdir / "_static" / "mathjax"
    shutil.rmtree(target, ignore_errors=True)
    for name in MATHJAX_KEEP:
        if (source / name).is_dir():
            shutil.copytree(source / name, target / name)
        else:
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / name, target / name)
    for licence in source.glob("LICENSE*"):
        shutil.copy2(licence, target / licence.name)


def _finished(app: Any, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    copy_mathjax(app, outdir)
    subset_icons(outdir)
    subset_icon_fonts(outdir)
    optimize_pngs(outdir)


def _loader(app: Any, config: Any) -> None:
    """Tell MathJax's startup which components to load (what tex-chtml.js bundles, no menu, and
    lazy typesetting) and how near the screen a formula is typeset."""
    mathjax = dict(config.mathjax3_config or {})
    loader = dict(mathjax.get("loader", {}))
    loader["load"] = MATHJAX_COMPONENTS
    mathjax["loader"] = loader
    options = dict(mathjax.get("options", {}))
    options.setdefault("lazyMargin", MATHJAX_LAZY_MARGIN)
    mathjax["options"] = options
    tex = dict(mathjax.get("tex", {}))
    packages = tex.get("packages", {})
    if isinstance(packages, dict) and "[-]" in packages:
        # tex-chtml's default list, less what the configuration removes.
        base = ["base", "ams", "newcommand", "configmacros", "require", "autoload", "noundefined"]
        tex["packages"] = [name for name in base if name not in packages["[-]"]]
    mathjax["tex"] = tex
    config.mathjax3_config = mathjax


def setup(app: Any) -> dict[str, Any]:
    app.config.mathjax_path = f"mathjax/{MATHJAX_ENTRY}"
    app.connect("config-inited", _loader, priority=900)
    app.connect("build-finished", _finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
