"""index_document: the vectors (then the graph) of accepted documents, invoked asynchronously.

ingest_turn accepts an upload (chunks stored, ``pending``) and invokes this function with
``{"ragline": "index", "tenant_id", "document_ids"}``; a file sent to S3 through a presigned upload URL comes
as ``{"ragline": "index", "kind": "upload", "tenant_id", "upload_id"}`` and is read, extracted and accepted
here first; a file uploaded through the API was kept unread by ingest_turn and is read here before its vectors
(``IngestService.extract_when_indexing``). Idempotent and resumable (``ragline.serverless.indexing``): Lambda's retries, a duplicate
delivery, a timeout mid-document all end with the document indexed once, or ``failed`` with the reason.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from ragline.observability import TRACED_MODULES
from ragline.serverless.aws import build_aws_runtime
from ragline.serverless.indexing import DocumentWorker, IndexingLeases
from ragline.serverless.uploads import UploadProcessor, UploadStore

logger = Logger()
tracer = Tracer(patch_modules=TRACED_MODULES)


@lru_cache(maxsize=1)
def worker() -> DocumentWorker:
    runtime = build_aws_runtime()
    if runtime.scheduler is None:
        raise RuntimeError("RAGLINE_INDEX_FUNCTION is not set: the function cannot continue a long document")
    # This function is off the request path: a file it accepts (a presigned upload) is read at once.
    runtime.container.ingest.extract_when_indexing(False)
    state = runtime.state.table
    ttl = runtime.aws.event_ttl_seconds
    s3 = runtime.session.client("s3", endpoint_url=runtime.aws.aws_endpoint_url or None)  # type: ignore[union-attr]
    uploads = UploadProcessor(UploadStore(state, ttl), s3, runtime.aws.state_bucket, runtime.container)
    return DocumentWorker(runtime, IndexingLeases(state, ttl), runtime.scheduler, uploads)


@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    logger.append_keys(tenant_id=event.get("tenant_id", ""))
    return worker().handle(event, context.get_remaining_time_in_millis, context.aws_request_id)
