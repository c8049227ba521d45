// ipywidgets' HTML manager (jupyter-widgets/embed.js) typesets widget labels with the MathJax 2
// call `MathJax.Hub.Queue(["Typeset", MathJax.Hub, element])`. The book loads MathJax 3, which has
// no `Hub`, so that call would throw while the widgets render. This file is loaded just before
// embed.js on pages with widgets; its `load` listener runs before the manager's and routes the
// MathJax 2 call to MathJax 3's `typesetPromise`.
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
