// The search page's snippets: for each result, the words around the first place the page's
// article says what was searched for, with its math as plain text.
//
// Sphinx's own snippets are turned off (html_show_search_summary = False in _config.yml): Sphinx
// looks for the stemmed word ("rotari" for "rotary"), and where that is not in the text it quotes
// the page from its start, the article's header (the language switch, the download buttons); and
// it quotes math as its TeX source (\(\theta_i\)). This reads the results Sphinx lists
// (ul.search li, each with a link to its page) and adds the snippet (p.context) itself.
(function () {
  "use strict";
  const CONTEXT = 120; // characters before the match; twice that in all
  const words = (new URLSearchParams(location.search).get("q") || "")
    .toLowerCase()
    .split(/\s+/)
    .filter((word) => word.length > 0);

  // TeX as text: \(m\,\theta_i\) -> "m theta_i", \(\mathbb{R}^d\) -> "R^d".
  function plainMath(tex) {
    return tex
      .replace(/\\[()[\]]/g, " ") // the delimiters, wherever they stand (after an equation number too)
      .replace(/\\(?:text|mathrm|mathit|mathbf|mathbb|mathcal|operatorname)\{([^{}]*)\}/g, "$1")
      .replace(/\\[,;:!]/g, " ")
      .replace(/\\([A-Za-z]+)/g, " $1")
      .replace(/[{}]/g, "")
      .replace(/\s+/g, " ")
      .trim();
  }

  function articleText(html, anchor) {
    const page = new DOMParser().parseFromString(html, "text/html");
    const article = page.querySelector("article") || page.body;
    const root = (anchor && article.querySelector(`[id="${CSS.escape(anchor)}"]`)) || article;
    for (const element of root.querySelectorAll("script, style, nav, .headerlink, .toctree-wrapper")) {
      element.remove();
    }
    for (const math of root.querySelectorAll(".math")) {
      math.textContent = " " + plainMath(math.textContent) + " ";
    }
    return root.textContent.replace(/\s+/g, " ").trim();
  }

  // Where a searched word starts in the text: the whole word, else its longest beginning of at
  // least two characters (what a stemmer keeps of it: "rotar" of "rotary", "파장" of "파장을").
  function firstMatch(text) {
    const lower = text.toLowerCase();
    const longest = Math.max(0, ...words.map((word) => word.length));
    for (let length = longest; length >= 2; length--) {
      for (const word of words) {
        if (word.length < length) continue;
        const at = lower.indexOf(word.slice(0, length));
        if (at >= 0) return at;
      }
    }
    return -1;
  }

  function snippet(text) {
    const at = firstMatch(text);
    const start = Math.max(0, at - CONTEXT);
    const end = Math.min(text.length, start + 2 * CONTEXT);
    return (start > 0 ? "…" : "") + text.slice(start, end).trim() + (end < text.length ? "…" : "");
  }

  async function addSnippet(item) {
    // An object of the API page is listed with its kind ("Python class, in ..."), no snippet.
    const link = item.querySelector(":scope > a[href]");
    if (!link || item.dataset.peSnippet || item.querySelector(":scope > span")) return;
    item.dataset.peSnippet = "pending";
    const url = new URL(link.href, location.href);
    const response = await fetch(url.pathname);
    if (!response.ok) return;
    const text = articleText(await response.text(), decodeURIComponent(url.hash.slice(1)));
    if (!text) return;
    const paragraph = document.createElement("p");
    paragraph.className = "context";
    paragraph.textContent = snippet(text);
    item.append(paragraph);
    item.dataset.peSnippet = "done";
  }

  function start() {
    const results = document.getElementById("search-results");
    if (!results || words.length === 0) return;
    const scan = () => results.querySelectorAll("ul.search > li").forEach(addSnippet);
    new MutationObserver(scan).observe(results, { childList: true, subtree: true });
    scan();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
