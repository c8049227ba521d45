// The header buttons' tooltips (the theme's Bootstrap tooltips: "Search", "Toggle secondary
// sidebar", ...) go when the reader presses Esc, as content shown on hover or focus must
// (WCAG 2.1, 1.4.13), and do not come back when that Esc closes a dialog and the focus returns to
// the button that opened it: the search dialog closed left its button's tooltip standing over the
// header's other buttons until the reader clicked elsewhere.
(function () {
  "use strict";
  // How long after an Esc a tooltip is not shown (ms): the dialog's close returns the focus.
  const QUIET_MS = 1000;
  let escaped = -Infinity;

  function hideAll() {
    const tooltips = window.bootstrap && window.bootstrap.Tooltip;
    for (const trigger of document.querySelectorAll('[data-bs-toggle="tooltip"]')) {
      const tooltip = tooltips && tooltips.getInstance(trigger);
      if (tooltip) tooltip.hide();
    }
  }

  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    escaped = performance.now();
    hideAll();
  }, true);
  // Bootstrap asks before it shows a tooltip (show.bs.tooltip, cancelable).
  document.addEventListener("show.bs.tooltip", (event) => {
    if (performance.now() - escaped < QUIET_MS) event.preventDefault();
  }, true);
})();
