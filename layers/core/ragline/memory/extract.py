"""Extraction: the durable facts a completed turn reveals about the user, stored as memories.

With a generative chat model, ``memory_extraction.yaml#default`` asks it for a JSON list of short facts
about the user. Without one — the embedded default answers by quoting sources and cannot follow an
instruction — a conservative heuristic reads first-person statements in the user's message ("I work at",
"my name is", "我叫", ...). Either way the facts are sentences about "the user", so the prompt they later
join reads the same whoever wrote them.

Memory is opt-in per request, and extraction never fails a turn: errors are logged and nothing is stored.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ragline.config import PromptTemplates, render_placeholders
from ragline.memory.models import Memory, memory_enabled, new_memory
from ragline.memory.store import MemoryStore
from ragline.memory.text import embedding_text, normalise_memory
from ragline.models.base import ChatMessage, ChatModel, Embedder, collect, strip_think_tags
from ragline.observability import failed_call
from ragline.types import ChatManage, ChatOptions

logger = logging.getLogger(__name__)

TEMPLATE_FILE = "memory_extraction"
DEFAULT_TEMPLATE_ID = "default"
MAX_FACTS_PER_TURN = 5
MAX_FACT_CHARS = 200
# What the extraction prompt quotes of the turn: facts about the user sit in what they wrote, so the
# message gets more room than the answer.
MAX_MESSAGE_CHARS = 4000
MAX_ANSWER_CHARS = 2000
EXTRACTION_OPTIONS = ChatOptions(temperature=0.0, max_tokens=300, thinking=False)

_FENCED = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_WHITESPACE = re.compile(r"\s+")
_QUOTES = "\"'“”‘’`"
_FACT_KEYS = ("fact", "content", "text", "memory")
_LIST_KEYS = ("facts", "memories", "items")

# Never remembered, whoever proposes it: secrets and identifiers whose leak would harm the user.
_SENSITIVE = re.compile(
    r"\b(?:password|passcode|passphrase|pin(?: code)?|api[ _-]?key|access key|secret|token|credit card|"
    r"card number|cvv|ssn|social security|iban|bank account|account number)\b|密码|口令|密钥|信用卡|卡号|身份证|银行账",
    re.IGNORECASE,
)


def _clean_fact(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip().strip(_QUOTES).strip()


def _keep(facts: Iterable[str]) -> list[str]:
    """Non-empty, short, not sensitive, each once, at most :data:`MAX_FACTS_PER_TURN`."""
    kept: list[str] = []
    seen: set[str] = set()
    for fact in facts:
        cleaned = _clean_fact(fact)
        key = normalise_memory(cleaned)
        if not key or len(cleaned) > MAX_FACT_CHARS or _SENSITIVE.search(cleaned) or key in seen:
            continue
        seen.add(key)
        kept.append(cleaned)
        if len(kept) == MAX_FACTS_PER_TURN:
            break
    return kept


# ---------------------------------------------------------------------------------------- model output


def _json_candidates(raw: str) -> list[str]:
    text = strip_think_tags(raw)
    candidates = [block.strip() for block in _FENCED.findall(text)]
    start, end = text.find("["), text.rfind("]")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    candidates.append(text)
    return candidates


def _fact_items(value: Any) -> list[str] | None:
    """A list of facts from a parsed value.

    A list of strings (or of {"fact": ...}), or an object holding one under "facts"/"memories"/"items"; None when the
    value has no such shape.
    """
    if isinstance(value, dict):
        for key in _LIST_KEYS:
            if isinstance(value.get(key), list):
                return _fact_items(value[key])
        return None
    if not isinstance(value, list):
        return None
    facts: list[str] = []
    for item in value:
        if isinstance(item, str):
            facts.append(item)
        elif isinstance(item, dict):
            facts.extend(str(item[key]) for key in _FACT_KEYS if isinstance(item.get(key), str))
    return facts


def parse_facts(raw: str) -> list[str]:
    """The facts in a model's reply, tolerating reasoning tags, code fences and prose around the JSON.

    Anything that is not a JSON list of facts yields ``[]``: a reply we cannot read is not a memory.
    """
    for candidate in _json_candidates(raw):
        try:
            parsed = json.loads(candidate)
        except ValueError:
            continue
        facts = _fact_items(parsed)
        if facts is not None:
            return _keep(facts)
    return []


# ------------------------------------------------------------------------------------------- heuristic

# Sentences end at . ! ? followed by a space (so "Python 3.11" and "Acme Inc. in Lyon" stay whole),
# at the Chinese full stops, or at a line break.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")
# Clauses: Chinese and semicolon breaks always; English commas and conjunctions only before a new
# first-person statement, so "I live in Portland, Oregon" stays one clause.
_CLAUSE_BREAK = re.compile(
    r"[，；;]\s*|,\s*(?:(?:and|but)\s+)?(?=(?:i|my)\b)|\s+(?:and|but)\s+(?=(?:i|my)\b)", re.IGNORECASE
)
_EN_FILLER = re.compile(
    r"^(?:(?:hi|hello|hey|well|also|btw|by the way|fyi|actually|so|oh|ok|okay|and|but|please|"
    r"for the record|just so you know|(?:please )?(?:remember|note)(?: that)?)\b[\s,!:.-]*)+",
    re.IGNORECASE,
)
_ZH_FILLER = re.compile(r"^(?:你好|您好|嗨|哈喽|另外|还有|顺便说一下|顺便|请记住|记住|请注意|对了)[，,！!：:\s]*")
_EN_QUESTION_START = re.compile(
    r"^(?:what|who|whom|whose|where|when|why|how|which|is|are|am|was|were|do|does|did|can|could|should|"
    r"would|will|shall|may|might|have|has|had|isn't|aren't|don't|doesn't|didn't|won't|can't|couldn't)\b",
    re.IGNORECASE,
)
_ZH_QUESTION = re.compile(r"什么|怎么|怎样|为什么|为何|哪|谁|几|多少|是否|能否|是不是|有没有|可不可以|[吗呢么]$")
_TERMINATORS = ".!?。！？ "
# "..., please" and "... thanks" end a request, not a fact.
_POLITE_ENDING = re.compile(r"[,\s]*\b(?:please|thanks|thank you)\s*$", re.IGNORECASE)
_TRAILING = ".,;:!?。，；：！？…\"'“”‘’ "


def _en(pattern: str) -> re.Pattern[str]:
    """A rule over a whole clause (the Chinese rules only anchor at the start)."""
    return re.compile(f"{pattern}$", re.IGNORECASE)


# First-person statement → fact about the user. ``x`` is the rest of the clause, kept as written.
_EN_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (_en(r"my name is (?P<x>.+)"), "The user's name is {x}."),
    (_en(r"(?:call me|i go by) (?P<x>.+)"), "The user wants to be called {x}."),
    (_en(r"i(?: am|'m) called (?P<x>.+)"), "The user's name is {x}."),
    (_en(r"i work (?P<prep>at|for|in|on|as) (?P<x>.+)"), "The user works {prep} {x}."),
    (_en(r"i(?: am|'m) working (?P<prep>at|for|as) (?P<x>.+)"), "The user works {prep} {x}."),
    (_en(r"i(?: am|'m)? liv(?:e|ing) in (?P<x>.+)"), "The user lives in {x}."),
    (_en(r"i(?: am|'m) (?:originally )?from (?P<x>.+)"), "The user is from {x}."),
    (_en(r"i(?: am|'m) based in (?P<x>.+)"), "The user is based in {x}."),
    (_en(r"i(?: am|'m) allergic to (?P<x>.+)"), "The user is allergic to {x}."),
    (_en(r"i(?: would|'d)? prefer (?P<x>.+)"), "The user prefers {x}."),
    (_en(r"i (?:really )?(?:like|love|enjoy) (?!to\b)(?P<x>.+)"), "The user likes {x}."),
    (_en(r"i use (?P<x>.+)"), "The user uses {x}."),
    (_en(r"i speak (?P<x>.+)"), "The user speaks {x}."),
    (_en(r"i(?: am|'m) (?P<a>an?) (?!(?:bit|little|lot)\b)(?P<x>.+)"), "The user is {a} {x}."),
    (_en(r"my (?P<noun>[a-z][a-z -]{0,30}?) (?P<verb>is|are) (?P<x>.+)"), "The user's {noun} {verb} {x}."),
)
_ZH_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"我的名字(?:是|叫)(?P<x>.+)"), "The user's name is {x}."),
    (re.compile(r"我叫(?P<x>.+)"), "The user's name is {x}."),
    (re.compile(r"我(?:在|于)(?P<x>.+?)(?:工作|上班|任职)"), "The user works at {x}."),
    (re.compile(r"我(?:在|于)(?P<x>.+?)(?:上学|读书|念书)"), "The user studies at {x}."),
    (re.compile(r"我(?:住在|生活在|居住在)(?P<x>.+)"), "The user lives in {x}."),
    (re.compile(r"我(?:在|于)(?P<x>.+?)(?:生活|居住)"), "The user lives in {x}."),
    (re.compile(r"我来自(?P<x>.+)"), "The user is from {x}."),
    (re.compile(r"我(?:更喜欢|偏好)(?P<x>.+)"), "The user prefers {x}."),
    (re.compile(r"我(?:喜欢|爱)(?P<x>.+)"), "The user likes {x}."),
    (re.compile(r"我的(?P<noun>[^的，,]{1,10}?)是(?P<x>.+)"), "The user's {noun} is {x}."),
    # "我是" also opens "I wanted to ask", "it's my first time", "I think": those continuations are refused.
    (
        re.compile(r"我是(?!想|要|说|问|来|在|不|第|刚|真|很|有|觉得|因为|用|否|这|那|谁|什么)(?P<x>.+)"),
        "The user is {x}.",
    ),
)
# "my question is ..." and "我的问题是 ..." are about the conversation, not about the user.
_TRANSIENT_NOUN_LIST = """
    question problem issue point request query guess concern doubt understanding answer mistake apologies
    code error output task idea thought feeling worry fault turn bad pleasure
    问题 疑问 意思 想法 错误 代码 需求 任务 意见 建议
