"""The file each document was made from, kept as it was received: downloaded, previewed, and parsed again.

Chunks are what search needs; the original is what a person wants back (the PDF, the slide deck), and what
re-parsing with a better extractor starts from. It lives beside the knowledge store, as table CSVs do: a
file under the data directory when embedded, an S3 object in AWS (``originals/<tenant>/<document>``).
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any, Protocol

# Tenant and document ids are UUIDs (or "default"); anything else would let an id name a path elsewhere.
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
DEFAULT_PREFIX = "originals/"
# Error codes S3 answers for an object that is not there.
_MISSING_CODES = frozenset({"NoSuchKey", "404", "NotFound"})


def _checked(value: str) -> str:
    if not _SAFE_ID.fullmatch(value):
        raise ValueError(f"not a valid id for an original: {value!r}")
    return value


class OriginalStore(Protocol):
    """The received bytes of each document, by tenant and document id."""

    # Where they are kept, by WeKnora's name of a storage engine ("local", "s3").
    provider: str

    def save(self, tenant_id: str, document_id: str, data: bytes) -> None:
        """Store the original's bytes, replacing any kept before."""
        ...

    def load(self, tenant_id: str, document_id: str) -> bytes | None:
        """The stored bytes; None when none are kept (documents from before originals were kept, FAQ)."""
        ...

    def size(self, tenant_id: str, document_id: str) -> int | None:
        """The stored size in bytes, without reading them; None when none are kept."""
        ...

    def delete(self, tenant_id: str, document_id: str) -> None:
        """Forget the original; deleting one that is not there is not an error."""
        ...

    def link(self, tenant_id: str, document_id: str, *, filename: str, media_type: str, inline: bool) -> str | None:
        """A URL the client can fetch the original from directly, or None.

        A URL the client can fetch the original from directly (a presigned S3 GET), or None where the original is served
        by the API itself.
        """
        ...


