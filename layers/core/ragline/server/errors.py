"""Errors in WeKnora's shape with a 4xx/5xx status.

``{"success": false, "error": {"code": <WeKnora's integer code>, "message", "type", "field"}}``.

``type`` is ragline's stable error type (``not_found``, ``missing_field``, ``invalid_field``, …) and
``field`` names the offending field, header or parameter when there is one.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal, TypeVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from ragline.runtime.turns import TurnsClosed, TurnStarting
from ragline.server.wire import error_code

_Model = TypeVar("_Model", bound=BaseModel)


class ErrorDetail(BaseModel):
    """The ``error`` object of an error reply."""

    code: int = Field(description="WeKnora's error code (1000 bad request, 1001 unauthorized, 1003 not found, ...)")
    type: str = Field(description="ragline's stable error type: not_found, missing_field, invalid_field, ...")
    message: str
    field: str | None = Field(default=None, description="The body field, parameter or header at fault")


class ErrorReply(BaseModel):
    """Every 4xx/5xx reply."""

    success: Literal[False] = False
    error: ErrorDetail


def _reply(description: str) -> dict[str, Any]:
    return {"model": ErrorReply, "description": description}


# What any route may answer besides its success (OpenAPI): every route checks the key and its input.
ERROR_REPLIES: dict[int | str, dict[str, Any]] = {
    400: _reply("The body is not valid JSON"),
    401: _reply("No valid X-API-Key (or Authorization: Bearer) header"),
    403: _reply("X-Tenant-ID names another tenant than the key's"),
    404: _reply("No such resource for this tenant"),
    422: _reply("A field, parameter or header is missing or invalid (named in error.field)"),
}
# Routes that accept uploads, and the routes that start a turn.
UPLOAD_REPLIES: dict[int | str, dict[str, Any]] = {
    413: _reply("The upload is larger than the configured limit"),
    415: _reply("The file type is not supported"),
}
TURN_REPLIES: dict[int | str, dict[str, Any]] = {
    503: _reply("The server is shutting down and accepts no new question (retry after Retry-After)"),
}


class ApiError(Exception):
    """An error the API answers with ``status`` and a stable ``code`` (its ``type``), naming ``field`` when one is at fault."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None) -> None:
        """An error of HTTP ``status``, type ``code`` and ``message``, about ``field``."""
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field


def not_found(what: str, field: str | None = None) -> ApiError:
    """A 404 for ``what``, naming ``field``."""
    return ApiError(404, "not_found", f"{what} not found", field)


def error_body(status: int, error_type: str, message: str, field: str | None = None) -> dict[str, Any]:
    """The JSON body of an error reply in WeKnora's shape."""
    body: dict[str, Any] = {"code": error_code(status), "type": error_type, "message": message}
    if field:
        body["field"] = field
    return {"success": False, "error": body}


def _field_of(loc: Any) -> str | None:
    """``("body", "query")`` → ``"query"``: the first element says where, the rest names the field."""
    parts = [str(p) for p in loc]
    if parts and parts[0] in {"body", "query", "path", "header", "cookie"}:
        parts = parts[1:]
    # A mapping's bad key is located as ``(field, key, "[key]")``: the key named is the field.
    return ".".join(p for p in parts if p != "[key]") or None


def _validator_error(error: Any) -> object:
    context = error.get("ctx") if isinstance(error, dict) else None
    return context.get("error") if isinstance(context, dict) else None


