// The book's search scorer (html_search_scorer, book/_ext/search_ranking.py): Sphinx's own
// scores, and a page's score raised by how densely its prose uses the searched words against the
// densest page (window.peSearchWeights, written at build time): the chapter about a word comes
// before the API entries whose names hold it, the pages that only mention it after them.
var Scorer = {
  // Sphinx's scores (7.4's defaults).
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
  // What the densest page gains: above an API entry that matches the whole name (11 + 5).
  pageBoost: 12,

  // The searched words, stemmed as Sphinx stems them (splitQuery and Stemmer: language_data.js).
  _stems: null,
  stems: function () {
    if (this._stems === null) {
      const query = new URLSearchParams(window.location.search).get("q") || "";
      const stemmer = new Stemmer();
      this._stems = splitQuery(query.toLowerCase())
        .map((word) => stemmer.stemWord(word))
        .filter((stem) => stem.length > 0);
    }
    return this._stems;
  },

  // How densely a page uses the searched words, over the densest page's (0 to 1).
  share: function (docname) {
    const table = window.peSearchWeights || {};
    let share = 0;
    for (const stem of this.stems()) {
      const pages = table[stem];
      if (!pages || !(docname in pages)) continue;
      const densest = Math.max(...Object.values(pages));
      share = Math.max(share, pages[docname] / densest);
    }
    return share;
  },

  // A result is [docname, title, anchor, descr, score, filename]: an API object has a
  // description ("Python class, in ..."), a page or a section of one has none.
  score: function (result) {
    const [docname, , , descr, score] = result;
    if (descr !== null && descr !== undefined) return score;
    return score + Math.round(this.pageBoost * this.share(docname));
  },
};
