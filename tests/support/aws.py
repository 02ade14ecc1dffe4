"""AWS test helpers: the tables of ``template.yaml`` created in moto (or any DynamoDB endpoint)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragline.serverless.template_tables import create_tables, function_environment, load_template

TEMPLATE_PATH = Path(__file__).resolve().parents[2] / "template.yaml"


def create_tables_from_template(
    dynamodb_client: Any,
    template_path: str | Path = TEMPLATE_PATH,
    names: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Create every DynamoDB table of the template with its key schema, indexes and TTL.

    ``names`` maps logical ids (``EventsTable``) to table names; the others get the ``AwsSettings`` defaults
    (``ragline-events``). Returns ``{logical_id: table_name}``.
    """
    return create_tables(dynamodb_client, load_template(template_path), names)


def settings_environment(
    tables: Mapping[str, str],
    bucket: str = "ragline-state",
    function_id: str = "PipelineStepFunction",
    template_path: str | Path = TEMPLATE_PATH,
    **values: str,
) -> dict[str, str]:
    """The ``RAGLINE_*`` environment the template gives ``function_id``, with these table and bucket names.

    ``values`` adds other logical ids or parameters (``PipelineStateMachine="arn:..."``).
    """
    env = function_environment(load_template(template_path), function_id, {**tables, "StateBucket": bucket, **values})
    # RAGLINE_CONFIG_DIR=/opt is where the config layer lands in Lambda; local runs find config/ themselves.
    return {name: value for name, value in env.items() if name.startswith("RAGLINE_") and name != "RAGLINE_CONFIG_DIR"}
