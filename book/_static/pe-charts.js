// Draws the book's explorable figures (pe_lib.viz.charts) in the browser, with no kernel.
// A figure is a <div class="pe-chart"> followed by its Vega-Lite specification in a
// <script type="application/json" class="pe-chart-spec">; the build compiled that to Vega
// (book/_ext/vega_charts.py) and wrote it just before the figure, in a
// <script type="application/json" class="pe-chart-vega">. On a page that has any figure, this
// draws each figure as SVG when it nears the screen (an IntersectionObserver), the first one
// loading Vega and vega-embed from the book's own _static/vega/ (fetched by tools/fetch_vega.py),
// so that a phone spends nothing on figures the reader has not come near. Each figure element
// keeps its Vega view as `element.peView`, and gets data-pe-chart-state="drawn" (or "failed")
// when done. peCharts.drawAll() draws every figure not drawn yet and returns a promise (for the
// PDF printer and the browser tests, which need them all).
//
// Around each figure it also
// - follows the page's light or dark theme: the compiled specification names the theme's
//   colours as CSS variables ("var(--pst-color-background, #ffffff)"), replaced here by their
//   values, and again when the reader switches;
// - in the dark theme, draws the data in the palette's dark-page shades: each colour of the
//   specification's usermeta.dark_colors (pe_lib.viz.style.dark_variants, light colour -> its
//   variant) is replaced by its variant, so every line keeps 3:1 contrast with the page;
// - redraws to the width of its box whenever the box changes size (window resized, sidebar
//   toggled), for charts whose specification fits them to their container;
// - keeps its controls from submitting anything (Enter in a text box does nothing but update the
//   chart) and reports, in words below the controls, what in a text box it could not use
//   (the rules come from the specification's usermeta.inputs);
// - gives the chart a text alternative: the description pe_lib wrote into the specification
//   (usermeta.description), followed by the current value of every control.
// It also makes every matplotlib figure of the page open at full size on a tap.
(function () {
  "use strict";
  const base = new URL("vega/", document.currentScript.src);
  const bundles = ["vega.min.js", "vega-embed.min.js"];

  function load(name) {
    return new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = new URL(name, base).href;
      script.onload = resolve;
      script.onerror = () => reject(new Error("could not load " + script.src));
      document.head.appendChild(script);
    });
  }

  // The Vega specification the build compiled for a figure (the element just before it).
  function compiled(figure) {
    const script = figure.previousElementSibling;
    if (!script || !script.matches("script.pe-chart-vega")) {
      throw new Error("no compiled Vega specification before the figure");
    }
    return JSON.parse(script.textContent);
  }

  // The specification with every "var(--name, fallback)" string replaced by the value the page's
  // theme gives that CSS variable now (or the fallback).
  const CSS_VARIABLE = /^var\((--[\w-]+),\s*([^)]*)\)$/;
  function themed(value, style) {
    if (typeof value === "string") {
      const match = CSS_VARIABLE.exec(value);
      return match ? style.getPropertyValue(match[1]).trim() || match[2].trim() : value;
    }
    if (Array.isArray(value)) return value.map((item) => themed(item, style));
    if (value && typeof value === "object") {
      const result = {};
      for (const [key, item] of Object.entries(value)) result[key] = themed(item, style);
      return result;
    }
    return value;
  }

  // The specification with every colour named in `variants` (lower-case "#rrggbb" -> colour)
  // replaced by its variant.
  function recoloured(value, variants) {
    if (typeof value === "string") {
      const variant = variants[value.toLowerCase()];
      return variant === undefined ? value : variant;
    }
    if (Array.isArray(value)) return value.map((item) => recoloured(item, variants));
    if (value && typeof value === "object") {
      const result = {};
      for (const [key, item] of Object.entries(value)) result[key] = recoloured(item, variants);
      return result;
    }
    return value;
  }

  // A chart fitted to its container's width: Vega-Lite's width "container" compiles to autosize
  // "fit" or "fit-x".
  function fitsContainer(spec) {
    const autosize = spec.autosize && (spec.autosize.type || spec.autosize);
    return autosize === "fit" || autosize === "fit-x";
  }

  function controls(figure) {
    return Array.from(figure.querySelectorAll(".vega-bindings input, .vega-bindings select"));
  }

  // What the reader typed that a text control cannot use, in words ("" when all is well).
  function inputProblems(figure, view, rules) {
    const problems = [];
    for (const [name, rule] of Object.entries(rules || {})) {
      const text = String(view.signal(name));
      const bound = view.signal(rule.below_signal);
      const items = text.split(",").map((item) => item.trim());
      const bad = [];
      const outside = [];
      for (const item of items) {
        if (item === "") continue;
        const number = Number(item);
        if (!Number.isInteger(number)) {
          bad.push(`"${item}"`);
        } else if (number < rule.min || number >= bound) {
          outside.push(item);
        }
      }
      const usable = items.length - bad.length - outside.length - items.filter((i) => !i).length;
      const parts = [];
      if (bad.length) parts.push(`${bad.join(", ")} ${bad.length > 1 ? "are" : "is"} not a whole number`);
      if (outside.length) {
        parts.push(`${outside.join(", ")} ${outside.length > 1 ? "are" : "is"} outside ` +
          `${rule.min} to ${bound - 1}`);
      }
      if (parts.length) {
        problems.push(`${rule.label}: ${parts.join("; ")}` +
          (usable > 0 ? " (left out)." : `; nothing to draw. ${rule.hint}`));
      } else if (usable === 0) {
        problems.push(`${rule.label}: empty; nothing to draw. ${rule.hint}`);
      }
    }
    return problems.join(" ");
  }

  function describe(figure, view, spec) {
    const meta = spec.usermeta || {};
    const settings = controls(figure).map((input) => {
      const bind = input.closest(".vega-bind");
      const name = bind && bind.querySelector(".vega-bind-name");
      const label = (name ? name.textContent : input.name).trim();
      return `${label} ${view.signal(input.name)}`;
    });
    const text = (meta.description || "") +
      (settings.length ? ` Current settings: ${settings.join(", ")}.` : "");
    figure.setAttribute("role", "figure");
    figure.setAttribute("aria-label", text);
    const svg = figure.querySelector("svg");
    if (svg) {
      svg.setAttribute("aria-label", text);
      svg.setAttribute("role", "img");
    }
  }

  function guard(figure) {
    // Enter in a text box must not submit a form (the page's, or one around the controls).
    figure.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && event.target.matches("input")) {
        event.preventDefault();
        event.target.dispatchEvent(new Event("change", { bubbles: true }));
      }
    });
    figure.addEventListener("submit", (event) => event.preventDefault());
  }

  async function embed(figure, spec, values) {
    figure.peTheme = document.documentElement.dataset.theme;
    let colours = themed(spec, getComputedStyle(document.documentElement));
    const variants = (spec.usermeta || {}).dark_colors;
    if (variants && document.documentElement.dataset.theme === "dark") {
      colours = recoloured(colours, variants);
    }
    if (figure.peView) figure.peView.finalize();
    figure.textContent = "";
    const result = await window.vegaEmbed(figure, colours, { renderer: "svg", actions: false });
    const view = result.view;
    for (const [name, value] of Object.entries(values || {})) view.signal(name, value);
    for (const form of figure.querySelectorAll("form")) {
      form.setAttribute("onsubmit", "return false");
    }
    const bindings = figure.querySelector(".vega-bindings");
    const message = document.createElement("p");
    message.className = "pe-chart-message";
    message.setAttribute("role", "status");
    message.setAttribute("aria-live", "polite");
    if (bindings) bindings.appendChild(message);
    const meta = spec.usermeta || {};
    const update = () => {
      message.textContent = inputProblems(figure, view, meta.inputs);
      describe(figure, view, spec);
    };
    for (const input of controls(figure)) {
      input.addEventListener("input", () => view.runAsync().then(update));
      input.addEventListener("change", () => view.runAsync().then(update));
    }
    await view.runAsync();
    update();
    figure.peView = view;
    return view;
  }

  function currentValues(figure) {
    const values = {};
    if (!figure.peView) return values;
    for (const input of controls(figure)) values[input.name] = figure.peView.signal(input.name);
    return values;
  }

  // The figures, each drawn once as it nears the screen (NEAR: about a phone's screen ahead,
  // above and below), one after the other; Vega and vega-embed load when the first one does.
  const NEAR = "800px 0px";
  const figures = [];
  let bundlesLoaded = null;
  let queue = Promise.resolve();

  function loadBundles() {
    if (bundlesLoaded === null) {
      bundlesLoaded = (async () => {
        // The bundles are UMD: with an AMD loader on the page (require.js) they would register
        // as anonymous modules instead of globals, so hide it while they load.
        const amd = window.define;
        window.define = undefined;
        try {
          for (const name of bundles) {
            await load(name);
          }
        } finally {
          window.define = amd;
        }
      })();
    }
    return bundlesLoaded;
  }

  // Draws a figure (once: later calls return the same promise), in the page's current theme.
  function drawFigure(figure) {
    if (!figure.peDrawn) {
      figure.peDrawn = queue = queue.then(async () => {
        let spec;
        try {
          await loadBundles();
          spec = compiled(figure);
          await embed(figure, spec);
          // The reader switched theme while it was drawn: again, in the new colours.
          while (figure.peTheme !== document.documentElement.dataset.theme) {
            await embed(figure, spec, currentValues(figure));
          }
          figure.dataset.peChartState = "drawn";
        } catch (error) {
          figure.dataset.peChartState = "failed";
          console.error("pe-charts:", error);
          return;
        }
        if (fitsContainer(spec)) {
          let width = figure.clientWidth;
          new ResizeObserver(() => {
            if (figure.clientWidth === width || !figure.peView) return;
            width = figure.clientWidth;
            figure.peView.width(width).runAsync();
          }).observe(figure);
        }
      });
    }
    return figure.peDrawn;
  }

  // Draws every figure of the page not drawn yet, for what needs them all at once (the PDF
  // printer, the browser tests, the browser's own printing); resolves when all are drawn (or
  // failed: data-pe-chart-state says which).
  function drawAll() {
    return Promise.all(figures.map(drawFigure)).then(() => undefined);
  }

  window.peCharts = { drawAll };

  function draw() {
    figures.push(...document.querySelectorAll("div.pe-chart"));
    if (figures.length === 0) {
      return;
    }
    for (const figure of figures) guard(figure);
    if ("IntersectionObserver" in window) {
      const near = new IntersectionObserver((entries) => {
        for (const entry of entries) {
          if (!entry.isIntersecting) continue;
          near.unobserve(entry.target);
          drawFigure(entry.target);
        }
      }, { rootMargin: NEAR });
      for (const figure of figures) near.observe(figure);
    } else {
      drawAll();
    }
    // Printing from the browser: every figure, as far as there is time before the print.
    window.addEventListener("beforeprint", drawAll);
    // The reader switched between light and dark: redraw in the new colours, same settings
    // (a figure not drawn yet takes the theme it finds when it is).
    new MutationObserver(() => {
      queue = queue.then(async () => {
        for (const figure of figures) {
          if (figure.dataset.peChartState !== "drawn") continue;
          try {
            await embed(figure, compiled(figure), currentValues(figure));
          } catch (error) {
            console.error("pe-charts:", error);
          }
        }
      });
    }).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
  }

  // Matplotlib figures: a tap or click opens the image at full size (on a phone the column
  // shows it at about half its size).
  function linkImages() {
    for (const img of document.querySelectorAll("article .cell_output img")) {
      if (img.closest("a")) continue;
      const link = document.createElement("a");
      link.href = img.getAttribute("src");
      link.className = "pe-figure-link";
      link.setAttribute("aria-label", "open the figure at full size");
      img.replaceWith(link);
      link.appendChild(img);
    }
  }

  function start() {
    linkImages();
    draw();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