def validation_error(errors: Sequence[Any]) -> ApiError:
    """The error for a request body that failed validation, named by its first failing field.

    Used for FastAPI's own validation and by routes that validate a body themselves (JSON or multipart).
    """
    first = errors[0] if errors else {"loc": (), "msg": "invalid request", "type": "value_error"}
    if first.get("type") == "json_invalid":
        return ApiError(400, "invalid_json", "request body is not valid JSON", "body")
    field = _field_of(first.get("loc", ()))
    kind = first.get("type", "")
    if kind == "missing":
        code, message = "missing_field", f"{field} is required"
    elif kind == "extra_forbidden":
        code, message = "unknown_field", f"{field} is not a known field"
    elif kind == "value_error" and isinstance(_validator_error(first), Exception):
        # A validator's own sentence ("must not contain a NUL character"), without pydantic's prefix.
        code, message = "invalid_field", f"{field} {_validator_error(first)}"
    else:
        code, message = "invalid_field", f"{field}: {first.get('msg', 'invalid value')}"
    if field is None and kind in {"model_attributes_type", "model_type", "dict_type"}:
        code, message = "invalid_body", "request body must be a JSON object"
    return ApiError(422, code, message, field)


logger = logging.getLogger(__name__)


def empty_body_error(model: type[BaseModel] | None) -> ApiError:
    """The error for an empty body: the first field the body must have, by name (else ``body``)."""
    if model is not None:
        try:
            model.model_validate({})
        except ValidationError as exc:
            return validation_error(_in_body(exc))
    return ApiError(422, "missing_body", "a JSON request body is required", "body")


def parse_body(model: type[_Model], raw: bytes) -> _Model:
    """A JSON body read by a route itself (one that also takes multipart).

    Its errors are those FastAPI's own validation gives: an empty body names the first required field.
    """
    if not raw.strip():
        raw = b"{}"
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise validation_error(_in_body(exc)) from None


def _in_body(exc: ValidationError) -> list[Any]:
    """A model's errors located as FastAPI locates them (``("body", field)``).

    A field named like a location (``query``) thus keeps its name.
    """
    return [{**error, "loc": ("body", *error.get("loc", ()))} for error in exc.errors()]


def _body_model(request: Request) -> type[BaseModel] | None:
    field = getattr(request.scope.get("route"), "body_field", None)
    annotation = getattr(getattr(field, "field_info", None), "annotation", None)
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error in WeKnora's shape: the API's own, validation errors, HTTP errors and anything unexpected."""

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(error_body(exc.status, exc.code, exc.message, exc.field), status_code=exc.status)

    @app.exception_handler(TurnsClosed)
    async def _closed(request: Request, exc: TurnsClosed) -> JSONResponse:
        # Nothing was stored: the client may ask again once the server is back.
        return JSONResponse(error_body(503, "shutting_down", str(exc)), status_code=503, headers={"Retry-After": "5"})

    @app.exception_handler(TurnStarting)
    async def _starting(request: Request, exc: TurnStarting) -> JSONResponse:
        return JSONResponse(error_body(503, "turn_starting", str(exc)), status_code=503, headers={"Retry-After": "5"})

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if errors and tuple(errors[0].get("loc", ())) == ("body",) and errors[0].get("type") == "missing":
            # No body at all: say which field it must have, not "None is required".
            return await _api_error(request, empty_body_error(_body_model(request)))
        return await _api_error(request, validation_error(errors))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400:
            # The framework could not read the body: a multipart part over the parser's limits (a 5,000-character
            # file name), JSON nested past the parser's depth. Still a named field, as every other refusal.
            if request.headers.get("content-type", "").lower().startswith("multipart/"):
                message = f"{exc.detail} (a part's headers, such as its file name, may be too long)"
                return await _api_error(request, ApiError(400, "invalid_multipart", message, "file"))
            message = f"{exc.detail}: not valid JSON, or nested too deeply"
            return await _api_error(request, ApiError(400, "invalid_json", message, "body"))
        code = {401: "unauthorized", 404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse(error_body(exc.status_code, code, str(exc.detail)), status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        # The body says nothing about the cause (it may hold user content); the log has the trace.
        logger.exception("unhandled error on %s %s", request.method, request.url.path)
        # The server closes this connection once the reply is sent (the error goes on to its log): said so, a
        # client does not send its next request on it and get a reset.
        return JSONResponse(
            error_body(500, "internal_error", "internal server error"), status_code=500, headers={"Connection": "close"}
        )
