"""Errors in WeKnora's shape with a 4xx/5xx status:
``{"success": false, "error": {"code": <WeKnora's integer code>, "message", "type", "field"}}``.

``type`` is ragline's stable error type (``not_found``, ``missing_field``, ``invalid_field``, …) and
``field`` names the offending field, header or parameter when there is one.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ragline.runtime.turns import TurnsClosed
from ragline.server.wire import error_code


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field


def not_found(what: str, field: str | None = None) -> ApiError:
    return ApiError(404, "not_found", f"{what} not found", field)


def error_body(status: int, error_type: str, message: str, field: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": error_code(status), "type": error_type, "message": message}
    if field:
        body["field"] = field
    return {"success": False, "error": body}


def _field_of(loc: Any) -> str | None:
    """``("body", "query")`` → ``"query"``: the first element says where, the rest names the field."""
    parts = [str(p) for p in loc]
    if parts and parts[0] in {"body", "query", "path", "header", "cookie"}:
        parts = parts[1:]
    return ".".join(parts) or None


def validation_error(errors: Sequence[Any]) -> ApiError:
    """The error for a request body that failed validation, named by its first failing field. Used for
    FastAPI's own validation and by routes that validate a body themselves (JSON or multipart)."""
    first = errors[0] if errors else {"loc": (), "msg": "invalid request", "type": "value_error"}
    if first.get("type") == "json_invalid":
        return ApiError(400, "invalid_json", "request body is not valid JSON")
    field = _field_of(first.get("loc", ()))
    kind = first.get("type", "")
    if kind == "missing":
        code, message = "missing_field", f"{field} is required"
    elif kind == "extra_forbidden":
        code, message = "unknown_field", f"{field} is not a known field"
    else:
        code, message = "invalid_field", f"{field}: {first.get('msg', 'invalid value')}"
    if field is None and kind in {"model_attributes_type", "model_type", "dict_type"}:
        code, message = "invalid_body", "request body must be a JSON object"
    return ApiError(422, code, message, field)


logger = logging.getLogger(__name__)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(error_body(exc.status, exc.code, exc.message, exc.field), status_code=exc.status)

    @app.exception_handler(TurnsClosed)
    async def _closed(request: Request, exc: TurnsClosed) -> JSONResponse:
        # Nothing was stored: the client may ask again once the server is back.
        return JSONResponse(error_body(503, "shutting_down", str(exc)), status_code=503, headers={"Retry-After": "5"})

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return await _api_error(request, validation_error(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {401: "unauthorized", 404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse(error_body(exc.status_code, code, str(exc.detail)), status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        # The body says nothing about the cause (it may hold user content); the log has the trace.
        logger.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse(error_body(500, "internal_error", "internal server error"), status_code=500)
