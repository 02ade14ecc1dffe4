"""Stored images by their handle: a question's attachments and the pictures read from documents.

``GET /api/v1/images?url=resource://images/<owner>/<n>`` answers the image's bytes with the media type read
from them (PNG, JPEG, WebP, GIF), for the caller's tenant only: the handle of an image another tenant keeps is
a 404 exactly like a handle nothing is kept under. The handle is the one the API hands out (a user message's
``images[].url``, a chunk's ``image_url`` and ``image_info``), so a client never builds a path of its own.

A browser cannot send the API key with ``<img src>``: the chat page fetches the image with its key and shows it
from a ``blob:`` URL. On AWS the reply travels through API Gateway base64-encoded (Mangum encodes every
non-text media type), which grows it by a third; an image whose encoded size would pass the reply limit
(``limits.original_inline_max_bytes``, as for originals) answers 307 to a presigned URL of the object instead.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import RedirectResponse, Response

from ragline.ingest.images import image_storage_id, sniff
from ragline.server.deps import ContainerDep, TenantDep
from ragline.server.errors import ApiError, ErrorReply

router = APIRouter(prefix="/api/v1", tags=["images"])

# Handles are stable, but re-parsing a document may store new pictures under them: cached for an hour.
IMAGE_CACHE = "private, max-age=3600"

_IMAGE_MEDIA_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")
_IMAGE_REPLIES: dict[int | str, dict[str, Any]] = {
    200: {
        "content": {media: {"schema": {"type": "string", "format": "binary"}} for media in _IMAGE_MEDIA_TYPES},
        "description": "The image's bytes, with the media type read from them",
    },
    307: {"description": "An image too large for a Lambda reply (AWS): a presigned link to the stored object"},
    404: {"model": ErrorReply, "description": "No image of this tenant under that handle"},
    422: {"model": ErrorReply, "description": "Not an image handle (resource://images/<owner>/<n>)"},
}
_MALFORMED = "url: not an image handle (resource://images/<owner>/<n>)"


def _encoded_size(size: int) -> int:
    """The size of ``size`` bytes once base64-encoded (how API Gateway carries a binary reply)."""
    return 4 * ((size + 2) // 3)


@router.get("/images", response_class=Response, responses=_IMAGE_REPLIES)
def get_image(
    tenant: TenantDep,
    container: ContainerDep,
    url: Annotated[str, Query(max_length=300, description="the image's handle: resource://images/<owner>/<n>")],
) -> Response:
    """The image kept under ``url`` for this tenant (a question's attachment, a document's picture)."""
    storage_id = image_storage_id(url)
    if storage_id is None:
        raise ApiError(422, "invalid_field", _MALFORMED, "url")
    store = container.originals
    try:
        data = store.load(tenant.id, storage_id) if store is not None else None
    except ValueError:  # an owner the store refuses as an id: it cannot name a stored image
        raise ApiError(422, "invalid_field", _MALFORMED, "url") from None
    if store is None or data is None:
        raise ApiError(404, "not_found", "image not found", "url")
    media_type = sniff(data) or "application/octet-stream"
    if _encoded_size(len(data)) > container.config.limits.original_inline_max_bytes:
        link = store.link(tenant.id, storage_id, filename=storage_id, media_type=media_type, inline=True)
        if link is not None:
            return RedirectResponse(link, status_code=307)
    headers = {"Cache-Control": IMAGE_CACHE, "X-Content-Type-Options": "nosniff"}
    return Response(data, media_type=media_type, headers=headers)
