// ipywidgets' HTML manager (jupyter-widgets/embed.js) typesets widget labels with the MathJax 2
// call `MathJax.Hub.Queue(["Typeset", MathJax.Hub, element])` when a MathJax is loaded. The
// book's pages load none (their formulas are typeset when the book is built), so a saved widget's
// label shows its TeX as written; a MathJax 3 that a page running a kernel brings has no `Hub`,
// and the call would throw. This file is loaded just before embed.js on pages with widgets; its
// `load` listener runs before the manager's and, when a MathJax 3 is there, routes the MathJax 2
// call to its `typesetPromise`.
window.addEventListener("load", () => {
  const mathjax = window.MathJax;
  if (!mathjax || mathjax.Hub || !mathjax.startup) {
    return;
  }
  mathjax.Hub = {
    Queue: (command) => {
      const element = Array.isArray(command) ? command[2] : undefined;
      mathjax.startup.promise.then(() => mathjax.typesetPromise(element ? [element] : undefined));
    },
  };
});
