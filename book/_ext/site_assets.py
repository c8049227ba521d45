"""Ship only the files pages load: the theme's icons as a small script, icon fonts cut down.

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
script draws as SVG, no glyph (``content: none``), also before the script has run. A page with
an element the theme draws such a glyph for (``ICON_FONT_USERS``: an admonition's title, a link
to GitHub) preloads the subset it draws from, so that it arrives before the page is laid out
(``font_preloads.py``).

Figures: matplotlib writes RGBA PNGs with zlib's default effort, though every pixel of the book's
figures is opaque. After the build this re-encodes each PNG under ``_images`` in the smallest mode
that holds the same pixels (RGB, or a palette when it has at most 256 colours) with Pillow's
``optimize``, checks that the pixels are unchanged, and keeps the smaller file.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from font_preloads import add_font_preloads, fonts_drawn

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
  // Each icon in a 1em square (none is wider than high), the square icon-font.css keeps for it
  // until it is drawn.
  style.textContent = ".svg-inline--fa{display:inline-block;width:1em;height:1em;"
    + "overflow:visible;vertical-align:-.125em}"
    + ".svg-inline--fa.fa-lg{font-size:1.25em;vertical-align:-.2em}";
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
    if width > height:
        raise RuntimeError(
            f"the pages name the Font Awesome icon fa-{style} fa-{name}, wider than high "
            f"({width} by {height}): the icon script draws each icon in a 1em square, the place "
            "icon-font.css keeps for it, where this one would be drawn smaller"
        )
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
# The elements in a page's article that the theme's stylesheet draws a glyph for (its ::before
# and ::after rules with `font: var(--fa-font-solid)` or `var(--fa-font-brands)`), by the classes
# that select them, and the font each draws from. The theme's other such rules mark links in the
# navigation and the search box's results, which the book's pages do not have.
ICON_FONT_USERS: list[tuple[str, str]] = [
    ("admonition-title", "fa-solid-900"),
    ("versionmodified", "fa-solid-900"),
    ("reference download", "fa-solid-900"),
    ("github", "fa-brands-400"),
    ("gitlab", "fa-brands-400"),
]


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


def preload_icon_fonts(
    app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    fonts = fonts_drawn(context.get("body") or "", ICON_FONT_USERS)
    add_font_preloads(context, [f"_static/fontawesome/{font}.woff2" for font in fonts])


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


def _finished(app: Any, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    subset_icons(outdir)
    subset_icon_fonts(outdir)
    optimize_pngs(outdir)


def setup(app: Any) -> dict[str, Any]:
    app.connect("html-page-context", preload_icon_fonts)
    app.connect("build-finished", _finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
