"""WordNet definitions of label names, read offline (Yin et al. 2019's "definition" hypotheses).

The dictionary comes from Debian's ``wordnet-base`` package (WordNet 3.0 under ``/usr/share/wordnet``;
``scripts/setup-system-packages.sh`` installs it) or any WordNet 3.0 ``dict`` folder named by
``$ZSTC_WORDNET_DIR``, read with nltk's ``WordNetCorpusReader``. Nothing is downloaded: ``nltk.download`` is
never called. Debian's package lacks two files nltk expects, which are not data: ``lexnames`` (the fixed
table of 45 lexicographer files, documented in lexnames(5WN)) is supplied from the table below, and the
mapping to other WordNet versions (only used for multilingual WordNets) is skipped.

How a label name is looked up (:func:`define_label`), because BTZSC names are identifiers and category
titles, not dictionary words:

1. Normalise: ``_`` becomes a space, case is folded and accents are stripped (Unicode NFKD without its
   combining marks: "Café" -> "cafe", "Zürich" -> "zurich"); WordNet 3.0's lemmas are all ASCII, so an
   accented form could never be found.
2. The whole phrase, if WordNet has it ("Civil Rights" -> ``civil_rights``, "U.S." -> ``u.s.``).
3. A label of several clauses ("Culture: Positive", manifesto's "topic: stance") is defined clause by clause
   (``:`` and ``;`` split), the definitions joined with "; ": the topic is not lost to the stance.
4. A coordination ("Business & Finance", "Sci/Tech", "apple pay or google pay" stays a phrase: only ``&``
   and ``/`` split) is defined part by part, the definitions joined with " or ".
5. Otherwise the whole phrase once more without the punctuation around its words, then the head noun: the
   last word of the first run of words that WordNet knows as nouns, skipping function words. English noun
   compounds put the head last ("age limit" -> "limit"), and identifiers that continue with a verb or
   preposition put it before ("balance not updated after bank transfer" -> "balance", "activate my card" ->
   "card"). A word WordNet lacks is read without the punctuation at its ends ("payment?" -> "payment"), so
   a question mark or a quote does not end the run early and hand the label to a word before it.
6. Otherwise no definition (``None``): the caller falls back to the label name and says so.

A clause or coordinated part that WordNet lacks while the others are found ("Sci/Tech": "sci") is left out
of the definition; :func:`define_label` lists such parts, and the hypotheses' notes name them.

A leading negation ("not_insult", "no refund") is kept: the definition of the rest, prefixed with "not ",
so the two labels of a binary task never share one definition.

Sense choice: the most frequent sense (SemCor tag counts, ties in WordNet's order) among the word's noun and
adjective senses, which is what a label means far more often than a verb sense ("love" is the emotion, not
"have a great affection"; "positive" the adjective, not the grammatical form); verb and adverb senses only
when the word has no noun or adjective sense.
"""

from __future__ import annotations

import io
import os
import re
import string
import unicodedata
import warnings
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from zstc.errors import DataError

DEBIAN_WORDNET_DIR = Path("/usr/share/wordnet")
WORDNET_DIR_VARIABLE = "ZSTC_WORDNET_DIR"

# lexnames(5WN): index, name and part-of-speech number of each lexicographer file, in WordNet 3.0's order.
_LEXICOGRAPHER_FILES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
    "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location noun.motive "
    "noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process noun.quantity "
    "noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change verb.cognition "
    "verb.communication verb.competition verb.consumption verb.contact verb.creation verb.emotion verb.motion "
    "verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl"
).split()
_POS_NUMBER = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
LEXNAMES = "".join(
    f"{i:02d}\t{name}\t{_POS_NUMBER[name.split('.')[0]]}\n" for i, name in enumerate(_LEXICOGRAPHER_FILES)
)

FUNCTION_WORDS = frozenset(
    "a an the my your our their his her its of to for in on at by with from not no and or is are be".split()
)
"""Words never taken as a head noun (some, like "in" or "at", have rare noun senses in WordNet)."""

_COORDINATION = re.compile(r"\s*[&/]\s*")
_CLAUSES = re.compile(r"\s*[:;]\s*")

WORDNET_LOOKUP_VERSION = 2
"""Bumped whenever the lookup rules change which definition a label gets or what its notes say (2: clauses,
punctuation, accents, the parts left out); bench records it in a run's identity for the variants that
read WordNet, so a cached result of other rules is not reused."""


class WordNetUnavailable(DataError):
    """WordNet's files are not installed."""


def wordnet_dir() -> Path:
    """Where WordNet's dict files are: ``$ZSTC_WORDNET_DIR`` or Debian's location."""
    return Path(os.environ.get(WORDNET_DIR_VARIABLE) or DEBIAN_WORDNET_DIR)


def wordnet_available() -> bool:
    """Whether WordNet's noun files are installed (the definition hypotheses need them)."""
    directory = wordnet_dir()
    return (directory / "data.noun").is_file() and (directory / "index.noun").is_file()