class FileOriginalStore:
    """``<root>/<tenant>/<document>`` (the embedded runtime: ``<data_dir>/originals``), written atomically."""

    provider = "local"

    def __init__(self, root: Path) -> None:
        """Originals kept as files under ``root``."""
        self._root = Path(root)

    def _path(self, tenant_id: str, document_id: str) -> Path:
        return self._root / _checked(tenant_id) / _checked(document_id)

    def save(self, tenant_id: str, document_id: str, data: bytes) -> None:
        """Store the original's bytes, replacing any kept before."""
        path = self._path(tenant_id, document_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def load(self, tenant_id: str, document_id: str) -> bytes | None:
        """The stored bytes; None when none are kept."""
        try:
            return self._path(tenant_id, document_id).read_bytes()
        except FileNotFoundError:
            return None

    def size(self, tenant_id: str, document_id: str) -> int | None:
        """The stored size in bytes, without reading them; None when none are kept."""
        try:
            return self._path(tenant_id, document_id).stat().st_size
        except FileNotFoundError:
            return None

    def delete(self, tenant_id: str, document_id: str) -> None:
        """Forget the original; deleting one that is not there is not an error."""
        self._path(tenant_id, document_id).unlink(missing_ok=True)

    def link(self, tenant_id: str, document_id: str, *, filename: str, media_type: str, inline: bool) -> str | None:
        """None: the embedded server serves originals itself."""
        return None

    def path(self, tenant_id: str, document_id: str) -> Path | None:
        """The file itself, for a server that streams it; None when none is kept."""
        path = self._path(tenant_id, document_id)
        return path if path.is_file() else None

    def entries_older_than(self, age_s: float) -> list[tuple[str, str]]:
        """(tenant, name) of every file last written more than ``age_s`` seconds ago, half-written ones included.

        A half-written file's name starts with ``.tmp-`` (:meth:`save` writes there, then renames).
        """
        before = time.time() - age_s
        found = []
        for tenant in sorted(self._root.iterdir()) if self._root.is_dir() else []:
            if not tenant.is_dir() or not _SAFE_ID.fullmatch(tenant.name):
                continue
            for entry in sorted(tenant.iterdir()):
                try:
                    if entry.is_file() and entry.stat().st_mtime < before:
                        found.append((tenant.name, entry.name))
                except FileNotFoundError:
                    continue  # removed meanwhile
        return found

    def remove_entry(self, tenant_id: str, name: str) -> None:
        """Remove one file :meth:`entries_older_than` listed (a half-written one too)."""
        if name.startswith(".tmp-") and _SAFE_ID.fullmatch(name[len(".tmp-") :]):
            (self._root / _checked(tenant_id) / name).unlink(missing_ok=True)
        else:
            self._path(tenant_id, name).unlink(missing_ok=True)


class S3OriginalStore:
    """``s3://<bucket>/originals/<tenant>/<document>``; ``presigner`` (an S3 client with SigV4) signs links."""

    provider = "s3"

    def __init__(
        self, s3_client: Any, bucket: str, prefix: str = DEFAULT_PREFIX, *, presigner: Any = None, url_ttl_s: int = 900
    ) -> None:
        """Originals kept in ``bucket`` under ``prefix``; links are presigned for ``url_ttl_s`` seconds when a ``presigner`` is given."""
        self._s3 = s3_client
        self._bucket = bucket
        self._prefix = prefix
        self._presigner = presigner
        self._url_ttl_s = url_ttl_s

    def _key(self, tenant_id: str, document_id: str) -> str:
        return f"{self._prefix}{_checked(tenant_id)}/{_checked(document_id)}"

    def save(self, tenant_id: str, document_id: str, data: bytes) -> None:
        """Store the original's bytes, replacing any kept before."""
        self._s3.put_object(Bucket=self._bucket, Key=self._key(tenant_id, document_id), Body=data)

    def load(self, tenant_id: str, document_id: str) -> bytes | None:
        """The stored bytes; None when none are kept."""
        try:
            response = self._s3.get_object(Bucket=self._bucket, Key=self._key(tenant_id, document_id))
        except Exception as error:  # botocore's ClientError, without importing botocore here
            if _missing(error):
                return None
            raise
        body: bytes = response["Body"].read()
        return body

    def size(self, tenant_id: str, document_id: str) -> int | None:
        """The stored size in bytes, without reading them; None when none are kept."""
        try:
            response = self._s3.head_object(Bucket=self._bucket, Key=self._key(tenant_id, document_id))
        except Exception as error:
            if _missing(error):
                return None
            raise
        return int(response["ContentLength"])

    def delete(self, tenant_id: str, document_id: str) -> None:
        """Forget the original; deleting one that is not there is not an error."""
        self._s3.delete_object(Bucket=self._bucket, Key=self._key(tenant_id, document_id))

    def link(self, tenant_id: str, document_id: str, *, filename: str, media_type: str, inline: bool) -> str | None:
        """A URL the client can fetch the original from directly, or None."""
        if self._presigner is None:
            return None
        url: str = self._presigner.generate_presigned_url(
            "get_object",
            Params={
                "Bucket": self._bucket,
                "Key": self._key(tenant_id, document_id),
                "ResponseContentType": media_type,
                "ResponseContentDisposition": content_disposition(filename, inline=inline),
            },
            ExpiresIn=self._url_ttl_s,
        )
        return url


def _missing(error: Exception) -> bool:
    response = getattr(error, "response", None)
    return isinstance(response, dict) and response.get("Error", {}).get("Code") in _MISSING_CODES


def content_disposition(filename: str, *, inline: bool) -> str:
    """``attachment`` (or ``inline``) with the file's name.

    ASCII in ``filename``, the exact name in ``filename*`` (RFC 6266 / 5987) so a Chinese name survives.
    """
    from urllib.parse import quote

    ascii_name = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "_" for c in filename) or "document"
    kind = "inline" if inline else "attachment"
    return f"{kind}; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(filename, safe='')}"
