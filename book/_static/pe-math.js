// Equations wider than the text column: scaled down to fit, to no less than 70 % of their size;
// one that is still too wide scrolls inside its box, marked with the class pe-math-scrolls (a
// visible scrollbar and a shadow at the edge, page.css), and is made a focusable region named
// after its equation, so that a keyboard can scroll it too. Display equations, and the rare
// inline formula longer than a line of a phone's column (small-screens.css gives inline math no
// scroll box otherwise). Runs after MathJax has typeset the page, and again when the column
// changes width.
//
// Every equation is measured first and written after: reading a width after writing a font size
// would make the browser lay the page out again for each equation (2 s of main-thread work on a
// phone for a chapter with a hundred formulas). MathJax sizes a formula in em, so its width
// scales with its font size and the scaled width is known without measuring it again.
(function () {
  "use strict";
  const SMALLEST = 0.7;
  const DISPLAY = 'article mjx-container[display="true"]';
  const INLINE = 'article span.math > mjx-container:not([display="true"])';

  // Undo what the last fit wrote (writes only).
  function reset(box) {
    if (box.dataset.peFontSize === undefined) box.dataset.peFontSize = box.style.fontSize;
    box.style.fontSize = box.dataset.peFontSize;
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

  function fit() {
    const display = Array.from(document.querySelectorAll(DISPLAY));
    const inline = Array.from(document.querySelectorAll(INLINE));
    for (const box of display.concat(inline)) reset(box);
    // One layout for every equation on the page.
    const sizes = display.map((box) => measure(box, false))
      .concat(inline.map((box) => measure(box, true)));
    for (const { box, available, needed } of sizes) {
      if (available === 0 || needed <= available + 1) continue;
      const own = parseFloat(box.dataset.peFontSize) || 100;
      const scale = Math.max(SMALLEST, Math.floor((available / needed) * 100) / 100);
      box.style.fontSize = `${(own * scale).toFixed(1)}%`;
      if (needed * scale > available + 1) {
        box.classList.add("pe-math-scrolls");
        box.setAttribute("tabindex", "0");
        box.setAttribute("role", "region");
        box.setAttribute("aria-label", label(box));
      }
    }
  }

  function start() {
    if (!document.querySelector("div.math, span.math")) return;
    const ready = () => window.MathJax && MathJax.startup && MathJax.startup.promise;
    const wait = () => {
      if (!ready()) {
        setTimeout(wait, 100);
        return;
      }
      MathJax.startup.promise.then(() => {
        fit();
        document.documentElement.dataset.peMathFitted = "true";
        // The observer reports the column's width once at the start (just fitted), then on
        // every change.
        let width = null;
        const article = document.querySelector("article") || document.body;
        new ResizeObserver((entries) => {
          const now = entries[entries.length - 1].contentRect.width;
          if (width === null) {
            width = now;
          } else if (now !== width) {
            width = now;
            fit();
          }
        }).observe(article);
      });
    };
    wait();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
