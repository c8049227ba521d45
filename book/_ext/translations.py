"""What the Korean edition needs of Sphinx beyond its translation catalogues.

The catalogues (``locale/ko/LC_MESSAGES``) carry the prose. Some text escapes Sphinx's own
message extraction or translation, and this extension brings it in:

- an exercise's title (``{exercise} Title``): sphinx-exercise builds it without a source, so
  Sphinx takes it for a built-in label; it is given its source here, before the catalogues are
  applied, so that it is extracted and translated like a heading;
- a solution's title, which sphinx-exercise takes from its exercise as the directive made it,
  untranslated: the exercise is looked up again after the catalogues are applied;
- the captions of the book's parts (the table of contents adds them after the catalogues);
- a figure's alt text (the chapters' ``mystnb.image.alt`` metadata): myst-nb makes the image only
  after the catalogues are applied, so it is translated here, from the page's catalogue, after
  that;
- the article's own words: ``{article}`text``` marks a passage quoted verbatim from the Korean
  article (``shared/article-ko.txt``), which the tests compare with the article character for
  character. It renders as ``<span class="article-quote">``.

- the theme's launch buttons ("Live Code"), which sphinx-book-theme translates with its own
  message catalogue (``booktheme``), whose Korean lacks them: ``locale/ko/LC_MESSAGES/booktheme.po``
  is compiled and registered as a further catalogue of that name (``app.add_message_catalog``).
  The other theme's words ("Color mode") are Sphinx's own domain, which Sphinx reads from
  ``locale/ko/LC_MESSAGES/sphinx.po`` by itself.

- the theme's words it writes in English whatever the language: the sidebar toggles' tooltips
  and the footer's "By" (templates in ``book/_templates`` that put them through the catalogue),
  the search box's placeholder (a theme option) and the launch buttons' tooltips, which the theme
  builds as "Launch on" + " Binder", an order Korean cannot take: both are translated here, from
  ``locale/ko/LC_MESSAGES/sphinx.po`` ("Launch on %(service)s").

It also adds a search language for Korean (``html_search_language = "ko"``): Sphinx has none, and
its English fallback indexes a Korean word with its particle (``인코딩은``, ``인코딩을``), so that
a search for ``인코딩`` finds neither. The Korean one indexes and searches by the word without
the particle or ending that follows it.
"""

from __future__ import annotations

import os
from typing import Any

from docutils import nodes
from docutils.parsers.rst.states import Inliner
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.locale import init as init_locale
from sphinx.search import SearchLanguage, languages
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.i18n import docname_to_domain

# Runs before Sphinx's Locale transform (priority 20), which translates the extracted messages.
BEFORE_LOCALE = 15


class ExerciseTitles(SphinxTransform):
    """Give exercises' titles a source, so that the catalogues translate them.

    sphinx-exercise merges the title into a new one without a source, after the catalogues are
    applied and before the gettext builder reads the page: for that builder the exercise keeps a
    copy of its title, which the builder extracts.
    """

    default_priority = BEFORE_LOCALE

    def apply(self, **kwargs: Any) -> None:
        for node in list(self.document.findall(nodes.subtitle)):
            if node.source is None and type(node).__name__ == "exercise_subtitle":
                node.source = self.document["source"]
                node.line = 1
                node.rawsource = node.astext()
                if self.app.builder.name == "gettext":
                    message = node.rawsource
                    exercise = node.parent.parent
                    copy = nodes.subtitle(message, message)
                    copy.source, copy.line = node.source, node.line
                    exercise += copy


class TranslatedExerciseRegistry(SphinxTransform):
    """Give sphinx-exercise's registry the translated exercise titles.

    The registry keeps each exercise as its directive made it, untranslated; a solution takes its
    title from there ("Solution to Exercise 5.1 (title)"). After the catalogues are applied
    (Sphinx's Locale transform, priority 20), each entry's title is the page's.
    """

    default_priority = 25

    def apply(self, **kwargs: Any) -> None:
        registry = getattr(self.env, "sphinx_exercise_registry", {})
        for node in self.document.findall(nodes.Element):
            entry = registry.get(node.get("label"))
            if node.get("type") != "exercise" or entry is None or entry["node"] is node:
                continue
            translated, kept = _subtitle(node), _subtitle(entry["node"])
            if translated is not None and kept is not None:
                kept.children = []
                kept.extend(child.deepcopy() for child in translated.children)


def _subtitle(exercise: nodes.Element) -> nodes.Element | None:
    """An exercise's subtitle (its own title, after "Exercise N"), if it has one."""
    title = exercise.children[0] if exercise.children else None
    if isinstance(title, nodes.Element) and len(title.children) > 1:
        subtitle = title.children[1]
        if isinstance(subtitle, nodes.subtitle):
            return subtitle
    return None


def translate_attribute(transform: SphinxTransform, kind: type[nodes.Element], key: str) -> None:
    """Translate attribute ``key`` of every ``kind`` node of the page with the page's catalogue
    (nothing in the English book, or on a page without a catalogue)."""
    config, env = transform.config, transform.env
    if not config.language or config.language == "en":
        return
    domain = docname_to_domain(env.docname, config.gettext_compact)
    dirs = [os.path.join(env.srcdir, d) for d in config.locale_dirs]
    catalog, has_catalog = init_locale(dirs, config.language, domain)
    if not has_catalog:
        return
    for node in transform.document.findall(kind):
        if node.get(key):
            node[key] = catalog.gettext(node[key])


class TranslatedTocCaptions(SphinxTransform):
    """Translate the captions of the book's parts, which jupyter-book's table of contents
    (sphinx-external-toc's InsertToctrees, priority 100) adds after the catalogues are applied."""

    default_priority = 101

    def apply(self, **kwargs: Any) -> None:
        translate_attribute(self, addnodes.toctree, "caption")


