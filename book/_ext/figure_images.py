"""The chapters' figures as a phone wants them: their shape kept, loaded when needed, at its size.

myst-nb writes a figure's PNG output (drawn by ``pe_lib.plotting`` at twice its displayed size)
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
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

# A figure as myst-nb writes a PNG output with width and height metadata.
FIGURE = re.compile(
    r'<img (?P<attributes>alt="[^"]*" src="(?P<src>[^"]*_images/(?P<name>[0-9a-f]{64})\.png)") '
    r'style="width: (?P<width>\d+)px; height: (?P<height>\d+)px;" />'
)
# Figures at least this wide (CSS px) get a copy at their displayed size.
SMALLEST_WITH_COPY = 400
# The text column is the screen's width, less the page's padding, up to this width (px).
PHONE = 700


def _copy_name(name: str, width: int) -> str:
    return f"{name}-{width}w.png"


def rewrite(body: str) -> str:
    """``body`` with every figure's inline size made attributes, each figure lazy."""

    def figure(match: re.Match[str]) -> str:
        width, height = int(match["width"]), int(match["height"])
        parts = [f"<img {match['attributes']}"]
        if width >= SMALLEST_WITH_COPY:
            src, name = match["src"], match["name"]
            small = src.removesuffix(f"{name}.png") + _copy_name(name, width)
            parts.append(
                f'srcset="{small} {width}w, {src} {2 * width}w" '
                f'sizes="(max-width: {PHONE}px) 100vw, {width}px"'
            )
        parts.append(f'width="{width}" height="{height}" loading="lazy" decoding="async" />')
        return " ".join(parts)

    return FIGURE.sub(figure, body)


def _page_context(
    app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    body = context.get("body")
    if isinstance(body, str) and "_images/" in body:
        context["body"] = rewrite(body)


def _write_copies(app: Any, exception: Exception | None) -> None:
    """Each figure's copy at its displayed size (half its pixels), when missing or older."""
    if exception is not None or app.builder.format != "html":
        return
    from PIL import Image

    images = Path(app.outdir) / "_images"
    for path in images.glob("*.png"):
        if not re.fullmatch(r"[0-9a-f]{64}", path.stem):
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
    app.connect("html-page-context", _page_context)
    app.connect("build-finished", _write_copies)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
