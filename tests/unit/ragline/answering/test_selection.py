import pytest

from ragline.answering.selection import TRIM_ABOVE, Source, Weights, answer_kind, answer_span, select, trim
from ragline.answering.terms import stem

TEA = Source(
    "c1",
    "Green, black and white tea all come from the same plant. Green tea is best brewed at 70 to 80 degrees "
    "Celsius for two to three minutes; hotter water makes it bitter.",
    "Tea basics > Brewing",
)
COFFEE = Source(
    "c2",
    "Brew coffee with water between 90 and 96 degrees Celsius. A cup of filter coffee has about 95 mg of caffeine.",
    "Coffee brewing > Water",
)


def test_the_answering_sentence_wins_over_one_that_shares_more_words():
    chosen = select("Water temperature for green tea?", [TEA, COFFEE])
    assert [c.text for c in chosen.best] == [
        "Green tea is best brewed at 70 to 80 degrees Celsius for two to three minutes; hotter water makes it bitter."
    ]
    assert chosen.best[0].source == "c1"


def test_the_same_sentence_in_two_passages_is_one_candidate_from_the_first():
    again = Source("c3", TEA.content, TEA.context)
    chosen = select("At what temperature is green tea brewed?", [TEA, again])
    assert len(chosen.best) == 1
    assert chosen.best[0].source == "c1"
    assert sum(1 for c in chosen.ranked if c.text == chosen.best[0].text) == 1


def test_a_question_the_passages_do_not_answer_is_not_found():
    assert not select("Who won the 2018 FIFA World Cup?", [TEA, COFFEE]).found
    assert not select("2018年世界杯的冠军是哪个国家？", [TEA, COFFEE]).found


def test_answer_kinds():
    assert answer_kind("When did the Scholastic Magazine begin publishing?") == "time"
    assert answer_kind("How many undergrads attend Notre Dame?") == "number"
    assert answer_kind("Who was the president of Notre Dame in 2012?") == "person"
    # "when" in the middle of a question sets the scene: it asks for a time opening or ending the question
    assert answer_kind("How old was Beyonce when she went to her first concert?") == "number"
    assert answer_kind("Where was Karadzic when he was finally arrested?") == ""
    assert answer_kind("The first products were to be sold in stores when?") == "time"
    assert answer_kind("Since when has Montana been a destination for trout fisheries?") == "time"
    assert answer_kind("How often is the Juggler published?") == "frequency"
    assert answer_kind("Forbes placed Notre Dame at what position among research universities?") == "ordinal"
    assert answer_kind("范廷颂是什么时候被任为主教的？") == "time"
    assert answer_kind("木星有多少颗卫星？") == "number"


def test_a_similarity_model_lets_a_paraphrase_answer():
    rover = Source(
        "c1",
        "The rover weighs 180 kilograms. A fully charged battery gives it a range of 65 kilometres on flat ground.",
        "The Northfield rover",
    )

    def similarity(question: str, sentences: list[str]) -> list[float]:
        return [0.7 if "range" in s else 0.2 for s in sentences]

    chosen = select("How far can it go on one battery?", [rover], similarity=similarity)
    assert chosen.found
    assert "range of 65 kilometres" in chosen.best[0].text


def test_the_bar_counts_whole_chinese_words_not_their_parts():
    """jieba's search cut gives 澳大利亚 and its parts; a sentence holding the word once does not cover a
    question about the capital (首都), which it lacks."""
    botany = Source(
        "c1", "以至于1998年劳瑞处理了一部分他的澳大利亚北部种类的修订。这些植物生长在沿海地区。", "植物学家"
    )
    others = [Source(f"c{i + 2}", f"第{i}号标本保存在博物馆的第{i}个柜子里。") for i in range(150)]
    assert not select("澳大利亚的首都是哪座城市？", [botany, *others]).found
    answered = select("劳瑞在哪一年修订了澳大利亚北部的种类？", [botany])
    assert answered.found
    assert "1998年" in answered.best[0].text


def test_a_second_short_sentence_close_in_score_joins_the_answer():
    """Chinese sentences are short: the two best together stay under the length a quote may have."""
    source = Source("c1", "范廷颂于1940年晋铎。1963年他被任为主教。1990年他被擢升为枢机。", "范廷颂")
    chosen = select("范廷颂是什么时候被任为主教的？", [source], weights=Weights(companion=0.0, companion_chars=110))
    assert len(chosen.best) == 2
    assert chosen.best[0].text == "1963年他被任为主教。"
    alone = select("范廷颂是什么时候被任为主教的？", [source], weights=Weights(companion=0.0, companion_chars=10))
    assert [c.text for c in alone.best] == ["1963年他被任为主教。"]


