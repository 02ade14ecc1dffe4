"""Which sentence of the retrieved passages answers the question, and whether any does.

Every sentence of every passage is a candidate (the same sentence in two passages is one candidate, kept
with the passage ranked first). A candidate is scored by the question terms it holds, each weighted by how
rare it is among all candidates (a term no passage holds weighs the most: the knowledge base does not
know it), with a bonus for question phrases it holds in order, for holding the kind of thing asked (a year
for "when", a number for "how many") and a small prior for the passage's retrieval rank. A candidate that
only repeats the question, with nothing else, cannot answer it. A sentence model that reads the question's
language (MiniLM for English, multilingual-e5 for Chinese) re-ranks the best of them by meaning.

The relevance bar is the share of the question's whole words the best candidate covers (``min_coverage``),
with the sentence model not disagreeing, or the sentence model's similarity (``min_similarity``) with some
of the words: below it the answer is that the knowledge base does not say. A second sentence close in score
joins the first when both stay short (Chinese sentences often are). A long quote is trimmed to the clauses
that carry the matched terms and the answer, marked with an ellipsis where text was left out.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ragline.answering.sentences import Span, split_sentences
from ragline.answering.terms import terms
from ragline.text.segmentation import has_han
from ragline.text.stopwords import ANSWER_STOPWORDS_EN

MIN_COVERAGE = 0.5
CONTEXT_WEIGHT = 0.5
MIN_CHARS = 12


@dataclass(frozen=True)
class Source:
    """One passage of the context: its alias, its text, and what heads it (document title, section)."""

    handle: str
    content: str
    context: str = ""


@dataclass
class Candidate:
    """One sentence of a passage as a candidate answer, with the scores that rank it."""

    source: str  # the passage's alias (c1, c2, …)
    rank: int  # the passage's position in the context (retrieval order)
    index: int  # the sentence's position in its passage
    span: Span
    terms: list[str]
    context_terms: frozenset[str] = frozenset()
    score: float = 0.0
    coverage: float = 0.0
    similarity: float = 0.0
    lexical: float = 0.0
    kind_factor: float = 1.0
    matched: set[str] = field(default_factory=set)
    # The sentence without the question where it quotes it (else the sentence): what is scored.
    own_text: str = ""

    @property
    def text(self) -> str:
        """The sentence's text."""
        return self.span.text

    @property
    def scored_text(self) -> str:
        """The sentence's own words, without a quotation of the question: what its scores are computed from."""
        return self.own_text or self.span.text

    @property
    def term_set(self) -> frozenset[str]:
        """The sentence's terms as a set (repeats dropped)."""
        return frozenset(self.terms)


def _signature(text: str) -> str:
    return re.sub(r"\W+", " ", text.lower()).strip()


def candidates(sources: Sequence[Source]) -> list[Candidate]:
    """Every sentence of the passages once, in context order."""
    seen: set[str] = set()
    out: list[Candidate] = []
    for rank, source in enumerate(sources):
        context = frozenset(terms(source.context)) if source.context else frozenset()
        for index, span in enumerate(split_sentences(source.content)):
            signature = _signature(span.text)
            if len(span.text) < MIN_CHARS or not signature or signature in seen:
                continue
            seen.add(signature)
            out.append(Candidate(source.handle, rank, index, span, terms(span.text), context))
    return out


# A sentence quoting the question ------------------------------------------------------------------------
# A question this short ("Why?", "What is X?") is a common phrase, not a quotation of the question.
MIN_QUOTED_WORDS = 3
_QUESTION_WORD = re.compile(r"\w+", re.UNICODE)


def quoted_question(question: str) -> re.Pattern[str] | None:
    """The question's words in order, whatever the case, punctuation and spacing between them.

    A sentence that holds them quotes the question ("From the command line: `ragline ask "How do I resume a
    stream?"`"). None for a question too short to tell a quotation from a common phrase.
    """
    words = _QUESTION_WORD.findall(question)
    if len(words) < MIN_QUOTED_WORDS and sum(len(w) for w in words if has_han(w)) < 2 * MIN_QUOTED_WORDS:
        return None
    between = r"\W+"
    return re.compile(r"(?<!\w)" + between.join(re.escape(w) for w in words) + r"(?!\w)", re.IGNORECASE)