"""
_TRANSIENT_NOUNS = frozenset(_TRANSIENT_NOUN_LIST.split())
# An object that only makes sense in this conversation ("I like your answer", "I prefer this").
_DEICTIC = re.compile(r"^(?:it|this|that|these|those|them)\b|\byours?\b", re.IGNORECASE)
# The user's own words inside the fact, turned to the third person.
_PRONOUNS = (
    (re.compile(r"\bI(?: am|'m)\b"), "they are"),
    (re.compile(r"\bI\b"), "they"),
    (re.compile(r"\bmyself\b", re.IGNORECASE), "themselves"),
    (re.compile(r"\bmine\b", re.IGNORECASE), "theirs"),
    (re.compile(r"\bmy\b", re.IGNORECASE), "their"),
    (re.compile(r"\bme\b", re.IGNORECASE), "them"),
)


def _sentences(message: str) -> list[str]:
    text = message.replace("’", "'")
    return [s.strip() for s in _SENTENCE_BREAK.split(text) if s and s.strip()]


def _without_fillers(text: str) -> str:
    return _ZH_FILLER.sub("", _EN_FILLER.sub("", text.strip())).strip()


def _is_question(sentence: str) -> bool:
    text = _without_fillers(sentence)
    if text.endswith(("?", "？")) or _EN_QUESTION_START.match(text):
        return True
    return _ZH_QUESTION.search(text.rstrip(_TERMINATORS)) is not None


def _third_person(text: str) -> str:
    for pattern, replacement in _PRONOUNS:
        text = pattern.sub(replacement, text)
    return text


def _fact_from_clause(clause: str) -> str | None:
    text = _without_fillers(clause).rstrip(_TRAILING)
    if not text:
        return None
    for pattern, template in (*_EN_RULES, *_ZH_RULES):
        match = pattern.match(text)
        if match is None:
            continue
        parts = match.groupdict()
        x = _POLITE_ENDING.sub("", parts["x"]).strip().rstrip(_TRAILING)
        noun = parts.get("noun")
        if not x or _DEICTIC.search(x) or (noun is not None and noun.strip().lower() in _TRANSIENT_NOUNS):
            return None
        values = {name: (value or "").strip().lower() for name, value in parts.items() if name != "x"}
        return template.format(x=_third_person(x), **values)
    return None


def heuristic_facts(message: str) -> list[str]:
    """Facts stated in the first person in ``message``; questions are never read for facts.

    Conservative on purpose: a missed fact costs one repetition by the user, a wrong one is repeated
    to them in every later answer.
    """
    facts: list[str] = []
    for sentence in _sentences(message):
        if _is_question(sentence):
            continue
        for clause in _CLAUSE_BREAK.split(sentence):
            fact = _fact_from_clause(clause)
            if fact is not None:
                facts.append(fact)
    return _keep(facts)


# ------------------------------------------------------------------------------------------- extractor


@dataclass(frozen=True)
class CompletedTurn:
    """What extraction needs from a finished turn; ``memory_enabled`` is the request's opt-in."""

    tenant_id: str
    user_id: str
    user_message: str
    answer: str = ""
    session_id: str = ""
    message_id: str = ""
    memory_enabled: bool = False

    @classmethod
    def from_chat(cls, cm: ChatManage) -> CompletedTurn:
        """The turn as the pipeline leaves it: the question, the final answer, the user message's id."""
        request = cm.request
        return cls(
            tenant_id=request.tenant_id,
            user_id=request.user_id,
            user_message=request.query,
            answer=cm.state.chat_response,
            session_id=request.session_id,
            message_id=request.user_message_id or cm.context.user_message_id,
            memory_enabled=memory_enabled(request),
        )


