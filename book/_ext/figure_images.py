"""The chapters' figures as a phone wants them: their shape kept, loaded when needed, at its size.

myst-nb writes a figure's PNG output (drawn by ``pe_lib.viz.plotting`` at twice its displayed size)
as ``<img src=... style="width: Wpx; height: Hpx;">``, the sizes IPython's retina output puts in
the output's metadata. An inline height beats the stylesheet's ``height: auto``: in a column
narrower than ``W`` the figure kept its height and lost its width. This extension writes the
sizes as the ``width`` and ``height`` attributes instead, which give the browser the figure's
aspect ratio before the image arrives (HTML Standard, "Dimension attributes"; CSS Box Sizing 4,
``aspect-ratio: auto``), so that ``max-width: 100%; height: auto`` in ``page.css`` scales it
whole at every width. It also

- loads each figure when the reader scrolls near it (``loading="lazy"``; a chapter opens with
  prose, so none is in the first screen), and decodes it off the main thread
  (``decoding="async"``);
- offers a copy at the displayed size beside the double-size PNG (``srcset`` with width
  descriptors and ``sizes``): a phone's column, about 350 CSS px, takes the smaller file, a
  high-density desktop screen the sharp one. The copies, ``<name>-<width>w.png`` beside each
  figure in ``_images``, are drawn with Pillow (Lanczos) when the build finishes.

The figures are written by the HTML translator's handler for images (``app.add_node`` with
``override``), which leaves every other image to the translator; ``tests/tools/
test_figure_images.py`` checks the element it writes in a small Sphinx build.
"""

from __future__ import annotations

import posixpath
import re
import urllib.parse
from pathlib import Path
from typing import Any

from docutils import nodes

# An output figure's file name as myst-nb writes it (the SHA-256 of its bytes).
FIGURE_NAME = re.compile(r"[0-9a-f]{64}\.png")
# A size myst-nb writes from the output's metadata: pixels, with or without the unit.
PIXELS = re.compile(r"(\d+)(px)?")
# Figures at least this wide (CSS px) get a copy at their displayed size.
SMALLEST_WITH_COPY = 400
# The text column is the screen's width, less the page's padding, up to this width (px).
PHONE = 700


def _copy_name(name: str, width: int) -> str:
    return f"{name}-{width}w.png"


def figure_attributes(src: str, width: int, height: int) -> dict[str, str]:
    """The ``<img>`` attributes of a figure at ``src`` shown at ``width`` x ``height`` CSS px."""
    attributes = {"src": src}
    if width >= SMALLEST_WITH_COPY:
        name = posixpath.basename(src).removesuffix(".png")
        small = src.removesuffix(f"{name}.png") + _copy_name(name, width)
        attributes["srcset"] = f"{small} {width}w, {src} {2 * width}w"
        attributes["sizes"] = f"(max-width: {PHONE}px) 100vw, {width}px"
    attributes.update(width=str(width), height=str(height), loading="lazy", decoding="async")
    return attributes


def _figure(self: Any, node: nodes.image) -> dict[str, str] | None:
    """The attributes of an output figure (a PNG myst-nb wrote, with its size), else None."""
    image = self.builder.images.get(node["uri"])
    sizes = [PIXELS.fullmatch(str(node.get(key, ""))) for key in ("width", "height")]
    if image is None or not FIGURE_NAME.fullmatch(image) or not all(sizes) or "scale" in node:
        return None
    src = posixpath.join(self.builder.imgpath, urllib.parse.quote(image))
    width, height = (int(match[1]) for match in sizes if match)
    return figure_attributes(src, width, height)


def visit_image(self: Any, node: nodes.image) -> None:
    """An output figure as ``<img>`` with its size as attributes, lazy, with a smaller copy;
    every other image as the translator writes it."""
    attributes = _figure(self, node)
    if attributes is None:
        type(self).visit_image(self, node)
        return
    # A line break after it unless it stands in text (docutils' rule: a link around it is not text).
    parent = node.parent
    in_text = isinstance(parent, nodes.TextElement) and not (
        isinstance(parent, nodes.reference) and not isinstance(parent.parent, nodes.TextElement)
    )
    suffix = "" if in_text else "\n"
    alt = node.get("alt", attributes["src"])
    self.body.append(self.emptytag(node, "img", suffix, alt=alt, **attributes))


def depart_image(self: Any, node: nodes.image) -> None:
    type(self).depart_image(self, node)


def _write_copies(app: Any, exception: Exception | None) -> None:
    """Each figure's copy at its displayed size (half its pixels), when missing or older."""
    if exception is not None or app.builder.format != "html":
        return
    from PIL import Image

    images = Path(app.outdir) / "_images"
    for path in images.glob("*.png"):
        if not FIGURE_NAME.fullmatch(path.name):
            continue
        with Image.open(path) as image:
            width, height = image.size
            half = width // 2
            if half < SMALLEST_WITH_COPY:
                continue
            copy = path.with_name(_copy_name(path.stem, half))
            if copy.exists() and copy.stat().st_mtime >= path.stat().st_mtime:
                continue
            small = image.convert("RGBA").resize(
                (half, round(height * half / width)), Image.LANCZOS
            )
            small.save(copy, optimize=True)


def setup(app: Any) -> dict[str, Any]:
    app.add_node(nodes.image, override=True, html=(visit_image, depart_image))
    app.connect("build-finished", _write_copies)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