def drop_quoted_question(question: str, pool: Sequence[Candidate]) -> None:
    """Scores a sentence that quotes the question by its own words only.

    The quotation holds every word of the question and answers none of it: counted, it would make the sentence
    the best match of all (lexically and for the sentence model) while the answer is elsewhere.
    """
    pattern = quoted_question(question)
    if pattern is None:
        return
    for candidate in pool:
        own = pattern.sub(" ", candidate.text)
        if own != candidate.text:
            candidate.own_text = own
            candidate.terms = terms(own)


# What kind of answer a question asks for ----------------------------------------------------------------
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})s?\b|\b\d{1,2}(st|nd|rd|th)? century\b|[0-9]{3,4}年|世纪")
_DATE = re.compile(
    r"\b(january|february|march|april|may|june|july|august|september|october|november|december)\b|[0-9]+月|[0-9]+日",
    re.IGNORECASE,
)
_NUMBER = re.compile(
    r"\d|\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred|"
    r"thousand|million|billion|dozen)\b|[一二三四五六七八九十百千万亿两]+[个名位人次年岁种件座部条所家]",
    re.IGNORECASE,
)
_PROPER = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+")


# A question about a distance, a duration or a share asks for a number with that unit.
_UNIT_QUESTIONS = (
    ("distance", r"\bhow far\b|\b(what|which) (distance|range)\b|多远|距离多少"),
    ("duration", r"\bhow long (does|did|do|will|is|was|should|can)\b|多久|多长时间"),
    ("percentage", r"\bwhat (percentage|percent|share|proportion)\b|百分之|比例"),
    ("frequency", r"\bhow often\b|多久一次"),
    (
        "ordinal",
        r"\b(what|which) (position|place|rank|ranking)\b|\bwhere (do|does|did|is|was)\b.*\b(rank|ranked|list)\b",
    ),
)
_UNITS = {
    "distance": r"\d[\d,.]*\s*(km|kilomet|mile|metre|meter|m\b|ft\b|feet|yard)|公里|千米|英里|米",
    "duration": r"\d[\d,.]*\s*(second|minute|hour|day|week|month|year|min\b|h\b)"
    r"|\b(one|two|three|four|five|six|seven|eight|nine|ten|twenty|thirty)\s+(second|minute|hour|day|week|month|year)"
    r"|分钟|小时|天|周|月|年",
    "percentage": r"\d\s*(%|percent|per cent)|百分之|％",
    "frequency": r"\b(once|twice|thrice|daily|weekly|monthly|annually|yearly|every|times)\b|每[年月周天日]|\d+\s*次",
    "ordinal": r"\b\d+(st|nd|rd|th)\b|\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last)\b"
    r"|第[一二三四五六七八九十百0-9]+",
}


def answer_kind(question: str) -> str:
    """The kind of thing the question asks for: "time", "number", "person", a unit kind ("distance", …) or ""."""
    q = question.lower().strip()
    # "when" asks for a time where it opens the question or ends it; "How old was she when she ..." asks
    # for a number, "Where was he when ..." for a place.
    if re.search(
        r"\b(what|which) (year|decade|century|date|day|month)\b|^(since |until )?when\b|\bwhen\W*$|\bhow long ago\b", q
    ):
        return "time"
    if re.search(r"哪一?年|何时|什么时候|哪一天|几月|哪个月|哪年|年份|日期|何年", q):
        return "time"
    for kind, pattern in _UNIT_QUESTIONS:
        if re.search(pattern, q):
            return kind
    if re.search(
        r"\bhow (many|much|long|far|old|big|large|tall|high|fast|often)\b|\bwhat (percentage|percent|number|amount)\b",
        q,
    ):
        return "number"
    if re.search(r"多少|几[个名位次年岁种件座部条所家]?|多大|多长|多高|多久|多远", q):
        return "number"
    if re.search(r"^(who|whom|whose)\b|\bwho (was|is|were|did)\b", q):
        return "person"
    return ""