class MemoryExtractor:
    """Turns a completed turn into stored memories.

    Give it ``chat_model`` and ``templates`` only when the chat model is generative; with neither it
    uses :func:`heuristic_facts`. ``embedder`` gives the memories vectors; without one they are recalled
    by keywords only.
    """

    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder | None = None,
        chat_model: ChatModel | None = None,
        templates: PromptTemplates | None = None,
        template_id: str = DEFAULT_TEMPLATE_ID,
    ) -> None:
        """An extractor writing into ``store``, with the optional models described above."""
        self._store = store
        self._embedder = embedder
        self._chat_model = chat_model
        self._templates = templates
        self._template_id = template_id

    async def extract_facts(self, user_message: str, answer: str = "") -> list[str]:
        """Facts about the user in this exchange; ``[]`` on any failure."""
        if not user_message.strip():
            return []
        try:
            if self._chat_model is None or self._templates is None:
                return heuristic_facts(user_message)
            return await self._model_facts(self._chat_model, self._templates, user_message, answer)
        except Exception:
            logger.warning("memory extraction failed", exc_info=True)
            return []

    async def _model_facts(
        self, model: ChatModel, templates: PromptTemplates, user_message: str, answer: str
    ) -> list[str]:
        template = templates.get(TEMPLATE_FILE, self._template_id)
        prompt = render_placeholders(
            template, {"query": user_message[:MAX_MESSAGE_CHARS], "answer": answer[:MAX_ANSWER_CHARS]}
        )
        reply = await collect(model, [ChatMessage("user", prompt)], EXTRACTION_OPTIONS)
        return parse_facts(reply.content)

    async def remember(self, turn: CompletedTurn) -> list[Memory]:
        """Extract and store the turn's facts when the turn opted in.

        Returns what was stored (a restated fact comes back as the memory it updated). Never raises.
        """
        if not turn.memory_enabled:
            return []
        facts = await self.extract_facts(turn.user_message, turn.answer)
        if not facts:
            return []
        try:
            return await asyncio.to_thread(self._store_facts, turn, facts)
        except Exception as exc:  # the turn is answered; the memories are lost, and the log says which call failed
            logger.error(
                "memories not stored: the turn stays answered",
                exc_info=True,
                extra={"session_id": turn.session_id, "message_id": turn.message_id, **failed_call(exc)},
            )
            return []

    async def remember_turn(self, cm: ChatManage) -> list[Memory]:
        """:meth:`remember` for a turn the pipeline just completed."""
        return await self.remember(CompletedTurn.from_chat(cm))

    def _store_facts(self, turn: CompletedTurn, facts: Sequence[str]) -> list[Memory]:
        vectors: list[Any] = [None] * len(facts)
        embedding_model = ""
        if self._embedder is not None:
            try:
                vectors = list(self._embedder.embed_documents([embedding_text(fact) for fact in facts]))
                embedding_model = self._embedder.model_id
            except Exception:
                # Keyword recall still finds them; the next restatement brings a vector.
                logger.warning("embedding memories failed; storing them without vectors", exc_info=True)
        stored: list[Memory] = []
        for fact, vector in zip(facts, vectors, strict=True):
            memory = new_memory(turn.tenant_id, turn.user_id, fact, turn.session_id, turn.message_id)
            if vector is not None:
                memory = memory.model_copy(update={"embedding_model": embedding_model})
            stored.append(self._store.add(memory, vector))
        return stored