def test_words_without_the_meaning_do_not_clear_the_bar_when_a_sentence_model_disagrees():
    capital = Source(
        "c1", "In the 1880s, Helena (the current state capital) had more millionaires per capita than any city."
    )
    weights = Weights(min_coverage=0.45, agree_similarity=0.3, min_similarity=0.5)

    def unrelated(question: str, sentences: list[str]) -> list[float]:
        return [0.15 for _ in sentences]

    def related(question: str, sentences: list[str]) -> list[float]:
        return [0.6 for _ in sentences]

    question = "What is the state capital?"
    assert select(question, [capital], weights=weights, similarity=related).found
    assert not select(question, [capital], weights=weights, similarity=unrelated).found


def test_only_a_long_quote_is_trimmed_and_the_trim_keeps_what_is_asked():
    clauses = [
        "In 1827, soon after the death of his youngest sister Emilia, the family moved to lodgings across the street",
        "in a building that later housed the Academy of Fine Arts",
        "where the young composer wrote most of the works of his Warsaw years",
        "and where he received friends from the conservatory every Sunday afternoon",
        "until he departed for Vienna in 1830",
    ]
    sentence = ", ".join(clauses) + "."
    assert len(sentence) > TRIM_ABOVE
    question = "When did he depart for Vienna?"
    chosen = select(question, [Source("c1", sentence)])
    quote = trim(chosen.best[0], question, chosen.question_terms)
    assert "1830" in quote
    assert quote.startswith("…")
    assert len(quote) < len(sentence)
    short = ", ".join(clauses[:2]) + "."
    assert len(short) <= TRIM_ABOVE
    kept = select("When did the family move across the street?", [Source("c1", short)])
    assert trim(kept.best[0], "When did the family move across the street?", kept.question_terms) == short


COLLEGE = Source(
    "c1",
    "The College of Arts and Letters was founded in 1842. The first degrees from the college were awarded in 1849. "
    "Its first dean, a priest from France, taught Latin and Greek.",
    "Notre Dame > History",
)


def test_a_question_asking_for_a_year_gets_the_year_alone():
    question = "In what year were the first degrees awarded?"
    chosen = select(question, [COLLEGE])
    assert chosen.best[0].text == "The first degrees from the college were awarded in 1849."
    assert answer_span(chosen.best[0], question, chosen.question_terms) == "1849"


def test_the_sentence_stays_whole_when_the_question_asks_for_no_kind_or_two_parts_hold_it():
    what = "What did the first dean of the college teach?"
    chosen = select(what, [COLLEGE])
    assert chosen.best[0].text.startswith("Its first dean")
    assert answer_span(chosen.best[0], what, chosen.question_terms) is None
    two_years = Source("c1", "The college was founded in 1842, and its first degrees were awarded in 1849.")
    when = "When was the college founded?"
    chosen = select(when, [two_years])
    assert chosen.found
    assert answer_span(chosen.best[0], when, chosen.question_terms) is None


def test_irregular_verbs_meet_their_base_form():
    assert stem("wrote") == stem("write") == stem("written")
    assert stem("became") == stem("become")
    assert stem("died") == stem("die")


# A sentence that quotes the question (a command line showing it, a FAQ heading) holds all of its words and
# answers nothing: the words it shares with the question are the quoted question's own.
CLI_LINE = Source(
    "c1",
    'From the command line: `ragline ask "How do I resume a stream?"`. Over HTTP, create a session with '
    "`POST /api/v1/sessions` and then post the question to its questions route.",
    "Getting started with ragline > Asking a question",
)
RESUME = Source(
    "c2",
    "To resume a stream after a network failure, reconnect to the same events URL and send the `Last-Event-ID` "
    "header with the last sequence number you received. The server sends only the events after it.",
    "Streaming answers and resuming them > Resuming after a disconnect",
)


@pytest.mark.parametrize(
    "question", ["How do I resume a stream?", "how do i resume a STREAM", "How do I resume a stream"]
)
def test_a_sentence_that_merely_contains_the_question_is_never_the_answer(question):
    chosen = select(question, [CLI_LINE, RESUME])
    assert chosen.found
    assert all("ragline ask" not in c.text for c in chosen.best), [c.text for c in chosen.best]
    assert "Last-Event-ID" in chosen.best[0].text


def test_a_sentence_quoting_the_question_is_not_chosen_by_the_sentence_model_either():
    def similarity(question: str, sentences: list[str]) -> list[float]:
        # A sentence model sees the question in the quoting sentence: it scores it highest of all.
        return [0.95 if question.rstrip("?") in s else 0.6 for s in sentences]

    chosen = select("How do I resume a stream?", [CLI_LINE, RESUME], similarity=similarity)
    assert all("ragline ask" not in c.text for c in chosen.best), [c.text for c in chosen.best]


def test_a_sentence_quoting_the_question_alone_is_not_found():
    assert not select("How do I resume a stream?", [CLI_LINE]).found