def _holds_kind(kind: str, text: str, question: str) -> bool:
    if kind in _UNITS:
        return re.search(_UNITS[kind], text, re.IGNORECASE) is not None
    if kind == "time":
        found = {m.group(0) for m in _YEAR.finditer(text)} | {m.group(0).lower() for m in _DATE.finditer(text)}
        return bool(found - set(question.lower().split()))
    if kind == "number":
        numbers = set(re.findall(r"\d[\d,.]*", text)) - set(re.findall(r"\d[\d,.]*", question))
        return bool(numbers) or bool(_NUMBER.search(re.sub(r"\d", "", text)))
    if kind == "person":
        names = {m.group(0) for m in _PROPER.finditer(text)}
        return bool(names - set(question.split()))
    return True


# Scoring ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Weights:
    """The answerer's constants, measured on the development sets (bench/answers/qa.py)."""

    min_coverage: float = MIN_COVERAGE  # the relevance bar (lexical) ...
    agree_similarity: float = -1.0  # ... with the sentence model not disagreeing (its cosine at least this)
    min_similarity: float = 0.55  # or the dense bar, where a sentence model reads the language ...
    agree_coverage: float = 0.0  # ... with at least this share of the question's words
    context: float = CONTEXT_WEIGHT  # a question word in the heading or title instead of the sentence
    phrase: float = 0.5  # a question phrase (two terms in order) held as a phrase
    rank: float = 0.3  # prior for the passage retrieval ranked first
    kind_miss: float = 0.7  # factor for a sentence without the kind of thing asked
    number_miss: float = 0.5  # factor for a passage without the number the question names
    similarity: float = 2.0  # weight of the dense similarity beside the lexical score
    shortlist: int = 24  # the best lexical candidates the sentence model re-ranks
    companion: float = 0.6  # a second sentence scoring this share of the best one joins the answer ...
    companion_chars: int = 110  # ... when both together stay this short (Chinese sentences are short)


DEFAULT_WEIGHTS = Weights()
_NUMBER_TOKEN = re.compile(r"\d+(?:[.,]\d+)*")


@dataclass
class Selection:
    """The chosen sentences, the question's terms and how much of the question the best sentence covers."""

    best: list[Candidate]
    question_terms: list[str]
    coverage: float
    ranked: list[Candidate] = field(default_factory=list)

    @property
    def found(self) -> bool:
        """True when some sentence answers the question."""
        return bool(self.best)


def _bigrams(items: Sequence[str]) -> set[tuple[str, str]]:
    return set(itertools.pairwise(items))


def score(
    question: str,
    pool: list[Candidate],
    weights: Weights = DEFAULT_WEIGHTS,
    passages: Sequence[Source] = (),
) -> list[str]:
    """Scores every candidate in place; returns the question's terms (distinct, in order)."""
    question_terms = list(dict.fromkeys(terms(question, drop_question_words=True)))
    if not pool or not question_terms:
        return question_terms
    wanted = set(question_terms)
    total = len(pool)
    # The relevance bar counts whole words: jieba's search segmentation gives a Chinese word and its
    # parts (澳大利亚, 澳大利, 大利, 利亚), and a sentence holding the word once must not cover the question
    # four times over while it lacks what is asked (首都). A word counts as held when the sentence's text
    # holds it, however jieba cut the sentence.
    words = [t for t in question_terms if not (has_han(t) and any(t != o and t in o for o in question_terms))]

    def holds(candidate: Candidate, term: str) -> bool:
        return term in candidate.term_set or (has_han(term) and term in candidate.scored_text)

    frequency: Counter[str] = Counter()
    for candidate in pool:
        frequency.update(t for t in wanted if holds(candidate, t))
    weight = {t: math.log(1 + total / (frequency[t] + 0.5)) for t in question_terms}
    question_weight = sum(weight.values())
    words_weight = sum(weight[t] for t in words)
    question_bigrams = _bigrams(question_terms)
    kind = answer_kind(question)
    numbers = set(_NUMBER_TOKEN.findall(question))
    texts = {p.handle: f"{p.context} {p.content}" for p in passages}
    mean_length = sum(len(c.terms) for c in pool) / total
    for candidate in pool:
        held = candidate.term_set
        matched = {t for t in wanted if holds(candidate, t)}
        candidate.matched = matched
        # Words of the title or section heading name what every sentence under them is about ("she" in a
        # passage titled with her name): they count for all of those sentences alike, and choose among them
        # none; the sentence is chosen by the question's other words.
        headed = candidate.context_terms & wanted
        direct = matched - headed
        overlap = sum(weight[t] for t in direct) + weights.context * sum(weight[t] for t in headed)
        held_words = sum(weight[t] for t in words if t in direct) + weights.context * sum(
            weight[t] for t in words if t in headed
        )
        headed_words = sum(weight[t] for t in words if t in headed)
        coverage = (held_words + (1 - weights.context) * headed_words) / words_weight
        if numbers and not any(n in texts.get(candidate.source, candidate.text) for n in numbers):
            coverage *= weights.number_miss
        candidate.coverage = coverage
        if kind and not _holds_kind(kind, candidate.scored_text, question):
            candidate.kind_factor = weights.kind_miss
        if not (matched or headed) or not (held - wanted):
            candidate.score = 0.0
            continue
        phrases = len(_bigrams(candidate.terms) & question_bigrams)
        value = overlap / question_weight + weights.phrase * phrases / len(question_terms)
        value /= (0.75 + 0.25 * max(len(candidate.terms), 1) / max(mean_length, 1.0)) ** 0.5
        candidate.lexical = value
        candidate.score = value * candidate.kind_factor * (1 + weights.rank / (1 + candidate.rank))
    return question_terms


