"""Which local model a knowledge base's language takes: today's best for a new language, the same model while
the language stays (an upgrade re-embeds nothing by itself), an endpoint's model always."""

from ragline.ingest.language import (
    BGE_EN_MODEL,
    BGE_ZH_MODEL,
    E5_MODEL,
    ENSEMBLE_EN_MODEL,
    MINILM_MODEL,
    choose_embedding_model,
    preferred_embedding_model,
)


class Registered:
    def __init__(self, *ids: str) -> None:
        self.ids = list(ids)

    def has_embedder(self, model_id: str) -> bool:
        return model_id in self.ids

    def embedder_ids(self) -> list[str]:
        return self.ids


ALL = Registered(MINILM_MODEL, E5_MODEL, BGE_EN_MODEL, BGE_ZH_MODEL, ENSEMBLE_EN_MODEL)
PACKAGED = Registered(MINILM_MODEL, E5_MODEL)
LAYER = Registered(MINILM_MODEL, BGE_ZH_MODEL)  # what the AWS layer carries: no room for bge-small-en


def test_a_new_knowledge_base_takes_todays_model_for_its_language():
    # English reads with MiniLM and bge-small-en together (neither alone lifted hybrid search: README).
    assert choose_embedding_model("en", ALL, BGE_EN_MODEL, "") == ENSEMBLE_EN_MODEL
    assert choose_embedding_model("en", ALL, MINILM_MODEL, "") == ENSEMBLE_EN_MODEL
    assert choose_embedding_model("zh", ALL, MINILM_MODEL, "") == BGE_ZH_MODEL
    assert choose_embedding_model("mixed", ALL, MINILM_MODEL, "") == E5_MODEL
    # Without the Maven models (no Maven at install) the packaged ones serve.
    assert choose_embedding_model("en", PACKAGED, MINILM_MODEL, "") == MINILM_MODEL
    assert choose_embedding_model("zh", PACKAGED, MINILM_MODEL, "") == E5_MODEL
    assert choose_embedding_model("en", LAYER, MINILM_MODEL, "") == MINILM_MODEL
    assert choose_embedding_model("zh", LAYER, MINILM_MODEL, "") == BGE_ZH_MODEL


def test_a_knowledge_base_whose_language_stays_keeps_its_model():
    # A knowledge base embedded with MiniLM before the ensemble became English's model keeps MiniLM.
    assert choose_embedding_model("en", ALL, MINILM_MODEL, "en") == MINILM_MODEL
    assert choose_embedding_model("en", ALL, ENSEMBLE_EN_MODEL, "en") == ENSEMBLE_EN_MODEL
    assert choose_embedding_model("zh", ALL, E5_MODEL, "zh") == E5_MODEL
    assert choose_embedding_model("mixed", ALL, E5_MODEL, "mixed") == E5_MODEL


def test_a_change_of_language_takes_the_new_languages_model():
    assert choose_embedding_model("mixed", ALL, MINILM_MODEL, "en") == E5_MODEL
    assert choose_embedding_model("mixed", ALL, BGE_ZH_MODEL, "zh") == E5_MODEL


def test_an_endpoints_model_is_never_replaced():
    assert choose_embedding_model("zh", ALL, "text-embedding-3-small@http://x", "") == "text-embedding-3-small@http://x"
    assert preferred_embedding_model("", ALL) == ""
