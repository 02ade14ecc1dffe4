"""The two front doors of the deployed stack, as ASGI apps a test serves on 127.0.0.1.

``HttpApi`` is API Gateway's HTTP API in front of ``ingest_turn``: each request becomes a payload 2.0 event
(lower-cased headers joined by commas, ``rawPath``/``rawQueryString``, ``requestContext.http``, a base64 body
for binary content), the function is invoked synchronously through the Lambda service, and its reply
(``statusCode``, ``headers``, ``cookies``, ``body``, ``isBase64Encoded``) becomes the HTTP response. Its limits
hold: 10 MB request, 6 MB invocation payload, 30 s integration timeout (503 while the invocation runs on),
a function error answers 500 ``{"message": "Internal Server Error"}``.

``FunctionUrl`` is ``stream_reader``'s function URL in RESPONSE_STREAM mode with the Lambda Web Adapter:
each request gets a sandbox of its own (one request at a time, as an invocation) and is forwarded to the
uvicorn that ``run.sh`` started there; the response streams back as it is written, cut at the function's
timeout.

``BufferedFunctionUrl`` is a BUFFERED function URL (AuthType NONE) in front of a function, which
``scripts/deploy_local.py`` gives ``ingest_turn`` where LocalStack has no HTTP API: the same payload 2.0 event but
with the URL's route key (``$default``), no ``pathParameters`` and the URL's domain; no 30 s integration limit
(the invocation runs up to the function's Timeout), 6 MB each way, a function error answers 502.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl

import httpx

from tests.support.lambdas import Invoked, LambdaService, Result, ServiceError

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

HTTP_API_MAX_BODY = 10 * 1024 * 1024
HTTP_API_TIMEOUT_S = 30.0
_TEXT_TYPES = ("text/", "application/json", "application/x-www-form-urlencoded", "application/xml")


async def _body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def _send_json(send: Send, status: int, payload: dict[str, Any], headers: list[tuple[bytes, bytes]] = ()) -> None:  # type: ignore[assignment]
    body = json.dumps(payload).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


def payload_v2(scope: Scope, body: bytes, api_id: str, account_id: str, region: str) -> dict[str, Any]:
    """The event API Gateway's HTTP API sends a Lambda integration (payload format 2.0)."""
    headers: dict[str, str] = {}
    cookies: list[str] = []
    for raw_name, raw_value in scope["headers"]:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        if name == "cookie":
            cookies.extend(part.strip() for part in value.split(";") if part.strip())
            continue
        headers[name] = f"{headers[name]},{value}" if name in headers else value
    raw_query = scope.get("query_string", b"").decode("latin-1")
    query: dict[str, str] = {}
    for name, value in parse_qsl(raw_query, keep_blank_values=True):
        query[name] = f"{query[name]},{value}" if name in query else value
    path = scope["path"]
    content_type = headers.get("content-type", "")
    text = not body or content_type.startswith(_TEXT_TYPES)
    if text:
        try:
            encoded, is_base64 = body.decode("utf-8"), False
        except UnicodeDecodeError:
            encoded, is_base64 = base64.b64encode(body).decode(), True
    else:
        encoded, is_base64 = base64.b64encode(body).decode(), True
    now = time.time()
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "ANY /{proxy+}",
        "rawPath": path,
        "rawQueryString": raw_query,
        "headers": headers,
        "requestContext": {
            "accountId": account_id,
            "apiId": api_id,
            "domainName": f"{api_id}.execute-api.{region}.amazonaws.com",
            "domainPrefix": api_id,
            "http": {
                "method": scope["method"],
                "path": path,
                "protocol": f"HTTP/{scope.get('http_version', '1.1')}",
                "sourceIp": (scope.get("client") or ("127.0.0.1", 0))[0],
                "userAgent": headers.get("user-agent", ""),
            },
            "requestId": uuid.uuid4().hex[:16],
            "routeKey": "ANY /{proxy+}",
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
        "pathParameters": {"proxy": path.lstrip("/")},
        "isBase64Encoded": is_base64,
    }
    if cookies:
        event["cookies"] = cookies
    if query:
        event["queryStringParameters"] = query
    if body:
        event["body"] = encoded
    return event


