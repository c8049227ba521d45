// Draws the book's explorable figures (pe_lib.charts) in the browser, with no kernel.
// A figure is a <div class="pe-chart"> followed by its Vega-Lite specification in a
// <script type="application/json">. On a page that has any, this loads Vega, Vega-Lite and
// vega-embed from the book's own _static/vega/ (fetched by tools/fetch_vega.py), one after the
// other, and embeds every figure as SVG. Each figure element keeps its Vega view as
// `element.peView`, and gets data-pe-chart-state="drawn" (or "failed") when done.
//
// Around each figure it also
// - follows the page's light or dark theme (background, text and axis colours), redrawing when
//   the reader switches;
// - redraws to the width of its box whenever the box changes size (window resized, sidebar
//   toggled), for charts whose specification asks for the container's width;
// - keeps its controls from submitting anything (Enter in a text box does nothing but update the
//   chart) and reports, in words below the controls, what in a text box it could not use
//   (the rules come from the specification's usermeta.inputs);
// - gives the chart a text alternative: the description pe_lib wrote into the specification
//   (usermeta.description), followed by the current value of every control.
// It also makes every matplotlib figure of the page open at full size on a tap.
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

  // The theme's colours, read from its CSS variables, as a Vega-Lite config.
  function themeConfig() {
    const style = getComputedStyle(document.documentElement);
    const colour = (name, fallback) => style.getPropertyValue(name).trim() || fallback;
    const background = colour("--pst-color-background", "#ffffff");
    const text = colour("--pst-color-text-base", "#222832");
    const muted = colour("--pst-color-text-muted", "#5f6366");
    const grid = colour("--pst-color-border", "#d1d5da");
    return {
      background: background,
      title: { color: text },
      axis: {
        labelColor: text,
        titleColor: text,
        gridColor: grid,
        domainColor: muted,
        tickColor: muted,
      },
      legend: { labelColor: text, titleColor: text },
      text: { color: text },
      view: { stroke: grid },
    };
  }

  function merge(target, source) {
    for (const [key, value] of Object.entries(source)) {
      if (value && typeof value === "object" && !Array.isArray(value)) {
        target[key] = merge(target[key] && typeof target[key] === "object" ? target[key] : {},
          value);
      } else {
        target[key] = value;
      }
    }
    return target;
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
    const themed = merge(JSON.parse(JSON.stringify(spec)), { config: themeConfig() });
    if (figure.peView) figure.peView.finalize();
    figure.textContent = "";
    const result = await window.vegaEmbed(figure, themed, { renderer: "svg", actions: false });
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
      const spec = JSON.parse(figure.nextElementSibling.textContent);
      guard(figure);
      try {
        await embed(figure, spec);
        figure.dataset.peChartState = "drawn";
      } catch (error) {
        figure.dataset.peChartState = "failed";
        console.error("pe-charts:", error);
        continue;
      }
      if (spec.width === "container" || (spec.spec && spec.spec.width === "container")) {
        let width = figure.clientWidth;
        new ResizeObserver(() => {
          if (figure.clientWidth === width || !figure.peView) return;
          width = figure.clientWidth;
          figure.peView.width(width).runAsync();
        }).observe(figure);
      }
    }
    // The reader switched between light and dark: redraw in the new colours, same settings.
    new MutationObserver(async () => {
      for (const figure of figures) {
        if (figure.dataset.peChartState !== "drawn") continue;
        const spec = JSON.parse(figure.nextElementSibling.textContent);
        await embed(figure, spec, currentValues(figure));
      }
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