@cache
def _reader(directory: Path) -> Any:
    try:
        import nltk.data
        from nltk.corpus.reader.wordnet import WordNetCorpusReader
    except ImportError:
        raise WordNetUnavailable("WordNet definitions need nltk: pip install 'zstc[yin]'") from None

    class LocalWordNetReader(WordNetCorpusReader):  # type: ignore[misc]
        def open(self, fileid: str) -> Any:
            if fileid == "lexnames" and not (Path(self.root.path) / "lexnames").exists():
                return io.StringIO(LEXNAMES)
            return super().open(fileid)

        def map_wn(self, version: str = "wordnet") -> None:
            return None  # maps other WordNet versions for multilingual lookups; this is WordNet itself

    # nltk refuses to read outside its data path; the WordNet folder is added to it, not the reverse.
    if str(directory) not in map(str, nltk.data.path):
        nltk.data.path.append(str(directory))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multilingual functions are not available": not needed here
        return LocalWordNetReader(str(directory), None)


def load_wordnet() -> Any:
    """The WordNet reader (loaded once per process, about 2 s), or :class:`WordNetUnavailable`."""
    if not wordnet_available():
        raise WordNetUnavailable(
            f"WordNet not found in {wordnet_dir()}: install Debian's wordnet-base (scripts/setup-system-packages.sh) "
            f"or set {WORDNET_DIR_VARIABLE} to a WordNet 3.0 dict folder"
        )
    return _reader(wordnet_dir())


def normalise_label(name: str) -> str:
    """``"Refund_not_showing_up"`` -> ``"refund not showing up"``; ``"Café"`` -> ``"cafe"`` (accents stripped)."""
    folded = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    return " ".join(folded.replace("_", " ").split()).lower()


def word_definition(word: str, wordnet: Any) -> str | None:
    """The definition of a word or WordNet multi-word entry (spaces allowed), by the sense rule above."""
    key = word.strip().replace(" ", "_")
    if not key:
        return None
    synsets = wordnet.synsets(key)
    if not synsets:
        return None
    preferred = [s for s in synsets if s.pos() in ("n", "a", "s")] or synsets
    base = {key.lower(), (wordnet.morphy(key) or key).lower()}

    def frequency(synset: Any) -> int:
        return sum(lemma.count() for lemma in synset.lemmas() if lemma.name().lower() in base)

    # max() keeps the first of equal counts, i.e. WordNet's own sense order.
    return max(preferred, key=frequency).definition()


def lookup_words(phrase: str, wordnet: Any) -> list[str]:
    """The words of ``phrase`` as WordNet is asked for them: as written when WordNet has them ("u.s.",
    "rock'n'roll"), else without the punctuation at their ends ("payment?" -> "payment"); bare punctuation goes."""
    words = []
    for word in phrase.split():
        if not wordnet.synsets(word):
            word = word.strip(string.punctuation)
        if word:
            words.append(word)
    return words


def head_noun(words: list[str], wordnet: Any) -> str | None:
    """The last word of the first run of noun words (see the module docstring), or None."""
    run: list[str] = []
    for word in words:
        if word not in FUNCTION_WORDS and wordnet.synsets(word, pos="n"):
            run.append(word)
        elif run:
            break
    return run[-1] if run else None


@dataclass(frozen=True)
class LabelDefinition:
    """A label's WordNet definition (None: WordNet has no part of it) and the parts of the label it leaves out."""

    text: str | None
    left_out: tuple[str, ...] = ()
    """Clauses or coordinated parts WordNet lacks although it has others ("sci" of "Sci/Tech")."""


def _define_parts(parts: list[str], joiner: str, wordnet: Any) -> LabelDefinition:
    found = [_define(part, wordnet) for part in parts]
    text = joiner.join(d.text for d in found if d.text) or None
    if text is None:
        return LabelDefinition(None)
    left_out = [part for part, d in zip(parts, found) if d.text is None]
    return LabelDefinition(text, tuple(left_out) + tuple(p for d in found for p in d.left_out))


def _define(phrase: str, wordnet: Any) -> LabelDefinition:
    negation, _, rest = phrase.partition(" ")
    if negation in ("not", "no") and rest:
        negated = _define(rest, wordnet)
        return LabelDefinition(f"not {negated.text}", negated.left_out) if negated.text else negated
    whole = word_definition(phrase, wordnet)
    if whole is not None:
        return LabelDefinition(whole)
    for splitter, joiner in ((_CLAUSES, "; "), (_COORDINATION, " or ")):
        parts = [part for part in splitter.split(phrase) if part.strip(string.punctuation + " ")]
        if len(parts) > 1:
            return _define_parts(parts, joiner, wordnet)
    words = lookup_words(phrase, wordnet)
    cleaned = " ".join(words)
    if cleaned != phrase and (whole := word_definition(cleaned, wordnet)) is not None:
        return LabelDefinition(whole)
    head = head_noun(words, wordnet)
    return LabelDefinition(word_definition(head, wordnet) if head else None)


def define_label(name: str, wordnet: Any | None = None) -> LabelDefinition:
    """The WordNet definition of a label name by the rules above, with the parts of it that were left out."""
    return _define(normalise_label(name), wordnet if wordnet is not None else load_wordnet())


def label_definition(name: str, wordnet: Any | None = None) -> str | None:
    """The WordNet definition for a label name, or None when no part of it is in WordNet."""
    return define_label(name, wordnet).text
