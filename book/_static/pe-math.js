// The book's formulas are typeset when the book is built (KaTeX, book/_ext/katex_math.py): a page
// holds them as HTML, with hidden MathML for screen readers. This script does two small things
// with them, with no typesetter to wait for.
//
// Fitting: an equation wider than the text column is scaled down to fit, to no less than 70 % of
// its size (66 % for one that would otherwise scroll for a few pixels);
// one that is still too wide scrolls inside its box, marked with the class
// pe-math-scrolls (a visible scrollbar and a shadow at the edge, page.css), and is made a
// focusable region named after its equation, so that a keyboard can scroll it too. Display
// equations, and the rare inline formula longer than a line of a phone's column
// (small-screens.css gives inline math no scroll box otherwise). Every formula is fitted before
// the page is first drawn: the script runs as soon as the article has been read (it is placed
// after it), and the page is not drawn until it has run (page_assets.py, the layout template).
// A browser may draw the top of a page before it has read the rest: a formula near the top drawn
// at full size and scaled after moved all the text below it. Fitted again when one of KaTeX's
// fonts arrives (its boxes are measured in its own fonts), and when the column changes width.
// Every equation is measured first and written after: one layout for the whole page. KaTeX
// sizes a formula in em, so its width scales with its font size and the scaled width is known
// without measuring it again. The page's <html> gets data-pe-math-fitted="true" after the
// first fit.
//
// Copying: a selection that holds formulas copies each one as its TeX (KaTeX's MathML carries it
// as an annotation): $...$ inline, $$...$$ displayed.
(function () {
  "use strict";
  const SMALLEST = 0.7;
  // The smallest scale a formula that would otherwise scroll by a few pixels is given.
  const NEARLY = 0.66;
  const SPARE = 8;
  const DISPLAY = "article div.math > .katex-display";
  const INLINE = "article span.math > .katex";
  const TEX = 'annotation[encoding="application/x-tex"]';
  // KaTeX's font families (KaTeX_Main, KaTeX_Size1, ...), quoted or not.
  const KATEX_FONT = /^["']?KaTeX_/;

  // Undo what the last fit wrote (writes only).
  function reset(box) {
    if (box.style.fontSize) box.style.fontSize = "";
    if (box.classList.contains("pe-math-scrolls")) {
      box.classList.remove("pe-math-scrolls");
      for (const name of ["tabindex", "role", "aria-label"]) box.removeAttribute(name);
    }
  }

  // What a box has and needs (reads only).
  function measure(box, inline) {
    if (inline) {
      const block = box.parentElement.closest("p, li, dd, td, th, div") || box.parentElement;
      return { box, available: block.clientWidth, needed: box.getBoundingClientRect().width };
    }
    return { box, available: box.clientWidth, needed: box.scrollWidth };
  }

  function label(box) {
    const number = box.closest("div.math") && box.closest("div.math").querySelector(".eqno");
    const name = number ? `Equation ${number.textContent.replace(/[^\w.()]/g, "").trim()}` : "Formula";
    return `${name}, wider than the column: scroll sideways to read it whole`;
  }

  // Scales a box to `scale`, and marks it as a scroll box when even the smallest scale is too
  // wide (writes only).
  function write(box, scale, scrolls) {
    box.style.fontSize = `${Math.round(scale * 100)}%`;
    if (scrolls && !box.classList.contains("pe-math-scrolls")) {
      box.classList.add("pe-math-scrolls");
      box.setAttribute("tabindex", "0");
      box.setAttribute("role", "region");
      box.setAttribute("aria-label", label(box));
    }
  }

  // Whether a box still fits at the scale it was given: one at full size, or scaled, is no
  // wider than its column; a scroll box is still too wide (reads only).
  function holds({ box, available, needed }) {
    if (available === 0) return true;
    if (box.classList.contains("pe-math-scrolls")) return needed > available;
    return box.style.fontSize ? needed <= available : needed < available;
  }

  // Every box is measured, then every box written: one layout for the page. A formula's width
  // follows its font size but for a few pixels KaTeX sizes in pixels (the struts of its stacked
  // boxes), which SPARE leaves room for; the widths read are whole pixels, and a box whose
  // content overflows by a fraction of one would show a scrollbar. When the column changes
  // width every box is fitted again from its full size. When one of KaTeX's fonts arrives, each
  // box is first read at the size it has: if every box still fits, nothing is written (a write
  // styles the whole formula again; a formula the font made narrower keeps its smaller scale);
  // otherwise every box is fitted again from its full size.
  function fit(fromFullSize) {
    const display = Array.from(document.querySelectorAll(DISPLAY));
    const inline = Array.from(document.querySelectorAll(INLINE));
    const boxes = display.concat(inline);
    if (boxes.length === 0) return;
    const sizes = () => display.map((box) => measure(box, false))
      .concat(inline.map((box) => measure(box, true)));
    const touched = boxes.some(
      (box) => box.style.fontSize || box.classList.contains("pe-math-scrolls"));
    let found = touched && !fromFullSize ? sizes() : null;
    if (found === null || !found.every(holds)) {
      for (const box of boxes) reset(box);
      found = sizes();
      for (const { box, available, needed } of found) {
        if (available === 0 || needed < available) continue;
        let scale = Math.floor(((available - SPARE) / needed) * 100) / 100;
        // A formula a few per cent too wide at the smallest size goes a little smaller rather
        // than scroll for a few pixels.
        if (scale < NEARLY) scale = SMALLEST;
        write(box, Math.min(scale, 1), scale === SMALLEST && needed * scale > available - SPARE);
      }
    }
    document.documentElement.dataset.peMathFitted = "true";
  }

  // A copied selection: each formula in it (whole or in part) as its TeX.
  function copy(event) {
    const selection = window.getSelection();
    if (!selection || selection.rangeCount === 0 || selection.isCollapsed) return;
    const fragment = selection.getRangeAt(0).cloneContents();
    const start = selection.getRangeAt(0).startContainer;
    const inside = start.parentElement && start.parentElement.closest(".katex");
    if (!fragment.querySelector(".katex-mathml") && !inside) return;
    const holder = document.createElement("div");
    holder.appendChild(fragment);
    // A selection that starts inside a formula: the whole formula.
    if (inside && !holder.querySelector(TEX)) holder.replaceChildren(inside.cloneNode(true));
    for (const formula of holder.querySelectorAll(".katex")) {
      const tex = formula.querySelector(TEX);
      if (!tex) continue;
      const display = formula.parentElement && formula.parentElement.classList.contains("katex-display");
      formula.replaceWith(display ? `$$${tex.textContent}$$` : `$${tex.textContent}$`);
    }
    for (const number of holder.querySelectorAll(".eqno, .headerlink")) number.remove();
    event.clipboardData.setData("text/plain", holder.textContent);
    event.preventDefault();
  }

  // The width of a box's content, as a ResizeObserver reports it (reads only).
  function contentWidth(box) {
    const style = getComputedStyle(box);
    const edges = ["paddingLeft", "paddingRight", "borderLeftWidth", "borderRightWidth"];
    const outer = box.getBoundingClientRect().width;
    return edges.reduce((width, edge) => width - parseFloat(style[edge]), outer);
  }

  function start() {
    if (!document.querySelector("div.math, span.math")) return;
    const article = document.querySelector("article") || document.body;
    let width = contentWidth(article);
    fit(true);
    // The observer reports the column's width once when it starts observing, then on every
    // change: a width other than the one the formulas were fitted to fits them again.
    new ResizeObserver((entries) => {
      const now = entries[entries.length - 1].contentRect.width;
      if (Math.abs(now - width) > 0.5) fit(true);
      width = now;
    }).observe(article);
    // KaTeX's boxes are measured in its own fonts: one of them that arrives after the first fit
    // changes them (another font, the icons' say, changes no formula and costs no second fit).
    if (document.fonts) {
      document.fonts.addEventListener("loadingdone", (event) => {
        const faces = Array.from(event.fontfaces || []);
        if (faces.length === 0 || faces.some((face) => KATEX_FONT.test(face.family))) fit(false);
      });
    }
    document.addEventListener("copy", copy);
  }

  // Placed after the article (page_assets.py, the layout template), it starts at once: the page
  // has been read up to here. In a page's head (another layout), once the page has been read.
  if (document.currentScript && document.currentScript.closest("head")) {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
