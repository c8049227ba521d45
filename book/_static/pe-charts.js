// Draws the book's explorable figures (pe_lib.charts) in the browser, with no kernel.
// A figure is a <div class="pe-chart"> followed by its Vega-Lite specification in a
// <script type="application/json">. On a page that has any, this loads Vega, Vega-Lite and
// vega-embed from the book's own _static/vega/ (fetched by tools/fetch_vega.py), one after the
// other, and embeds every figure as SVG. Each figure element keeps its Vega view as
// `element.peView`, and gets data-pe-chart-state="drawn" (or "failed") when done.
(function () {
  "use strict";
  const base = new URL("vega/", document.currentScript.src);
  const bundles = ["vega.min.js", "vega-lite.min.js", "vega-embed.min.js"];

  function load(name) {
    return new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = new URL(name, base).href;
      script.onload = resolve;
      script.onerror = () => reject(new Error("could not load " + script.src));
      document.head.appendChild(script);
    });
  }

  async function draw() {
    const figures = Array.from(document.querySelectorAll("div.pe-chart"));
    if (figures.length === 0) {
      return;
    }
    // The bundles are UMD: with an AMD loader on the page (require.js) they would register as
    // anonymous modules instead of globals, so hide it while they load.
    const amd = window.define;
    window.define = undefined;
    try {
      for (const name of bundles) {
        await load(name);
      }
    } finally {
      window.define = amd;
    }
    for (const figure of figures) {
      try {
        const spec = JSON.parse(figure.nextElementSibling.textContent);
        const result = await window.vegaEmbed(figure, spec, { renderer: "svg", actions: false });
        figure.peView = result.view;
        figure.dataset.peChartState = "drawn";
      } catch (error) {
        figure.dataset.peChartState = "failed";
        console.error("pe-charts:", error);
      }
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
})();
