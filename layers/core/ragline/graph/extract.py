"""Extraction: entity names from a question, entities and relations from a passage.

With a generative chat model both use ``graph_extraction.yaml``: ``extract_entity`` asks for a JSON array
of names, ``extract_graph`` for ``{"entities": [...], "relations": [...]}``. Replies are read tolerantly
(reasoning tags, code fences, prose around the JSON, output cut by the token limit) and cleaned; a reply
that cannot be read yields nothing. Extraction is an enhancement: it never raises.

Without a generative model (the embedded default, ``local:extractive``, answers by quoting sources and
cannot follow an instruction):
- questions use a conservative heuristic, :func:`heuristic_entities`: quoted terms and runs of two or more
  capitalised words ("Acme Corp", "New York City"). Han text is taken only when quoted (「」《》“”"):
  jieba cuts common words ("公司", "什么") as readily as names, and a common word would match every node
  that contains it, so unquoted Chinese is left to chunk search;
- passages are not extracted at all (``([], [])``): a graph built by guessing would feed wrong relations
  to every later answer, while an empty graph only leaves the work to chunk search.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from typing import Any

from ragline.config import PromptTemplates, render_placeholders
from ragline.graph.store import Entity, Relation, clean_relation, normalise_name
from ragline.models.base import ChatMessage, ChatModel, is_generative, strip_think_tags
from ragline.models.registry import ModelRegistry, UnknownModel
from ragline.types import ChatOptions

logger = logging.getLogger(__name__)

TEMPLATE_FILE = "graph_extraction"
ENTITY_TEMPLATE_ID = "extract_entity"
GRAPH_TEMPLATE_ID = "extract_graph"

MAX_QUERY_ENTITIES = 10
MAX_ENTITIES_PER_CHUNK = 30
MAX_RELATIONS_PER_CHUNK = 50
MAX_NAME_CHARS = 100
MAX_TYPE_CHARS = 50
MAX_DESCRIPTION_CHARS = 500
MAX_RELATION_CHARS = 100
# What the prompt quotes: a chunk is ~800 characters; a longer text is cut rather than overflowing the model.
MAX_PASSAGE_CHARS = 4000
MAX_QUERY_CHARS = 1000
# Deterministic, no reasoning (it would eat the budget); budgets fit a name list and a chunk's graph.
ENTITY_OPTIONS = ChatOptions(temperature=0.0, max_tokens=200, thinking=False)
GRAPH_OPTIONS = ChatOptions(temperature=0.0, max_tokens=1500, thinking=False)
# Chat models that cannot follow an extraction prompt.

_FENCE = re.compile(r"```[a-zA-Z]*")
# A complete JSON string literal; a truncated one (no closing quote) does not match.
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
# A complete object without nested objects: how entities and relations look inside the reply.
_FLAT_OBJECT = re.compile(r"\{[^{}]*\}")
_QUOTES = "\"'“”‘’`「」『』《》"

_NAME_KEYS = ("name", "entity", "text")
_TYPE_KEYS = ("type", "entity_type", "category", "label")
_DESCRIPTION_KEYS = ("description", "desc", "summary")
_SOURCE_KEYS = ("source", "from", "head", "subject")
_TARGET_KEYS = ("target", "to", "tail", "object")
_RELATION_KEYS = ("relation", "relationship", "type", "predicate", "label", "description")
_ENTITY_LIST_KEYS = ("entities", "nodes", "names")
_RELATION_LIST_KEYS = ("relations", "relationships", "edges")


# ------------------------------------------------------------------------------------------- cleaning


def _clean_text(value: object, limit: int) -> str:
    text = " ".join(value.split()).strip(_QUOTES).strip() if isinstance(value, str) else ""
    return text if len(text) <= limit else ""


def _first(item: dict[str, Any], keys: Iterable[str]) -> object:
    for key in keys:
        value = item.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return ""


def clean_entity_names(names: Iterable[object], limit: int = MAX_QUERY_ENTITIES) -> list[str]:
    """Trimmed, quote-stripped, not too long, each once (case-insensitively), at most ``limit``."""
    kept: dict[str, str] = {}
    for raw in names:
        name = _clean_text(raw, MAX_NAME_CHARS)
        key = normalise_name(name)
        if key and key not in kept:
            kept[key] = name
        if len(kept) == limit:
            break
    return list(kept.values())


def _clean_graph(
    raw_entities: Iterable[object], raw_relations: Iterable[object]
) -> tuple[list[Entity], list[Relation]]:
    """Entities named, each once, capped; relations only between those entities, never a self-loop."""
    entities: dict[str, Entity] = {}
    for item in raw_entities:
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, dict):
            continue
        name = _clean_text(_first(item, _NAME_KEYS), MAX_NAME_CHARS)
        key = normalise_name(name)
        if not key or key in entities:
            continue
        entities[key] = Entity(
            name=name,
            type=_clean_text(_first(item, _TYPE_KEYS), MAX_TYPE_CHARS),
            description=" ".join(str(_first(item, _DESCRIPTION_KEYS)).split())[:MAX_DESCRIPTION_CHARS],
        )
        if len(entities) == MAX_ENTITIES_PER_CHUNK:
            break
    relations: dict[tuple[str, str, str], Relation] = {}
    for item in raw_relations:
        if not isinstance(item, dict):
            continue
        source = entities.get(normalise_name(_clean_text(_first(item, _SOURCE_KEYS), MAX_NAME_CHARS)))
        target = entities.get(normalise_name(_clean_text(_first(item, _TARGET_KEYS), MAX_NAME_CHARS)))
        if source is None or target is None or source is target:
            continue
        label = clean_relation(_clean_text(_first(item, _RELATION_KEYS), MAX_RELATION_CHARS))
        edge = (normalise_name(source.name), normalise_name(target.name), label)
        if edge not in relations:
            relations[edge] = Relation(source=source.name, target=target.name, relation=label)
        if len(relations) == MAX_RELATIONS_PER_CHUNK:
            break
    return list(entities.values()), list(relations.values())


# -------------------------------------------------------------------------------------------- parsing


def _strip_wrapping(raw: str) -> str:
    return _FENCE.sub("", strip_think_tags(raw)).strip()


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _from_first(text: str, opener: str) -> str:
    start = text.find(opener)
    return text[start:] if start >= 0 else ""


def parse_entity_names(raw: str) -> list[str]:
    """Names from an ``extract_entity`` reply, tolerant of cut and wrapped replies.

    Names from an ``extract_entity`` reply: a JSON array of strings (or of ``{"name": ...}``), or an object holding one
    under ``entities``. A reply cut mid-array keeps its complete strings; prose yields ``[]``.
    """
    text = _strip_wrapping(raw)
    start, end = text.find("["), text.rfind("]")
    for candidate in (text, text[start : end + 1] if 0 <= start < end else ""):
        parsed = _loads(candidate) if candidate else None
        if isinstance(parsed, dict):
            parsed = next((parsed[k] for k in _ENTITY_LIST_KEYS if isinstance(parsed.get(k), list)), None)
        if isinstance(parsed, list):
            return clean_entity_names(
                item if isinstance(item, str) else _first(item, _NAME_KEYS) if isinstance(item, dict) else ""
                for item in parsed
            )
    # Truncated (or invalid, as with a trailing comma): the complete items inside the array. Only what
    # lies within its brackets counts, so quoted words in prose around it are not taken for names.
    region = text[start : end + 1] if 0 <= start < end else _from_first(text, "[")
    if not region:
        return []
    if "{" in region:
        objects = (_loads(m.group(0)) for m in _FLAT_OBJECT.finditer(region))
        return clean_entity_names(_first(o, _NAME_KEYS) for o in objects if isinstance(o, dict))
    return clean_entity_names(_decode_string(m.group(0)) for m in _STRING.finditer(region))


def _decode_string(literal: str) -> str:
    decoded = _loads(literal)
    return decoded if isinstance(decoded, str) else ""


def parse_graph(raw: str) -> tuple[list[Entity], list[Relation]]:
    """Entities and relations from an ``extract_graph`` reply, cleaned (see :func:`_clean_graph`).

    A reply cut by the token limit keeps every complete entity and relation object written before the cut:
    objects with a name are entities, objects with a source and a target are relations.
    """
    text = _strip_wrapping(raw)
    start, end = text.find("{"), text.rfind("}")
    for candidate in (text, text[start : end + 1] if 0 <= start < end else ""):
        parsed = _loads(candidate) if candidate else None
        if isinstance(parsed, dict):
            raw_entities: list[Any] = next(
                (parsed[k] for k in _ENTITY_LIST_KEYS if isinstance(parsed.get(k), list)), []
            )
            raw_relations: list[Any] = next(
                (parsed[k] for k in _RELATION_LIST_KEYS if isinstance(parsed.get(k), list)), []
            )
            return _clean_graph(raw_entities, raw_relations)
    opened = _from_first(text, "{")
    if not opened:
        return [], []
    objects = [o for o in (_loads(m.group(0)) for m in _FLAT_OBJECT.finditer(opened[1:])) if isinstance(o, dict)]
    relations = [o for o in objects if _first(o, _SOURCE_KEYS) and _first(o, _TARGET_KEYS)]
    entities = [o for o in objects if o not in relations and _first(o, _NAME_KEYS)]
    return _clean_graph(entities, relations)


# ------------------------------------------------------------------------------------------ heuristic

_QUOTED = re.compile(
    r'"([^"\n]{2,100})"|“([^”\n]{2,100})”|「([^」\n]{2,100})」|《([^》\n]{2,100})》|『([^』\n]{2,100})』'
)
# Single quotes only around a phrase that does not start or end inside a word: "don't" is not a quote.
_SINGLE_QUOTED = re.compile(r"(?<!\w)'([^'\n]{2,100})'(?!\w)")
_CAPITALISED = re.compile(r"[A-Z][\w&'.-]*")
_WORD = re.compile(r"\S+")
# Capitalised because they open a sentence or a question, not because they name something.
_NOT_NAME_WORD_LIST = """
    a an the this that these those what which who whom whose where when why how is are was were do does did
    can could should would will shall may might must has have had please tell explain describe list show
    give compare i my we our you your it its in on at of for to from by with about and or but if
