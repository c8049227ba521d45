"""book/_ext/search_text.py: the text a page's search snippets read, from a small built page."""

from __future__ import annotations

from search_text import MATH_CLOSE, MATH_OPEN, page_text

PAGE = """<html><body><nav>Contents</nav><article>
<section id="the-section"><h1>Title<a class="headerlink" href="#">#</a></h1>
<p>The angle <span class="math"><span class="katex"><math><semantics><mi>θ</mi>
<annotation encoding="application/x-tex">\\theta_i</annotation></semantics></math>
<span class="katex-html">θi</span></span></span> turns.</p>
<ul><li><p>An item.</p></li></ul>
<div class="cell_output"><p>printed, not prose</p><div class="highlight"><pre>line one
line two</pre></div></div>
</section>
<dl class="py method"><dt class="sig" id="pe_lib.Rotary.forward"><span class="sig-name">forward</span>(x)</dt>
<dd><p>Rotate the input. Then more.</p></dd></dl>
<script>ignored()</script>
</article></body></html>"""


def test_blocks_are_the_article_s_text_in_order() -> None:
    text = page_text(PAGE)
    assert text["blocks"] == [
        ["p", "Title"],
        ["p", f"The angle {MATH_OPEN}\\theta_i{MATH_CLOSE} turns."],
        ["p", "An item."],
        # A cell's HTML output reads as code: quoted only where the prose lacks the word.
        ["c", "printed, not prose"],
        ["c", "line one\nline two"],
        ["t", "pe_lib.Rotary.forward(x)", [6, 7]],
        ["p", "Rotate the input. Then more."],
    ]


def test_ids_give_the_blocks_of_their_element() -> None:
    text = page_text(PAGE)
    assert text["ids"]["the-section"] == [0, 5]
    # An API entry reaches to the end of its description.
    assert text["ids"]["pe_lib.Rotary.forward"] == [5, 7]