# Trimming a long quote to the clauses that answer ------------------------------------------------------
_CLAUSE_BREAK = re.compile(r"(?<=[,;:，；：、])\s*|\s+(?=\()|\s[-–—]\s")
ELLIPSIS = "…"
TRIM_ABOVE = 250  # a sentence this long is trimmed to its answering clauses
MIN_QUOTE = 90  # ... never shorter than this


def trim(candidate: Candidate, question: str, question_terms: Sequence[str]) -> str:
    """The clauses of a long sentence that hold the question's words, as one excerpt.

    The clauses of a long sentence that hold the question's words and the kind of thing asked, as one contiguous excerpt
    marked with an ellipsis where the sentence goes on.
    """
    text = candidate.text
    if len(text) <= TRIM_ABOVE:
        return text
    cuts = [0, *(m.end() for m in _CLAUSE_BREAK.finditer(text) if 0 < m.end() < len(text)), len(text)]
    clauses = [(a, b) for a, b in itertools.pairwise(sorted(set(cuts))) if text[a:b].strip()]
    if len(clauses) < 2:
        return text
    wanted = set(question_terms)
    kind = answer_kind(question)

    def value(start: int, end: int) -> float:
        piece = text[clauses[start][0] : clauses[end][1]]
        held = set(terms(piece))
        matched = len(held & wanted)
        fresh = len(held - wanted - candidate.context_terms)
        kind_bonus = 1.0 if kind and _holds_kind(kind, piece, question) else 0.0
        return matched + 0.8 * kind_bonus + (0.3 if fresh else -1.0) - len(piece) / 50

    best = max(
        ((a, b) for a in range(len(clauses)) for b in range(a, min(a + 3, len(clauses)))),
        key=lambda window: value(*window),
    )
    start, end = best
    while clauses[end][1] - clauses[start][0] < MIN_QUOTE and (start > 0 or end < len(clauses) - 1):
        if end < len(clauses) - 1:
            end += 1
        else:
            start -= 1
    excerpt = text[clauses[start][0] : clauses[end][1]].strip().rstrip(",;:，；：、")
    if start > 0:
        excerpt = ELLIPSIS + excerpt
    if end < len(clauses) - 1:
        excerpt = excerpt + ELLIPSIS
    return excerpt


# The answer itself, when the question asks for a kind of thing --------------------------------------------
_WORD = re.compile(r"[\w'’]+(?:[.,][0-9]+)*|[^\w\s]")
SPAN_WORDS = 16  # a stretch longer than this is no exact answer: the sentence is quoted instead
_CLAUSE_MARK = re.compile(r"[,;:()]")
_QUANTITY_WORDS = frozenset({"one", "once", "over", "under", "more", "less", "than", "few", "most", "about"})


