// Display equations wider than the text column: scaled down to fit, to no less than 70 % of
// their size; one that is still too wide scrolls inside its box, marked with the class
// pe-math-scrolls (a visible scrollbar and a shadow at the edge, page.css). Runs after MathJax
// has typeset the page, and again when the column changes width.
(function () {
  "use strict";
  const SMALLEST = 0.7;

  function fit() {
    for (const box of document.querySelectorAll('article mjx-container[display="true"]')) {
      // MathJax writes its own scale (a percentage) on the container: scale relative to it.
      if (box.dataset.peFontSize === undefined) box.dataset.peFontSize = box.style.fontSize;
      const own = parseFloat(box.dataset.peFontSize) || 100;
      box.style.fontSize = box.dataset.peFontSize;
      box.classList.remove("pe-math-scrolls");
      const available = box.clientWidth;
      const needed = box.scrollWidth;
      if (available === 0 || needed <= available + 1) continue;
      const scale = Math.max(SMALLEST, Math.floor((available / needed) * 100) / 100);
      box.style.fontSize = `${(own * scale).toFixed(1)}%`;
      if (box.scrollWidth > box.clientWidth + 1) box.classList.add("pe-math-scrolls");
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
        let width = 0;
        const article = document.querySelector("article") || document.body;
        new ResizeObserver(() => {
          if (article.clientWidth !== width) {
            width = article.clientWidth;
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
