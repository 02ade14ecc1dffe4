"""Table CSVs in S3, for the AWS runtime: ``s3://<bucket>/<prefix><document_id>.csv``."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from ragline.tables.store import CSV_SUFFIX, TableNotFound, checked_id

DEFAULT_PREFIX = "tables/"
CSV_CONTENT_TYPE = "text/csv; charset=utf-8"
# Error codes S3 answers for an object that is not there (GetObject says NoSuchKey; HEAD-like paths 404).
_MISSING_CODES = frozenset({"NoSuchKey", "404", "NotFound"})


class S3TableStore:
    """``s3_client`` is a boto3 S3 client; the bucket is the one the stack gives the functions."""

    def __init__(self, s3_client: Any, bucket: str, prefix: str = DEFAULT_PREFIX) -> None:
        """Tables kept in ``bucket`` under ``prefix``."""
        self._s3 = s3_client
        self._bucket = bucket
        self._prefix = prefix

    def _key(self, document_id: str) -> str:
        return f"{self._prefix}{checked_id(document_id)}{CSV_SUFFIX}"

    def save(self, document_id: str, csv_bytes: bytes) -> None:
        """Store the table's normalised CSV, replacing any kept before."""
        self._s3.put_object(
            Bucket=self._bucket, Key=self._key(document_id), Body=csv_bytes, ContentType=CSV_CONTENT_TYPE
        )

    def load(self, document_id: str) -> bytes:
        """The stored CSV; :class:`TableNotFound` when there is none."""
        try:
            response = self._s3.get_object(Bucket=self._bucket, Key=self._key(document_id))
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in _MISSING_CODES:
                raise TableNotFound(document_id) from None
            raise
        body: bytes = response["Body"].read()
        return body

    def delete(self, document_id: str) -> None:
        """Forget the table; deleting one that is not there is not an error."""
        # DeleteObject succeeds for a missing key: nothing to special-case.
        self._s3.delete_object(Bucket=self._bucket, Key=self._key(document_id))