class HttpApi:
    """API Gateway HTTP API → ``ingest_turn`` (payload 2.0, synchronous invocation)."""

    max_body = HTTP_API_MAX_BODY
    timeout_s: float | None = HTTP_API_TIMEOUT_S
    error_status = 500

    def __init__(self, lambdas: LambdaService, function: str, api_id: str, account_id: str, region: str) -> None:
        self.lambdas = lambdas
        self.function = function
        self.api_id = api_id
        self.account_id = account_id
        self.region = region

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = await _body(receive)
        if len(body) > self.max_body:
            await _send_json(send, 413, {"message": "Request Entity Too Large"})
            return
        payload = json.dumps(self.event(scope, body)).encode()
        invocation = asyncio.ensure_future(asyncio.to_thread(self.lambdas.invoke, self.function, payload))
        try:
            result = await asyncio.wait_for(asyncio.shield(invocation), self.timeout_s)
        except TimeoutError:
            # The integration gave up; the invocation itself runs on in its sandbox.
            await _send_json(send, 503, {"message": "Service Unavailable"})
            return
        except ServiceError as error:
            status = 413 if error.code == "RequestEntityTooLargeException" else self.error_status
            message = "Request Entity Too Large" if status == 413 else "Internal Server Error"
            await _send_json(send, status, {"message": message})
            return
        if result.function_error is not None:
            await _send_json(send, self.error_status, {"message": "Internal Server Error"})
            return
        await self._reply(send, result.json())

    def event(self, scope: Scope, body: bytes) -> dict[str, Any]:
        return payload_v2(scope, body, self.api_id, self.account_id, self.region)

    async def _reply(self, send: Send, reply: Any) -> None:
        if not isinstance(reply, dict) or "statusCode" not in reply:
            # Payload 2.0: anything else is a 200 JSON body.
            await _send_json(send, 200, reply if isinstance(reply, dict) else {"body": reply})
            return
        body = reply.get("body") or ""
        raw = base64.b64decode(body) if reply.get("isBase64Encoded") else str(body).encode()
        headers = [(k.lower().encode(), str(v).encode()) for k, v in (reply.get("headers") or {}).items()]
        for name, values in (reply.get("multiValueHeaders") or {}).items():
            headers.extend((name.lower().encode(), str(v).encode()) for v in values)
        headers.extend((b"set-cookie", c.encode()) for c in reply.get("cookies") or [])
        headers = [h for h in headers if h[0] != b"content-length"]
        headers.append((b"content-length", str(len(raw)).encode()))
        await send({"type": "http.response.start", "status": int(reply["statusCode"]), "headers": headers})
        await send({"type": "http.response.body", "body": raw})


class BufferedFunctionUrl(HttpApi):
    """A BUFFERED function URL → a function (payload 2.0, synchronous invocation); ``url_id`` is the URL's
    host label (``https://<url_id>.lambda-url.<region>.on.aws/``)."""

    max_body = 6 * 1024 * 1024
    timeout_s = None  # the function's own Timeout ends the invocation
    error_status = 502

    def __init__(self, lambdas: LambdaService, function: str, url_id: str, region: str) -> None:
        super().__init__(lambdas, function, url_id, "anonymous", region)

    def event(self, scope: Scope, body: bytes) -> dict[str, Any]:
        event = payload_v2(scope, body, self.api_id, self.account_id, self.region)
        event.pop("pathParameters", None)
        event["routeKey"] = event["requestContext"]["routeKey"] = "$default"
        event["requestContext"]["domainName"] = f"{self.api_id}.lambda-url.{self.region}.on.aws"
        return event


class FunctionUrl:
    """A RESPONSE_STREAM function URL → the Web Adapter → uvicorn in one of the function's sandboxes."""

    def __init__(self, lambdas: LambdaService, function: str) -> None:
        self.lambdas = lambdas
        self.function = function
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(None))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await self._client.aclose()
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = await _body(receive)
        spec = self.lambdas.spec(self.function)
        sandbox = await asyncio.to_thread(self.lambdas.acquire, spec)
        started = time.monotonic()
        response: httpx.Response | None = None
        try:
            headers = [(k, v) for k, v in scope["headers"] if k.lower() not in (b"host", b"content-length")]
            query = scope.get("query_string", b"").decode("latin-1")
            url = f"http://127.0.0.1:{sandbox.port}{scope['path']}" + (f"?{query}" if query else "")
            request = self._client.build_request(scope["method"], url, headers=headers, content=body)
            response = await self._client.send(request, stream=True)
            try:
                await send(
                    {
                        "type": "http.response.start",
                        "status": response.status_code,
                        "headers": [
                            (k, v)
                            for k, v in response.headers.raw
                            if k.lower() not in (b"content-length", b"transfer-encoding")
                        ],
                    }
                )
                chunks = response.aiter_raw()
                while True:
                    left = spec.timeout_s - (time.monotonic() - started)
                    try:
                        chunk = await asyncio.wait_for(chunks.__anext__(), max(left, 0.001))
                    except (StopAsyncIteration, TimeoutError):
                        break
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
            finally:
                with contextlib.suppress(Exception):
                    await response.aclose()
        finally:
            self.lambdas.release(sandbox)
            event = {"method": scope["method"], "path": scope["path"]}
            status = response.status_code if response is not None else 502
            self.lambdas.record(
                Invoked(spec.logical_id, event, Result(str(status).encode()), None, (time.monotonic() - started) * 1000)
            )
