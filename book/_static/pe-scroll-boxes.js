// Code and printed output keep their lines: a line wider than the column (on a phone, most of
// them) scrolls sideways inside its box, so a printed table keeps its columns and a line of code
// its indentation (small-screens.css). Each box that scrolls can be reached with the keyboard and
// says what it is: tabindex 0, the region role and a label, as pe-math.js does for formulas; a box
// that fits has none of them. A box is measured again whenever its size changes (a folded cell
// opened, the window turned).
(function () {
  "use strict";
  const BOXES = "article div.highlight > pre";
  const KOREAN = (document.documentElement.lang || "").startsWith("ko");
  const LABELS = KOREAN
    ? { code: "코드", output: "출력", wider: "화면보다 넓습니다. 옆으로 스크롤해 끝까지 읽으세요" }
    : { code: "Code", output: "Output", wider: "wider than the column: scroll sideways to read it whole" };

  function label(box) {
    const kind = box.closest(".cell_output") ? LABELS.output : LABELS.code;
    return `${kind}, ${LABELS.wider}`;
  }

  // Whether a box scrolls (reads only).
  function scrolls(box) {
    return box.clientWidth > 0 && box.scrollWidth > box.clientWidth + 1;
  }

  // Marks a box as one that scrolls, or not (writes only).
  function mark(box, scrolling) {
    if (scrolling) {
      box.setAttribute("tabindex", "0");
      box.setAttribute("role", "region");
      box.setAttribute("aria-label", label(box));
      box.classList.add("pe-scrolls");
    } else if (box.classList.contains("pe-scrolls")) {
      box.classList.remove("pe-scrolls");
      for (const name of ["role", "aria-label"]) box.removeAttribute(name);
      box.setAttribute("tabindex", "-1");
    }
  }

  // Every box measured, then every box marked: one layout, which the browser has just made
  // when the observer reports.
  function measure(boxes) {
    const found = boxes.map((box) => [box, scrolls(box)]);
    for (const [box, scrolling] of found) mark(box, scrolling);
  }

  function start() {
    // The observer reports every box once when the page is first laid out, before it is drawn,
    // then each box whose size changes (a folded cell opened, the window turned).
    const observer = new ResizeObserver((entries) => measure(entries.map((entry) => entry.target)));
    document.querySelectorAll(BOXES).forEach((box) => observer.observe(box));
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
