// Equations wider than the text column: scaled down to fit, to no less than 70 % of their size;
// one that is still too wide scrolls inside its box, marked with the class pe-math-scrolls (a
// visible scrollbar and a shadow at the edge, page.css), and is made a focusable region named
// after its equation, so that a keyboard can scroll it too. Display equations, and the rare
// inline formula longer than a line of a phone's column (small-screens.css gives inline math no
// scroll box otherwise).
//
// MathJax typesets lazily (its ui/lazy extension, loaded by book/_ext/site_assets.py): a formula
// is typeset when it nears the screen, so formulas arrive in batches, the first as the page
// loads, the others as the reader scrolls. Each batch is fitted once MathJax has inserted it (a
// render action of MathJax's, after its own "update"), and the whole page again when the column
// changes width. The page's <html> gets data-pe-math-fitted="true" once MathJax has started and
// the first batch is fitted.
//
// peMath.typesetAll() typesets (and fits) every formula still waiting, for what needs them all
// at once (the PDF printer, the browser tests); it returns a promise. MathJax does the same by
// itself before the browser prints.
//
// Every equation of a batch is measured first and written after: reading a width after writing
// a font size would make the browser lay the page out again for each equation (2 s of
// main-thread work on a phone for a chapter with a hundred formulas). MathJax sizes a formula in
// em, so its width scales with its font size and the scaled width is known without measuring it
// again.
(function () {
  "use strict";
  const SMALLEST = 0.7;
  // Typeset formulas only: a formula waiting for the lazy typesetter is an empty
  // <mjx-container> around an <mjx-lazy> marker, without the jax attribute.
  const DISPLAY = 'article mjx-container[jax][display="true"]';
  const INLINE = 'article span.math > mjx-container[jax]:not([display="true"])';
  // After MathJax's "update" render action (STATE.INSERTED, 200): the formulas are in the page.
  const AFTER_INSERTED = 201;
  const fitted = new WeakSet();

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

  // Fits the typeset formulas of the page (all of them, or those not fitted yet): one layout
  // for all.
  function fit(all) {
    const own = (box) => all || !fitted.has(box);
    const display = Array.from(document.querySelectorAll(DISPLAY)).filter(own);
    const inline = Array.from(document.querySelectorAll(INLINE)).filter(own);
    if (display.length + inline.length === 0) return;
    for (const box of display.concat(inline)) reset(box);
    const sizes = display.map((box) => measure(box, false))
      .concat(inline.map((box) => measure(box, true)));
    for (const { box, available, needed } of sizes) {
      fitted.add(box);
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

  // MathJax's documented hook into its typesetting: a render action, run after each pass that
  // typesets formulas (the first one, and each lazy one). It returns false: later actions run.
  const renderAction = [AFTER_INSERTED, () => { fit(false); return false; }, () => false];
  const config = window.MathJax;
  if (config && !config.version) {
    // MathJax has not started yet: its configuration takes the action.
    config.options = config.options || {};
    config.options.renderActions = Object.assign({}, config.options.renderActions,
      { peFit: renderAction });
  }

  // MathJax, started, with its first formulas typeset.
  function started() {
    return new Promise((resolve) => {
      const wait = () => {
        if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
          resolve(MathJax.startup.promise);
        } else {
          setTimeout(wait, 50);
        }
      };
      wait();
    });
  }

  // The browser's next idle moment, or a second at most: a headless browser with several tabs
  // of the book open has been seen to give one of them no idle moment for minutes.
  const idle = () => new Promise((resolve) => (window.requestIdleCallback
    ? requestIdleCallback(resolve, { timeout: 1000 }) : setTimeout(resolve)));

  async function typesetAll() {
    if (!document.querySelector("div.math, span.math")) return;
    await started();
    const doc = MathJax.startup.document;
    // A batch the lazy typesetter has already picked (it starts when the browser is idle)
    // finishes first; then every formula still waiting is typeset (the method MathJax's lazy
    // extension runs before the browser prints), and fitted by the render action.
    await idle();
    await doc.lazyPromise;
    if (typeof doc.lazyTypesetAll === "function") await doc.lazyTypesetAll();
    // A batch fitted before MathJax's web fonts arrived was measured in a fallback font.
    await document.fonts.ready;
    fit(true);
  }

  // Web fonts that arrive after a fit change the formulas' widths: fit them all again, once a
  // frame however many font files (the Korean font comes in many) finish together.
  let refit = false;
  if (document.fonts) {
    document.fonts.addEventListener("loadingdone", () => {
      if (refit) return;
      refit = true;
      requestAnimationFrame(() => { refit = false; fit(true); });
    });
  }

  window.peMath = { typesetAll };

  // A formula waiting for the lazy typesetter is an empty box, and MathJax has taken its TeX out
  // of the page: a screen reader reading ahead of the screen would find nothing there. Until
  // MathJax typesets it (replacing the box, with its MathML for assistive technology), the box
  // holds the formula's TeX, visually hidden (writes only).
  function describeWaiting() {
    for (const item of MathJax.startup.document.math) {
      const marker = item.lazyTypeset && item.lazyMarker;
      const box = marker && marker.parentNode;
      if (!box || box.querySelector(".pe-math-tex")) continue;
      const text = document.createElement("span");
      // Classes that MathJax's own search for TeX skips (its default, and Sphinx's).
      text.className = "pe-math-tex tex2jax_ignore mathjax_ignore";
      text.textContent = item.math;
      text.style.cssText = "position:absolute;width:1px;height:1px;overflow:hidden;"
        + "clip:rect(0 0 0 0);clip-path:inset(50%);white-space:nowrap";
      box.appendChild(text);
    }
  }

  function start() {
    if (!document.querySelector("div.math, span.math")) return;
    started().then(() => {
      const doc = MathJax.startup.document;
      if (!doc.renderActions.findID || !doc.renderActions.findID("peFit")) {
        // MathJax started before this script ran: the action is added to its document.
        doc.addRenderAction("peFit", ...renderAction);
      }
      fit(false);
      describeWaiting();
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
          fit(true);
        }
      }).observe(article);
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
