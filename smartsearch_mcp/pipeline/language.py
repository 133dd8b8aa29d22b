"""Whether a query is written in a language the English pipeline reads.

The analyzer's stopwords and stemmer, the spaCy models and the bi-encoders of the presets are
English. A question in another language still returns the nearest passages, just unreliably,
so recall says so. The check is cheap and general: the script of the letters (Cyrillic, CJK,
Arabic, ... are not read), and function words — the most frequent words of a language, which
any sentence needs and no name or code identifier is — counted against English ones. Names,
typos and identifiers match neither list and never make a query foreign.
"""

from __future__ import annotations

import re
import unicodedata


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# The commonest function words of languages written in Latin script that English models
# misread, leaving out every word that is also an English word or a common English name
# part ("a", "an", "die", "son", "de", "la", "van", "per", ...).
_FUNCTION_WORDS: dict[str, frozenset[str]] = {
    "Spanish": _words(
        """
        el los las del al una unos unas es está están estaba fue fueron ser estar hay
        qué quién quiénes cuándo dónde cómo cuál cuáles cuánto cuántos por para con sin
        sobre entre pero porque muy también ya nos nosotros nuestro nuestra mi mis tu tus su
        sus yo ella ellos ellas usted lo le les se este esta estos estas ese esa eso aquí
        hemos han había tengo tiene tenemos hicimos dijo y o que quien cuando donde como cual
        esto esta
        """
    ),
    "French": _words(
        """
        le les des du un une est sont était été être avoir nous vous ils elles je tu il
        elle qui que quoi quand où comment pourquoi quel quelle quels quelles avec sans
        pour dans sur sous chez mais donc car aussi très notre nos votre vos leur leurs
        mon ma mes ton ta tes ce cette ces avons avez ont fait dit et ou pas
        """
    ),
    "German": _words(
        """
        der das den dem des ein eine einen einem einer ist sind war waren wurde haben hat
        hatte wir ihr sie er es ich du wer wie wo wann warum welche welcher welches mit
        ohne für auf aus bei nach von zu über unter aber oder und nicht auch sehr unser
        unsere euer mein meine dein sein ihre haben gemacht gesagt im ins vom zum zur
        """
    ),
    "Portuguese": _words(
        """
        os as um uma uns umas é está estão foi ser estar tem temos quem quando onde como
        qual quais quanto por para com sem sobre entre mas porque muito também já nós
        nosso nossa meu minha seu sua eles elas você isso isto aqui fizemos disse não e ou
        do da dos das no na nos nas em
        """
    ),
    "Italian": _words(
        """
        il lo gli le della dello degli delle del un uno una è sono era erano stato essere
        avere abbiamo hanno chi che cosa quando dove come perché quale quali quanto con
        senza per tra fra ma anche molto noi voi loro io tu lui lei mio mia nostro nostra
        questo questa quello quella qui fatto detto non e o nel nella
        """
    ),
    "Dutch": _words(
        """
        het een is zijn waren werd hebben heeft had wij jullie zij hij ik jij wie wat
        waar wanneer waarom hoe welke met zonder voor op uit bij naar over onder maar of
        niet ook heel ons onze mijn jouw hun dit deze dat gedaan gezegd en
        """
    ),
}
# English function words a query in English nearly always holds at least one of.
_ENGLISH_FUNCTION_WORDS = _words(
    """
    the a an of to in on at for with from by about is are was were be been being do does
    did have has had what when where who whom whose which why how i we you he she it they
    me us him her them my our your his its their this that these those and or but not no
    can could would should will shall may might must there here any some all as if so
    """
)
_WORD_RE = re.compile(r"[^\W\d_]+", re.UNICODE)
# Latin-script letters; a query whose letters are mostly of another script is not English.
_LATIN = "LATIN"


def foreign_language(query: str) -> str | None:
    """The language (or script) `query` appears to be written in when it is not English,
    else None. Short or ambiguous queries (keywords, names, code) count as English."""
    letters = [c for c in query if c.isalpha()]
    if not letters:
        return None
    other = [c for c in letters if not unicodedata.name(c, "").startswith(_LATIN)]
    if len(other) * 2 > len(letters):
        return f"{_script(other[0])} script"
    words = [w.lower() for w in _WORD_RE.findall(query)]
    english = sum(1 for w in words if w in _ENGLISH_FUNCTION_WORDS)
    best, hits = None, 0
    for language, function_words in _FUNCTION_WORDS.items():
        count = sum(1 for w in words if w in function_words and w not in _ENGLISH_FUNCTION_WORDS)
        if count > hits:
            best, hits = language, count
    # Inverted punctuation opens Spanish questions and exclamations, and nothing English.
    if "¿" in query or "¡" in query:
        hits += 1
        best = best or "Spanish"
    if best is not None and hits >= 2 and hits > english:
        return best
    return None


def language_warning(query: str) -> str | None:
    """A warning for a query the English models do not read, or None."""
    language = foreign_language(query)
    if language is None:
        return None
    return (
        f"the question does not look English (it reads as {language}); query analysis and the "
        "configured models read English, so these passages may not match it — ask in English "
        "for reliable recall"
    )


def _script(char: str) -> str:
    name = unicodedata.name(char, "")
    first = name.split()[0] if name else "non-Latin"
    return first if first.isupper() and len(first) <= 3 else first.capitalize()
