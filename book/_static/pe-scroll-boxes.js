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

  function measure(box) {
    const scrolls = box.clientWidth > 0 && box.scrollWidth > box.clientWidth + 1;
    if (scrolls) {
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

  function start() {
    const boxes = document.querySelectorAll(BOXES);
    const observer = new ResizeObserver((entries) => entries.forEach((entry) => measure(entry.target)));
    boxes.forEach((box) => {
      measure(box);
      observer.observe(box);
    });
    // A folded cell (a closed <details>) lays its boxes out when it is opened: measure them then.
    document.querySelectorAll("article details").forEach((details) =>
      details.addEventListener("toggle", () =>
        details.querySelectorAll("div.highlight > pre").forEach((box) => box.matches(BOXES) && measure(box))
      )
    );
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