class TranslatedAltTexts(SphinxPostTransform):
    """Translate every image's alt text, which myst-nb sets after the catalogues are applied."""

    default_priority = 900

    def run(self, **kwargs: Any) -> None:
        translate_attribute(self, nodes.image, "alt")


def article_role(
    name: str,
    rawtext: str,
    text: str,
    lineno: int,
    inliner: Inliner,
    options: dict[str, Any] | None = None,
    content: list[str] | None = None,
) -> tuple[list[nodes.Node], list[nodes.system_message]]:
    """``{article}`...```: words quoted verbatim from the Korean article."""
    return [nodes.inline(rawtext, text, classes=["article-quote"])], []


# A Korean word is a stem followed by particles and endings; these are the ones that follow the
# book's nouns (longest first, so that 에서 is stripped before 서 could be).
KOREAN_ENDINGS = sorted(
    """은 는 이 가 을 를 의 에 에서 에게 으로 로 와 과 도 만 까지 부터 보다 처럼 이다 이며 이고
    이나 나 인 입니다 이라 라 에는 에도 으로는 로는 와는 과는 하는 하고 하여 해 한 할 했다 한다
    된 되는 된다 들 들은 들을 들의 들이""".split(),
    key=len,
    reverse=True,
)


def korean_stem(word: str) -> str:
    """``word`` without the particle or ending it ends with, when what is left is a word."""
    for ending in KOREAN_ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 2:
            return word[: -len(ending)]
    return word


# The same rule in JavaScript, for the words a reader types into the search box.
KOREAN_STEMMER_JS = """
const koreanEndings = %s;
class Stemmer {
  stemWord(word) {
    for (const ending of koreanEndings) {
      if (word.endsWith(ending) && word.length - ending.length >= 2) {
        return word.slice(0, word.length - ending.length);
      }
    }
    return word;
  }
}
""" % ("[" + ", ".join(f'"{e}"' for e in KOREAN_ENDINGS) + "]")


class SearchKorean(SearchLanguage):
    """Korean: words split at spaces and punctuation, each searched for without its particle."""

    lang = "ko"
    language_name = "Korean"
    js_stemmer_rawcode = ""
    js_stemmer_code = KOREAN_STEMMER_JS

    def stem(self, word: str) -> str:
        return korean_stem(word.lower())


#: sphinx-book-theme's message catalogue (its MESSAGE_CATALOG_NAME).
BOOK_THEME_CATALOGUE = "booktheme"


def register_theme_catalogue(app: Sphinx, config: Any) -> None:
    """Compile ``<locale_dir>/<language>/LC_MESSAGES/booktheme.po`` of each of ``locale_dirs``
    (where there is one) to its ``.mo`` and register it as a ``booktheme`` catalogue: the theme
    looks up its button texts there after its own catalogue."""
    if not config.language or config.language == "en":
        return
    for locale_dir in config.locale_dirs:
        root = os.path.join(app.srcdir, locale_dir)
        po = os.path.join(root, config.language, "LC_MESSAGES", f"{BOOK_THEME_CATALOGUE}.po")
        if not os.path.isfile(po):
            continue
        from babel.messages.mofile import write_mo
        from babel.messages.pofile import read_po

        with open(po, "rb") as source:
            catalogue = read_po(source, locale=config.language)
        with open(po[: -len(".po")] + ".mo", "wb") as target:
            write_mo(target, catalogue)
        app.add_message_catalog(BOOK_THEME_CATALOGUE, root)


#: The words sphinx-book-theme puts before a launch button's service ("Launch on" + " Binder").
LAUNCH_ON = "Launch on "


def translate_theme_words(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """The search box's placeholder and the launch buttons' tooltips in the page's language.

    Runs after sphinx-book-theme has made the buttons (its handler's priority is 501): a tooltip
    "Launch on Binder" becomes the translation of "Launch on %(service)s" with the service's
    name, so that a language may put the name first ("Binder에서 실행")."""
    if not app.config.language or app.config.language == "en":
        return
    from sphinx.locale import _

    if isinstance(context.get("theme_search_bar_text"), str):
        context["theme_search_bar_text"] = str(_(context["theme_search_bar_text"]))

    def walk(buttons: Any) -> None:
        for button in buttons if isinstance(buttons, list) else []:
            if not isinstance(button, dict):
                continue
            tooltip = button.get("tooltip")
            if isinstance(tooltip, str) and tooltip.startswith(LAUNCH_ON):
                service = tooltip[len(LAUNCH_ON) :]
                button["tooltip"] = str(_("Launch on %(service)s")) % {"service": service}
            walk(button.get("buttons"))  # a group's (the launch buttons' menu)

    walk(context.get("header_buttons"))


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", register_theme_catalogue)
    app.connect("html-page-context", translate_theme_words, priority=600)
    app.add_transform(ExerciseTitles)
    app.add_transform(TranslatedExerciseRegistry)
    app.add_transform(TranslatedTocCaptions)
    app.add_post_transform(TranslatedAltTexts)
    app.add_role("article", article_role)
    # Sphinx has no interface to add a search language: its table of them is extended, as the
    # pinned Sphinx (7.4) reads it (tests/tools/test_translations.py builds a Korean page).
    if not isinstance(languages, dict) or languages.get("en") is None:
        raise ExtensionError(
            "sphinx.search.languages is no longer the table of search languages that "
            "translations.py extends with Korean: see how this Sphinx adds one"
        )
    languages["ko"] = SearchKorean
    return {"parallel_read_safe": True, "parallel_write_safe": True}
