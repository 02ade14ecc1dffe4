"""MergeConfig, trusted coordinates, image lists and the chunk lookup helper."""

import json

import pytest
from pydantic import ValidationError

from ragline.merge import MergeConfig
from ragline.merge.coordinates import chunk_coordinates_trusted, coordinates_trusted, is_original_revision
from ragline.merge.images import merge_image_info
from ragline.merge.lookup import load_chunks


def test_merge_config_defaults():
    config = MergeConfig()
    assert config.model_dump() == {
        "short_passage_chars": 350,
        "expand_target_chars": 850,
        "min_overlap_chars": 12,
        "overlap_window_chars": 400,
        "history_min_overlap": 0.3,
        "history_score_factor": 0.6,
        "history_max_references": 3,
        "partial_overlap_min_ratio": 0.85,
        "partial_overlap_max_size_ratio": 3.0,
    }


def test_merge_config_rejects_nonsense():
    with pytest.raises(ValidationError):
        MergeConfig(min_overlap_chars=0)
    with pytest.raises(ValidationError):
        MergeConfig(partial_overlap_min_ratio=1.5)
    with pytest.raises(ValidationError):
        MergeConfig(partial_overlap_max_size_ratio=0.5)
    assert MergeConfig.model_validate({"expand_target_chars": 1200}).expand_target_chars == 1200


def test_trusted_coordinates(make_result, make_chunk):
    assert coordinates_trusted(make_result("a", "0123456789", start_at=5, end_at=15))
    assert not coordinates_trusted(make_result("a", "0123456789", start_at=5, end_at=16))
    assert not coordinates_trusted(make_result("a", "0123456789", start_at=0, end_at=0))
    assert not coordinates_trusted(
        make_result("a", "0123456789", start_at=5, end_at=15, chunk_metadata={"revision": 1})
    )
    assert not coordinates_trusted(make_result("a", "0123456789", start_at=5, end_at=15, metadata={"revision": "3"}))
    assert not coordinates_trusted(
        make_result("a", "0123456789", start_at=5, end_at=15, metadata={"content_rewritten": "true"})
    )
    # Lengths count characters, not bytes.
    assert coordinates_trusted(make_result("a", "数据备份", start_at=0, end_at=4))
    assert chunk_coordinates_trusted(make_chunk("c", "abc", start_at=1, end_at=4, metadata={"revision": 0}))
    assert not chunk_coordinates_trusted(make_chunk("c", "abc", start_at=1, end_at=4, metadata={"revision": "x"}))
    assert is_original_revision({})
    assert is_original_revision({"revision": "0"})


def test_image_info_union_by_url():
    target = json.dumps([{"url": "a", "caption": "first"}, {"url": "b"}])
    source = json.dumps([{"url": "b", "caption": "dup"}, {"url": "c"}, {"caption": "no url"}])
    assert json.loads(merge_image_info(target, source)) == [
        {"url": "a", "caption": "first"},
        {"url": "b"},
        {"url": "c"},
    ]
    assert merge_image_info(target, "") == target
    assert merge_image_info(target, "not json") == target
    assert merge_image_info("not json", source) == source
    assert json.loads(merge_image_info("", source)) == [{"url": "b", "caption": "dup"}, {"url": "c"}]


def test_load_chunks_batches_unique_ids(make_chunk, lookup):
    lookup.add(make_chunk("a", "A"), make_chunk("b", "B"))
    found = load_chunks(lookup, ["a", "", "b", "a", "zz"])
    assert sorted(found) == ["a", "b"]
    assert lookup.calls == [["a", "b", "zz"]]
    assert load_chunks(lookup, ["", ""]) == {}
    assert len(lookup.calls) == 1
