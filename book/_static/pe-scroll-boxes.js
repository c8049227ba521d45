// Code, printed output and tables keep their lines: a line wider than the column (on a phone,
// most of them) scrolls sideways inside its box, so a printed table keeps its columns and a line
// of code its indentation (small-screens.css). Each box that scrolls can be reached with the
// keyboard and says what it is: tabindex 0, the region role and a label, as pe-math.js does for
// formulas; a box that fits has none of them (a table box keeps the label its page gave it).
// A box that scrolls shows where more lies: the class pe-more-right while it has more to its
// right, pe-more-left to its left, whose edges page.css fades out; both go as the reader
// scrolls to that end. A box is measured again whenever its size changes (a folded cell opened,
// the window turned).
//
// In a table, a name in the first column is kept on one line at its hyphens (DeepSeek-V3 broke
// after "DeepSeek-"): each hyphenated word is wrapped in a span.pe-nobreak.
(function () {
  "use strict";
  const CODE = "article div.highlight > pre";
  const TABLES = "article .pe-table-box, article .pst-scrollable-table-container, "
    + "article div.cell_output div.text_html:has(> table)";
  const KOREAN = (document.documentElement.lang || "").startsWith("ko");
  const LABELS = KOREAN
    ? { code: "코드", output: "출력", table: "표", wider: "화면보다 넓습니다. 옆으로 스크롤해 끝까지 읽으세요" }
    : { code: "Code", output: "Output", table: "Table",
        wider: "wider than the column: scroll sideways to read it whole" };

  function label(box) {
    if (box.matches(TABLES)) return `${LABELS.table}, ${LABELS.wider}`;
    const kind = box.closest(".cell_output") ? LABELS.output : LABELS.code;
    return `${kind}, ${LABELS.wider}`;
  }

  // Whether a box scrolls, and whether it has more to its left and its right (reads only).
  function measured(box) {
    const scrolling = box.clientWidth > 0 && box.scrollWidth > box.clientWidth + 1;
    const left = Math.abs(box.scrollLeft);
    return {
      scrolling,
      left: scrolling && left > 1,
      right: scrolling && left + box.clientWidth < box.scrollWidth - 1,
    };
  }

  // Shows where a box has more (writes only).
  function edges(box, { left, right }) {
    box.classList.toggle("pe-more-left", left);
    box.classList.toggle("pe-more-right", right);
  }

  // Marks a box as one that scrolls, or not (writes only).
  function mark(box, state) {
    edges(box, state);
    if (state.scrolling) {
      box.setAttribute("tabindex", "0");
      box.setAttribute("role", "region");
      if (!box.hasAttribute("aria-label")) box.setAttribute("aria-label", label(box));
      box.classList.add("pe-scrolls");
    } else if (box.classList.contains("pe-scrolls")) {
      box.classList.remove("pe-scrolls");
      if (!box.matches(TABLES)) {
        for (const name of ["role", "aria-label"]) box.removeAttribute(name);
        box.setAttribute("tabindex", "-1");
      }
    }
  }

  // Every box measured, then every box marked: one layout, which the browser has just made
  // when the observer reports.
  function measure(boxes) {
    const found = boxes.map((box) => [box, measured(box)]);
    for (const [box, state] of found) mark(box, state);
  }

  // The hyphenated words of the first column's cells, each kept on one line.
  function keepNamesWhole(table) {
    for (const cell of table.querySelectorAll("tr > :first-child")) {
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      const texts = [];
      while (walker.nextNode()) texts.push(walker.currentNode);
      for (const text of texts) {
        if (text.parentElement.closest(".pe-nobreak, code, .math")) continue;
        const parts = text.data.split(/(\S*\S-\S\S*)/);
        if (parts.length === 1) continue;
        text.replaceWith(...parts.map((part, i) => {
          if (i % 2 === 0) return part;
          const span = document.createElement("span");
          span.className = "pe-nobreak";
          span.textContent = part;
          return span;
        }));
      }
    }
  }

  function start() {
    const boxes = Array.from(document.querySelectorAll(`${CODE}, ${TABLES}`));
    document.querySelectorAll(TABLES).forEach(keepNamesWhole);
    // The observer reports every box once when the page is first laid out, before it is drawn,
    // then each box whose size changes (a folded cell opened, the window turned).
    const observer = new ResizeObserver((entries) => measure(entries.map((entry) => entry.target)));
    for (const box of boxes) {
      observer.observe(box);
      box.addEventListener("scroll", () => edges(box, measured(box)), { passive: true });
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
