"""Every word list that says which words carry no topic: one per language and purpose, each word written once.

A list is named for what it serves (search, the extractive answerer, query expansion, the rewrite check, memory
matching) because the purposes disagree on purpose: search keeps "whose" (a name can be one), the answerer drops
it; query expansion strips only the particles and question words a Chinese question starts with, the answerer
every function word; memory matching drops "user", which every memory starts with. The shared cores below are
the words the lists have in common.
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# -- English ----------------------------------------------------------------------------------------------------

# Words too common to say what an English text is about: keyword queries (both engines), query expansion, keyword
# suggestions at enrichment, and the base of the answerer's and the rewrite check's lists.
SEARCH_STOPWORDS_EN = _words(
    """
    a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her here
    hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of
    off on once only or other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up very was we were what
    when where which while who whom why will with would you your yours yourself yourselves
    """
)

# The answerer also drops words that say nothing of what a sentence is about ("now" it keeps: "now known as").
ANSWER_STOPWORDS_EN = (SEARCH_STOPWORDS_EN - {"now"}) | _words(
    "also get got let many may might much must one ones per shall us whats whose"
)

# What any English question is made of, whatever it asks: its question word, its auxiliary, its politeness.
_QUESTION_CORE_EN = _words("what which who whom whose when where why how did does do is are was were please")
_REQUESTS_EN = _words("tell describe explain give")

# The answerer's question words: the core and the words that say what kind of answer is asked ("name the ...",
# "what type of ...", "is known as"), never what it is about.
QUESTION_WORDS_EN = _QUESTION_CORE_EN | _REQUESTS_EN | _words("name named list kind type called call known considered")

# The rewrite check's question words: beyond search's stop words, the core and the modal verbs and fillers a
# rewrite may add or drop without changing the topic.
REWRITE_QUESTION_WORDS_EN = _QUESTION_CORE_EN | _REQUESTS_EN | _words("can could would should show about there here")

# -- Chinese ----------------------------------------------------------------------------------------------------

_PARTICLES_ZH = _words("的 了 是 在 和 与 及 或 吗 呢 吧 啊")
_QUESTION_CORE_ZH = _words("什么 如何 怎么 为什么 哪些 哪个 是否 请问")
_DETERMINERS_ZH = _words("一个 这个 那个")

# Query expansion's keywords: a question's jieba words without its particles, question words and determiners.
EXPANSION_STOPWORDS_ZH = _PARTICLES_ZH | _QUESTION_CORE_ZH | _DETERMINERS_ZH

# The answerer's: every function word, question word and measure word a question and its answer may put
# differently ("哪一年" / "1998年"), so only what the question is about is compared.
ANSWER_STOPWORDS_ZH = EXPANSION_STOPWORDS_ZH | _words(
    """
    也 都 就 而 被 把 对 为 由 于 从 向 以 之 其 这 那 有 没有 哪 哪里 哪儿 哪位 哪一 哪一年 谁 多少 几 几个 怎样 何 何时
    何地 什么样 请 称为 叫 叫做 被称为 个 位 名 种 中 上 下 后 前 时 年代
    """
)

# Han characters that carry no topic (particles, pronouns, question words): the rewrite check compares Chinese
# character by character, with no segmentation.
TOPICLESS_HAN = frozenset("的了是在吗呢吧啊么什怎谁哪为和与及或也都就还又很我你他她它们这那个有没不请问一下")

# -- Memory (both languages) ------------------------------------------------------------------------------------

# Words that say nothing about which memory a question is about. "user" is here because every memory starts with
# "The user": it would make every memory overlap every question that mentions a user.
MEMORY_STOPWORDS = _words(
    """
    about am an and any are as at be been but by can could did do does for from had has have how in is it its me
    my myself of on or our please should so tell that the their them they this to us was we were what when where
    which who whom whose why will with would you your user users
    用户 什么 怎么 为什么 哪里 哪个 哪儿 是否 还是 一下 请问 我们 你们 他们 自己
    """
)