def _edge_word(word: str) -> bool:
    """Whether a stretch may begin or end with this word.

    Not punctuation, not a stop word (but for those that say how much).
    """
    lowered = word.lower()
    return re.match(r"\w", word) is not None and (lowered not in ANSWER_STOPWORDS_EN or lowered in _QUANTITY_WORDS)


def answer_span(candidate: Candidate, question: str, question_terms: Sequence[str]) -> str | None:
    """The one stretch of a sentence that answers an English question asking for a time, a number or a person.

    For an English question that asks for a time, a number, a distance, a share or a person: the one stretch of the
    sentence between the question's own words that holds that kind of thing ("1849" in "The first degrees from the
    college were awarded in 1849." for "In what year were the first degrees awarded?"). None when the question asks for
    no such kind, when no stretch or more than one holds it (the sentence is quoted whole then), or when it is long.
    """
    kind = answer_kind(question)
    if not kind or has_han(question):
        return None
    text = candidate.text
    words = list(_WORD.finditer(text))
    asked = set(question_terms) | candidate.context_terms
    holding = []
    # Stretches run between the question's words and stop at clause punctuation; a stop word at either end
    # is left out unless it says how much ("over 230", "one").
    breaks = [bool(set(terms(w.group())) & asked) or _CLAUSE_MARK.fullmatch(w.group()) is not None for w in words]
    for is_break, group in itertools.groupby(range(len(words)), key=lambda i: breaks[i]):
        run = [] if is_break else list(group)
        while run and not _edge_word(words[run[0]].group()):
            run.pop(0)
        while run and not _edge_word(words[run[-1]].group()):
            run.pop()
        if not run:
            continue
        piece = text[words[run[0]].start() : words[run[-1]].end()]
        if _holds_kind(kind, piece, question):
            holding.append((piece, len(run)))
    if len(holding) != 1 or holding[0][1] > SPAN_WORDS:
        return None
    return holding[0][0]


Similarity = Callable[[str, list[str]], list[float]]


def select(
    question: str,
    sources: Sequence[Source],
    *,
    weights: Weights = DEFAULT_WEIGHTS,
    similarity: Similarity | None = None,
) -> Selection:
    """The sentence that answers ``question``, or none when no sentence clears the relevance bar.

    ``similarity`` (question, sentences) → cosine similarities, from a sentence embedding model that reads
    the question's language; it re-ranks the best lexical candidates and can clear the bar on its own (a
    paraphrase shares meaning, not words).
    """
    pool = candidates(sources)
    drop_quoted_question(question, pool)
    question_terms = score(question, pool, weights, sources)
    ranked = sorted((c for c in pool if c.score > 0), key=lambda c: -c.score)
    if similarity is not None and pool:
        shortlist = ranked[: weights.shortlist]
        listed = {id(c) for c in shortlist}
        shortlist += [c for c in pool if c.rank == 0 and id(c) not in listed and c.score == 0.0][:8]
        for candidate, cosine in zip(shortlist, similarity(question, [c.scored_text for c in shortlist]), strict=True):
            candidate.similarity = cosine
            combined = candidate.lexical + weights.similarity * max(cosine, 0.0)
            candidate.score = combined * candidate.kind_factor * (1 + weights.rank / (1 + candidate.rank))
        ranked = sorted(shortlist, key=lambda c: -c.score)
    if not ranked:
        return Selection([], question_terms, 0.0)
    best = ranked[0]
    if similarity is None:
        relevant = best.coverage >= weights.min_coverage
    else:
        relevant = (best.coverage >= weights.min_coverage and best.similarity >= weights.agree_similarity) or (
            best.similarity >= weights.min_similarity and best.coverage >= weights.agree_coverage
        )
    if not relevant:
        return Selection([], question_terms, best.coverage, ranked)
    chosen = [best]
    for other in ranked[1:]:
        if other.score < weights.companion * best.score:
            break
        if len(best.text) + len(other.text) <= weights.companion_chars:
            chosen.append(other)
            break
    return Selection(chosen, question_terms, best.coverage, ranked)
