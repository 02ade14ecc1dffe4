from ragline.answering.selection import Source, answer_kind, select

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
