// The search page's snippets: for each result, the sentence in which its page (or the section,
// or the API entry, it links to) uses the searched word, with the word highlighted and any
// formula in it as text (θ_i, M_k^⊤, 2π/ω_i), never as TeX.
//
// Sphinx's own snippets are turned off (html_show_search_summary = False in _config.yml): Sphinx
// looks for the stemmed word ("rotari" for "rotary"), and where that is not in the text it quotes
// the page from its start, the article's header (the language switch, the download buttons); it
// quotes math as its TeX source (\(\theta_i\)), and gives an API entry no snippet. This reads the
// results Sphinx lists (ul.search li, each with a link) and adds the snippet (p.context) itself,
// from the small text file the build wrote for each page (book/_ext/search_text.py), not from
// the page itself (fetching every result's page cost 4.3 MB for "rotary").
//
// The word is looked for as Sphinx found it: a word of the text whose stem (Sphinx's Stemmer, from
// the edition's language_data.js) is the searched word's, or that holds the searched word
// (RotaryEmbedding for "rotary"). It is looked for in the prose first (paragraphs, list items,
// headings, table cells, an API entry's description), in code only where the prose lacks it.
(function () {
  "use strict";
  const WIDTH = 240; // the most characters a snippet shows
  // Words after which a full stop ends no sentence.
  const NO_END = new Set(["e.g", "i.e", "al", "etc", "fig", "eq", "vs", "cf", "sec", "no"]);

  const GREEK = {
    alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", varepsilon: "ε", zeta: "ζ",
    eta: "η", theta: "θ", vartheta: "θ", iota: "ι", kappa: "κ", lambda: "λ", mu: "μ", nu: "ν",
    xi: "ξ", pi: "π", rho: "ρ", sigma: "σ", tau: "τ", upsilon: "υ", phi: "φ", varphi: "φ",
    chi: "χ", psi: "ψ", omega: "ω", Gamma: "Γ", Delta: "Δ", Theta: "Θ", Lambda: "Λ", Xi: "Ξ",
    Pi: "Π", Sigma: "Σ", Phi: "Φ", Psi: "Ψ", Omega: "Ω",
  };
  const SYMBOLS = Object.assign({}, GREEK, {
    cdot: "·", times: "×", top: "⊤", intercal: "⊤", le: "≤", leq: "≤", ge: "≥", geq: "≥",
    ne: "≠", neq: "≠", approx: "≈", sim: "~", simeq: "≃", to: "→", rightarrow: "→",
    mapsto: "↦", infty: "∞", in: "∈", sum: "Σ", prod: "Π", ldots: "…", dots: "…", cdots: "…",
    pm: "±", lfloor: "⌊", rfloor: "⌋", lceil: "⌈", rceil: "⌉", langle: "⟨", rangle: "⟩",
    partial: "∂", nabla: "∇", odot: "⊙", otimes: "⊗", prime: "′", circ: "∘", equiv: "≡",
    propto: "∝", ll: "≪", gg: "≫", lvert: "|", rvert: "|", mid: "|", vert: "|", Vert: "‖",
    ell: "ℓ", quad: " ", qquad: " ", left: "", right: "", big: "", Big: "", bigl: "", bigr: "",
    displaystyle: "", limits: "", nolimits: "",
  });
  const BLACKBOARD = { R: "ℝ", N: "ℕ", Z: "ℤ", C: "ℂ", Q: "ℚ" };

  // A group as text: in brackets unless it is one word or number.
  const group = (text) => (/^[\p{L}\p{N}.′⊤]+$/u.test(text.trim()) ? text.trim() : `(${text.trim()})`);

  // TeX as text: \(m\,\theta_i\) -> "m θ_i", \frac{2\pi}{\omega_i} -> "2π/ω_i".
  function plainMath(tex) {
    let text = tex
      .replace(/\\[()[\]]/g, " ") // the delimiters, wherever they stand
      .replace(/\\(?:begin|end)\{[^{}]*\}(?:\{[^{}]*\})?/g, " ")
      .replace(/\\\\/g, "; ")
      .replace(/&/g, " ")
      .replace(/\\[,;:! ]/g, " ")
      .replace(/\\([{}|%$#_])/g, "$1")
      .replace(/~/g, " ");
    for (let before = ""; before !== text; ) {
      before = text;
      text = text
        .replace(/\\mathbb\{([A-Z])\}/g, (_, letter) => BLACKBOARD[letter] || letter)
        .replace(/\\(?:text[a-z]*|math[a-z]*|boldsymbol|operatorname\*?|hat|bar|tilde|vec|overline|underline|widehat|widetilde)\{([^{}]*)\}/g, "$1")
        .replace(/\\[dt]?frac\{([^{}]*)\}\{([^{}]*)\}/g, (_, a, b) => `${group(a)}/${group(b)}`)
        .replace(/\\sqrt\{([^{}]*)\}/g, (_, a) => `√${group(a)}`)
        .replace(/([_^])\{([^{}]*)\}/g, (_, mark, a) => mark + group(a))
        .replace(/\{([^{}]*)\}/g, "$1");
    }
    return text
      .replace(/\\([A-Za-z]+)/g, (_, name) => (name in SYMBOLS ? SYMBOLS[name] : name))
      .replace(/[{}]/g, "")
      .replace(/\s+/g, " ")
      .replace(/\s*([_^])\s*/g, "$1")
      .trim();
  }

  // Each result's page as the snippets read it: the text file the build wrote for it
  // (book/_ext/search_text.py), fetched once, its math turned into text. Its blocks, in document
  // order: [kind, text] with kind "p" (prose), "t" (an API entry's signature, with the blocks of
  // its description) or "c" (code); its ids, each with the blocks of the element that holds it.
  const root = new URL(document.documentElement.dataset.content_root || "./", location.href);
  const suffix = (window.DOCUMENTATION_OPTIONS || {}).FILE_SUFFIX || ".html";
  const MATH = /\x01([^\x02]*)\x02/g;
  const pages = new Map();
  // At most FETCHES text files are read at once, in the order their results are listed, so that
  // on a slow connection the snippets of the results on the screen come first rather than
  // sharing it with every other result's.
  const FETCHES = 3;
  const queue = [];
  let reading = 0;
  function inTurn(read) {
    return new Promise((resolve) => {
      const go = () => {
        reading += 1;
        read().catch(() => null).then((value) => {
          reading -= 1;
          if (queue.length > 0) queue.shift()();
          resolve(value);
        });
      };
      if (reading < FETCHES) go();
      else queue.push(go);
    });
  }

  function page(url) {
    let docname = url.pathname.startsWith(root.pathname)
      ? decodeURIComponent(url.pathname.slice(root.pathname.length)) : null;
    if (docname === null || !docname.endsWith(suffix)) return Promise.resolve(null);
    docname = docname.slice(0, -suffix.length);
    if (!pages.has(docname)) {
      const file = new URL(`_static/search-text/${docname}.json`, root);
      const read = () => fetch(file).then((response) => (response.ok ? response.json() : null));
      pages.set(docname, inTurn(read).then((text) => {
        if (!text) return null;
        for (const block of text.blocks) {
          block[1] = block[1].replace(MATH, (_, tex) => plainMath(tex));
          if (block[0] !== "c") block[1] = block[1].replace(/\s+/g, " ").trim();
        }
        return text;
      }).catch(() => null));
    }
    return pages.get(docname);
  }

  // The words searched for: as typed, and stemmed as Sphinx stems them.
  function searched() {
    const query = (new URLSearchParams(location.search).get("q") || "").toLowerCase();
    const split = typeof splitQuery === "function" ? splitQuery : (q) => q.split(/\s+/);
    const stemmer = typeof Stemmer === "function" ? new Stemmer() : { stemWord: (w) => w };
    const translated = window.peSearchTranslations || {};
    return split(query).filter((word) => word.length > 0).map((word) => {
      const stem = stemmer.stemWord(word);
      return { word, stem, symbol: GREEK[word] || null, stemmer, translations: translated[stem] || [] };
    });
  }

  // Where the text uses a searched word: {span: [start, end), level} of the first word of the
  // text that is one (its stem or itself: level 0), else of the first that holds one (level 1),
  // else of the first that translates it (level 2: in the Korean edition, 파장 for "wavelength",
  // from the book's glossary); null where none.
  function findWord(text, words) {
    let holding = null;
    let translating = null;
    for (const match of text.matchAll(/[\p{L}\p{N}_]+/gu)) {
      const token = match[0].toLowerCase();
      const span = [match.index, match.index + match[0].length];
      for (const { word, stem, symbol, stemmer, translations } of words) {
        if (token === word || stemmer.stemWord(token) === stem) return { span, level: 0 };
        if (symbol && token.split(/[_^]/)[0] === symbol) return { span, level: 0 };
        if (holding === null && word.length > 2 && token.includes(word)) holding = span;
        if (translating === null && translations.includes(stemmer.stemWord(token))) {
          translating = span;
        }
      }
    }
    if (holding) return { span: holding, level: 1 };
    return translating ? { span: translating, level: 2 } : null;
  }

  // The sentence of ``text`` around [start, end), at most WIDTH characters.
  function sentence(text, start, end) {
    const ends = [];
    for (const match of text.matchAll(/[.!?。](?=\s+|$)/g)) {
      const before = text.slice(0, match.index).match(/([\p{L}.]+)$/u);
      if (before && NO_END.has(before[1].toLowerCase())) continue;
      // A section's number (15. or 7.2. before a title) ends no sentence.
      if (/^[\d.]+$/.test(text.slice(0, match.index + 1))) continue;
      ends.push(match.index + 1);
    }
    let from = 0;
    let to = text.length;
    for (const at of ends) {
      if (at <= start) from = at;
      else if (at >= end) { to = at; break; }
    }
    let lead = "";
    let tail = "";
    if (to - from > WIDTH) {
      const middle = Math.floor((start + end) / 2);
      let cutFrom = Math.max(from, Math.min(middle - WIDTH / 2, to - WIDTH));
      let cutTo = cutFrom + WIDTH;
      if (cutFrom > from) {
        const space = text.indexOf(" ", cutFrom);
        if (space >= 0 && space < start) cutFrom = space + 1;
        lead = "…";
      }
      if (cutTo < to) {
        const space = text.lastIndexOf(" ", cutTo);
        if (space >= end) cutTo = space;
        tail = "…";
      }
      from = cutFrom;
      to = cutTo;
    }
    const raw = text.slice(from, to);
    const shown = raw.trimStart();
    return { lead, tail, text: shown.trimEnd(), at: start - from - (raw.length - shown.length),
             length: end - start };
  }

  // The blocks of the part of a page a result links to: the API entry (its signature and
  // description), the section, or the whole article.
  function target(text, anchor) {
    const span = anchor && text.ids[anchor];
    return span ? text.blocks.slice(span[0], span[1]) : text.blocks;
  }

  // The snippet of a result: its sentence with the word, from the prose first (where it uses the
  // word itself, else where it translates it), then from a line of code.
  function snippetOf(text, blocks, words) {
    const prose = blocks.filter((block) => block[0] !== "c");
    const code = blocks.filter((block) => block[0] === "c").flatMap((block) =>
      block[1].split("\n").map((line) => ["c", line.trim()]));
    let best = null;
    for (const block of prose) {
      const found = findWord(block[1], words);
      if (found && (best === null || found.level < best.level)) best = { block, ...found };
      if (best && best.level === 0) break;
    }
    for (const block of best ? [] : code) {
      const found = findWord(block[1], words);
      if (found) { best = { block, ...found }; break; }
    }
    if (best) {
      const { block, span } = best;
      const found = sentence(block[1], span[0], span[1]);
      // An API entry named with the word: its signature, then what its description says first.
      if (block[0] === "t" && block[2]) {
        const said = text.blocks.slice(block[2][0], block[2][1])
          .filter((part) => part[0] !== "c").map((part) => part[1]).join(" ").trim();
        if (said) {
          const first = sentence(said, 0, 0);
          found.tail = (found.tail || "") + " — " + first.text + first.tail;
        }
      }
      return found;
    }
    // The page matched on a word it uses nowhere in its text (a title, an index entry): its
    // first sentence.
    const first = prose.map((block) => block[1]).find((line) => line.length > 0);
    return first ? sentence(first, 0, 0) : null;
  }

  async function addSnippet(item, words) {
    if (item.dataset.peSnippet) return;
    const link = item.querySelector(":scope > a[href]");
    if (!link) {
      item.dataset.peSnippet = "done";
      return;
    }
    item.dataset.peSnippet = "pending";
    try {
      await writeSnippet(item, link, words);
    } finally {
      item.dataset.peSnippet = "done";
    }
  }

  async function writeSnippet(item, link, words) {
    const url = new URL(link.href, location.href);
    const text = await page(url);
    const found = text
      && snippetOf(text, target(text, decodeURIComponent(url.hash.slice(1))), words);
    if (found) {
      const paragraph = document.createElement("p");
      paragraph.className = "context";
      const mark = document.createElement("span");
      mark.className = "highlighted";
      mark.textContent = found.text.slice(found.at, found.at + found.length);
      paragraph.append(found.lead + found.text.slice(0, found.at));
      if (found.length > 0) paragraph.append(mark);
      paragraph.append(found.text.slice(found.at + found.length) + found.tail);
      item.append(paragraph);
    }
  }

  function start() {
    const results = document.getElementById("search-results");
    const words = searched();
    if (!results || words.length === 0) return;
    const scan = () => results.querySelectorAll("ul.search > li").forEach((item) => addSnippet(item, words));
    new MutationObserver(scan).observe(results, { childList: true, subtree: true });
    scan();
  }

  // A search for words (the class pe-searching, set in the page's head, before the body is
  // drawn): the results' box holds the screen's height from the first paint, so that the footer
  // is not pushed down as the results arrive, and a result is shown once its snippet is written
  // and every result above it is shown (pe-search.css): a snippet written into a result already
  // on the screen pushed the results below it down (layout shifts of 0.12 to 0.18 for "rotary"
  // on a phone).
  if (searched().length > 0) document.documentElement.classList.add("pe-searching");

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
