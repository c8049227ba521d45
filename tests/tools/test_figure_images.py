"""book/_ext/figure_images.py in a small Sphinx build: an output figure (a PNG named by its
SHA-256, with its size in pixels, as myst-nb writes it) becomes an ``<img>`` with its size as
attributes, lazy, with a copy at its displayed size; any other image is left to the translator.
The figures are written by the HTML translator's handler for images: a Sphinx or docutils
upgrade that changes how images are written, or where they are copied, fails here."""

from __future__ import annotations

import io

from bs4 import BeautifulSoup
from PIL import Image

CONF = 'extensions = ["figure_images"]\n'
FIGURE = "a" * 64 + ".png"


def _png(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (31, 119, 180)).save(buffer, format="PNG")
    return buffer.getvalue()


def test_output_figure_and_other_image(sphinx_build) -> None:
    page = f"""Title
=====

.. image:: {FIGURE}
   :width: 500
   :height: 300

.. image:: logo.png
   :width: 100px
"""
    out = sphinx_build(
        CONF, {"index.rst": page}, {FIGURE: _png(1000, 600), "logo.png": _png(200, 200)}
    )
    html = BeautifulSoup((out / "index.html").read_text(encoding="utf-8"), "html.parser")
    figure, other = html.find_all("img")
    stem = FIGURE.removesuffix(".png")
    assert figure.attrs == {
        "alt": f"_images/{FIGURE}",
        "src": f"_images/{FIGURE}",
        "srcset": f"_images/{stem}-500w.png 500w, _images/{FIGURE} 1000w",
        "sizes": "(max-width: 700px) 100vw, 500px",
        "width": "500",
        "height": "300",
        "loading": "lazy",
        "decoding": "async",
    }, figure
    assert (out / "_images" / FIGURE).is_file(), "the figure is not where its src points"
    with Image.open(out / "_images" / f"{stem}-500w.png") as copy:
        assert copy.size == (500, 300)
    # Not an output figure: as docutils writes it, its size inline.
    assert other["src"] == "_images/logo.png" and other["style"] == "width: 100px;", other
    assert "loading" not in other.attrs


def test_a_narrow_figure_has_no_copy(sphinx_build) -> None:
    page = f"Title\n=====\n\n.. image:: {FIGURE}\n   :width: 300\n   :height: 200\n"
    out = sphinx_build(CONF, {"index.rst": page}, {FIGURE: _png(600, 400)})
    html = BeautifulSoup((out / "index.html").read_text(encoding="utf-8"), "html.parser")
    (figure,) = html.find_all("img")
    assert "srcset" not in figure.attrs and figure["width"] == "300" and figure["height"] == "200"
    assert not list((out / "_images").glob("*w.png"))