"""
_NOT_NAME_WORDS = frozenset(_NOT_NAME_WORD_LIST.split())
# Connectors allowed inside a name ("Bank of America", "Johnson & Johnson") but never at its ends; not
# "and", which joins two names more often than it belongs to one.
_NAME_CONNECTORS = frozenset({"of", "de", "du", "der", "la", "le", "van", "von", "&"})
_TRAILING_PUNCT = ".,;:!?)]}"
_MIN_NAME_WORDS = 2


def _bare(word: str) -> str:
    return word.strip(_TRAILING_PUNCT + "([{\"'“”")


def _capitalised_runs(text: str) -> list[str]:
    """Runs of two or more capitalised words, connectors allowed inside; a run ends at punctuation."""
    names: list[str] = []
    run: list[str] = []

    def close() -> None:
        while run and run[-1].lower() in _NAME_CONNECTORS:
            run.pop()
        if len([w for w in run if w.lower() not in _NAME_CONNECTORS]) >= _MIN_NAME_WORDS:
            names.append(" ".join(run))
        run.clear()

    for match in _WORD.finditer(text):
        raw = match.group(0)
        word = _bare(raw)
        capitalised = bool(_CAPITALISED.fullmatch(word)) and word.lower() not in _NOT_NAME_WORDS
        if capitalised or (run and word.lower() in _NAME_CONNECTORS):
            run.append(word)
        else:
            close()
        if raw.rstrip(_TRAILING_PUNCT) != raw:
            close()  # "Acme Corp, Globex Inc" are two names
    close()
    return names


def heuristic_entities(query: str) -> list[str]:
    """Entity names of a question found without a model: quoted terms and capitalised names.

    Quoted terms and capitalised multi-word names of a question; conservative on purpose (a wrong name sends graph hits
    of something else to rerank, a missed one only leaves the question to chunk search).
    """
    quoted: list[str] = []
    for match in (*_QUOTED.finditer(query), *_SINGLE_QUOTED.finditer(query)):
        quoted.append(next(group for group in match.groups() if group))
    return clean_entity_names([*quoted, *_capitalised_runs(query)])


# ------------------------------------------------------------------------------------------ extractor


class GraphExtractor:
    """Runs the extraction prompts on a chat model (``model_id``: "" for the registry's default)."""

    def __init__(self, models: ModelRegistry, templates: PromptTemplates, model_id: str = "") -> None:
        """An extractor asking ``model_id`` (the default chat model when "") with the ``graph_extraction`` prompts."""
        self._models = models
        self._templates = templates
        self._model_id = model_id

    def generative_model(self, model_id: str = "") -> ChatModel | None:
        """The chat model to extract with, or None when there is none that can follow a prompt."""
        try:
            model = self._models.chat_model(model_id or self._model_id)
        except UnknownModel:
            return None
        return model if is_generative(model) else None

    async def extract_entities(self, query: str, model_id: str = "") -> list[str]:
        """Entity names the question is about; ``[]`` on any failure."""
        if not query.strip():
            return []
        try:
            model = self.generative_model(model_id)
            if model is None:
                return heuristic_entities(query)
            prompt = render_placeholders(
                self._templates.get(TEMPLATE_FILE, ENTITY_TEMPLATE_ID), {"query": query[:MAX_QUERY_CHARS]}
            )
            reply = await model.chat([ChatMessage("user", prompt)], ENTITY_OPTIONS)
            return parse_entity_names(reply.content)
        except Exception:
            logger.warning("entity extraction failed", exc_info=True, extra={"stage": "query_understand"})
            return []

    async def extract_graph(self, chunk_text: str, model_id: str = "") -> tuple[list[Entity], list[Relation]]:
        """Entities and relations of one passage; ``([], [])`` without a generative model or on any failure."""
        if not chunk_text.strip():
            return [], []
        try:
            model = self.generative_model(model_id)
            if model is None:
                return [], []
            prompt = render_placeholders(
                self._templates.get(TEMPLATE_FILE, GRAPH_TEMPLATE_ID), {"content": chunk_text[:MAX_PASSAGE_CHARS]}
            )
            reply = await model.chat([ChatMessage("user", prompt)], GRAPH_OPTIONS)
            return parse_graph(reply.content)
        except Exception:
            logger.warning("graph extraction failed", exc_info=True, extra={"stage": "graph_extraction"})
            return [], []
