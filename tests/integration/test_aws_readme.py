"""The README's curl sequence for the AWS stack (the block after ``<!-- aws-curl -->``), run as it stands by
bash and curl against the deployed stack: API Gateway → ingest_turn, the indexing function, the workflow's
pipeline_step tasks searching the real OpenSearch, stream_reader's function URL."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.aws_curl import assert_sequence, queue_answers, run_block


@pytest.mark.usefixtures("aws_search")
def test_the_readme_curl_sequence_runs_end_to_end_against_the_deployed_stack(aws, scripted, tmp_path: Path):
    queue_answers(scripted)
    assert_sequence(run_block(tmp_path, aws.stack.api_url, aws.stack.stream_url, aws.key), aws.stack.api_url, aws.key)
