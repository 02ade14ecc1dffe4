"""stream_reader: SSE by offset from the DynamoDB event log, resume and stop, served by uvicorn behind the
AWS Lambda Web Adapter (a function URL in RESPONSE_STREAM mode; Mangum buffers and cannot stream).

Responses end before the function timeout (``RAGLINE_STREAM_MAX_SECONDS``); a client reconnects with
``Last-Event-ID`` and continues exactly where it was. A reader: no model, graph, secret or search engine,
and only the stream's routes (follow by offset, WeKnora's continue-stream, stop, ``/healthz``); the rest of
the API is ingest_turn's.
"""

from __future__ import annotations

from ragline.observability import configure_logging
from ragline.serverless.aws import build_aws_runtime

configure_logging()
app = build_aws_runtime(reader=True).stream_app()
