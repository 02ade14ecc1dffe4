"""Fetching a web page for WEB_FETCH without becoming a proxy into the server's own network.

Every hop (the URL and each redirect target) goes through the same gate, :func:`vet_url`:

1. scheme ``http`` or ``https`` only (``file:``, ``gopher:``, ``ftp:``, ``data:`` … never reach a socket);
2. no credentials in the URL, and the URL parser that sends the request must agree with ``urllib`` on the
   host (parser disagreement is how ``http://a@b@c/``-style bypasses work);
3. host-name rules of :mod:`ragline.web.ssrf` (``localhost``, non-canonical numeric spellings);
4. the host is resolved once (``socket.getaddrinfo`` in a worker thread) and *every* address must pass
   :func:`ragline.web.ssrf.address_block_reason`, unless the policy exempts that ``(host, port)``.

The connection then goes to the vetted address itself, not to the name: the request URL carries the IP,
the ``Host`` header carries the name, and for HTTPS the TLS SNI and certificate check use the name
(httpcore's ``sni_hostname`` request extension). No second DNS lookup happens, so a name that answers a
public address to the check and 127.0.0.1 to the connection (DNS rebinding) gains nothing. Proxies from the
environment are ignored for the same reason: a proxy would resolve the name itself.

Redirects are followed by hand, each ``Location`` re-vetted from step 1. The body is streamed and reading
stops at ``max_bytes`` (the connection is closed, not drained); connect, read and total time are bounded;
only ``text/html``, ``application/xhtml+xml`` and ``text/plain`` are read. HTML becomes readable text with
trafilatura (main content, no navigation or boilerplate), and the text is cut to 8,000 bytes on a UTF-8
character boundary (the seed's WEB_FETCH limit).
"""

from __future__ import annotations

import asyncio
import codecs
import importlib.util
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from html.parser import HTMLParser
from typing import Protocol
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel, Field

from ragline.web.ssrf import (
    WEB_SCHEMES,
    FetchPolicy,
    IPAddress,
    address_block_reason,
    hostname_block_reason,
    is_non_canonical_numeric,
    normalize_host,
    parse_ip_literal,
)

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_CONNECT_TIMEOUT_S = 5.0
# Raw body cap: a long article's HTML fits; a 10 MB download never reaches memory.
DEFAULT_MAX_BYTES = 2 * 1024 * 1024
DEFAULT_MAX_REDIRECTS = 5
# The seed's WEB_FETCH cut: page text replacing a snippet is at most this many bytes of UTF-8.
WEB_FETCH_TEXT_LIMIT_BYTES = 8000
# The seed's WebFetchTopN default.
DEFAULT_TOP_N = 3
DEFAULT_MAX_PARALLEL = 8
ALLOWED_CONTENT_TYPES = frozenset({"text/html", "application/xhtml+xml", "text/plain"})
HTML_CONTENT_TYPES = frozenset({"text/html", "application/xhtml+xml"})
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
DEFAULT_PORTS = {"http": 80, "https": 443}
USER_AGENT = "ragline-web-fetch/1.0"
ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9"
# Ask for an uncompressed body: the size cap then bounds what the server sends, not only what is kept.
ACCEPT_ENCODING = "identity"
FALLBACK_CHARSET = "utf-8"


class FetchFailure(StrEnum):
    """Why a fetch produced no text; stable values, recorded in ``metadata["web_fetch_reason"]``."""

    INVALID_URL = "invalid_url"
    BLOCKED_SCHEME = "blocked_scheme"
    BLOCKED_HOST = "blocked_host"
    BLOCKED_ADDRESS = "blocked_address"
    DNS_FAILED = "dns_failed"
    TOO_MANY_REDIRECTS = "too_many_redirects"
    HTTP_STATUS = "http_status"
    UNSUPPORTED_CONTENT_TYPE = "unsupported_content_type"
    TIMEOUT = "timeout"
    NETWORK = "network_error"
    EMPTY_TEXT = "empty_text"
    TOO_LARGE = "too_large"


class FetchError(Exception):
    """A refused or failed fetch. ``reason`` is stable; the message says what exactly."""

    def __init__(self, reason: FetchFailure, message: str) -> None:
        """A failure of kind ``reason``, described by ``message``."""
        super().__init__(f"{reason.value}: {message}")
        self.reason = reason

    @property
    def refused(self) -> bool:
        """The policy refused the URL (as opposed to the page failing to load)."""
        return self.reason in {FetchFailure.BLOCKED_SCHEME, FetchFailure.BLOCKED_HOST, FetchFailure.BLOCKED_ADDRESS}


@dataclass(frozen=True)
class FetchedPage:
    """A page's readable text and how it was obtained."""

    url: str
    status_code: int
    content_type: str
    text: str
    body_bytes: int
    body_truncated: bool
    text_truncated: bool
    redirects: tuple[str, ...] = ()


Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]


async def system_resolver(host: str, port: int) -> list[IPAddress]:
    """Addresses of ``host`` from the system resolver, in its order, without duplicates.

    ``getaddrinfo`` blocks, so it runs in a worker thread.
    """
    infos = await asyncio.to_thread(socket.getaddrinfo, host, port, 0, socket.SOCK_STREAM)
    addresses: list[IPAddress] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        address = parse_ip_literal(str(sockaddr[0]))
        if address is not None and address not in addresses:
            addresses.append(address)
    return addresses


@dataclass(frozen=True)
class VettedTarget:
    """A URL that passed the policy, and the address the connection must go to."""

    url: httpx.URL
    host: str
    port: int
    address: IPAddress


async def vet_url(url: str, policy: FetchPolicy, resolver: Resolver = system_resolver) -> VettedTarget:
    """Check one hop against the policy and pin its address; raises :class:`FetchError`."""
    try:
        split = urlsplit(url)
        split_host = split.hostname
        has_credentials = split.username is not None or split.password is not None
    except ValueError as exc:
        raise FetchError(FetchFailure.INVALID_URL, f"unparseable URL: {exc}") from exc
    scheme = split.scheme.lower()
    if scheme not in WEB_SCHEMES:
        raise FetchError(FetchFailure.BLOCKED_SCHEME, f"scheme {scheme or '(none)'!r} is not http or https")
    if not split_host:
        raise FetchError(FetchFailure.INVALID_URL, "the URL has no host")
    if has_credentials:
        raise FetchError(FetchFailure.INVALID_URL, "credentials in the URL are not sent")
    if is_non_canonical_numeric(split_host):
        raise FetchError(FetchFailure.BLOCKED_HOST, f"{split_host!r} is a non-canonical numeric IP spelling")
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as exc:
        raise FetchError(FetchFailure.INVALID_URL, str(exc)) from exc
    host = normalize_host(parsed.host)
    if host != normalize_host(split_host):
        raise FetchError(FetchFailure.INVALID_URL, f"URL parsers disagree on the host ({host!r}, {split_host!r})")
    port = parsed.port or DEFAULT_PORTS[scheme]
    exempt = policy.exempts(host, port)
    name_reason = hostname_block_reason(host)
    if name_reason is not None and not exempt:
        raise FetchError(FetchFailure.BLOCKED_HOST, f"{host!r}: {name_reason}")
    literal = parse_ip_literal(host)
    if literal is not None:
        addresses = [literal]
    else:
        try:
            addresses = await resolver(parsed.raw_host.decode("ascii"), port)
        except (OSError, UnicodeError) as exc:
            raise FetchError(FetchFailure.DNS_FAILED, f"{host!r} does not resolve: {exc}") from exc
        if not addresses:
            raise FetchError(FetchFailure.DNS_FAILED, f"{host!r} has no address")
    if not exempt:
        # Every address, not only the one connected to: a name answering one public and one private address
        # is either misconfigured or an attack, and neither is worth fetching.
        for address in addresses:
            reason = address_block_reason(address)
            if reason is not None:
                where = f"{address}" if literal is not None else f"{host!r} resolves to {address}, which"
                raise FetchError(FetchFailure.BLOCKED_ADDRESS, f"{where} is {reason}")
    return VettedTarget(parsed, host, port, addresses[0])


def pinned_request(client: httpx.AsyncClient, target: VettedTarget) -> httpx.Request:
    """A GET to the vetted address that still names the host (``Host`` header; SNI and certificate check)."""
    address_url = target.url.copy_with(host=str(target.address), fragment=None)
    headers = {
        "Host": target.url.netloc.decode("ascii"),
        "User-Agent": USER_AGENT,
        "Accept": ACCEPT,
        "Accept-Encoding": ACCEPT_ENCODING,
    }
    extensions: dict[str, object] = {}
    if target.url.scheme == "https" and parse_ip_literal(target.host) is None:
        extensions["sni_hostname"] = target.url.raw_host.decode("ascii")
    return client.build_request("GET", address_url, headers=headers, extensions=extensions)


def media_type_of(content_type: str) -> tuple[str, str | None]:
    """``("text/html", "utf-8")`` from ``"text/html; charset=UTF-8"``; the charset is None when absent."""
    media_type, _, params = content_type.partition(";")
    charset: str | None = None
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip("\"'").lower()
    return media_type.strip().lower(), charset


async def read_capped(response: httpx.Response, max_bytes: int) -> tuple[bytes, bool]:
    """At most ``max_bytes`` of the (decoded) body, and whether more was on its way.

    Stops reading there: the caller closes the response, which closes the connection instead of draining it.
    """
    body = bytearray()
    async for chunk in response.aiter_bytes():
        if len(body) + len(chunk) > max_bytes:
            body += chunk[: max_bytes - len(body)]
            return bytes(body), True
        body += chunk
    return bytes(body), False


def decode_body(body: bytes, charset: str | None) -> str:
    """Text in the declared charset (UTF-8 when none or unknown); undecodable bytes become U+FFFD."""
    encoding = FALLBACK_CHARSET
    if charset:
        try:
            encoding = codecs.lookup(charset).name
        except LookupError:
            encoding = FALLBACK_CHARSET
    return body.decode(encoding, errors="replace")


def readable_text(body: bytes, media_type: str, charset: str | None) -> str:
    """The page's main text.

    trafilatura for HTML (headers, menus and footers dropped; its plain-text fallback when it finds no main content),
    the body itself for plain text.
    """
    if media_type not in HTML_CONTENT_TYPES:
        return decode_body(body, charset).strip()
    if importlib.util.find_spec("trafilatura") is None:
        # An installation without it: the page's text without markup, scripts or styles, boilerplate
        # included.
        return _tag_free_text(decode_body(body, charset))
    import trafilatura

    # Without a declared charset trafilatura gets the bytes and reads the page's own <meta charset>.
    source: str | bytes = decode_body(body, charset) if charset else body
    text = trafilatura.extract(
        source,
        output_format="txt",
        include_tables=True,
        include_links=False,
        include_images=False,
        include_comments=False,
        favor_recall=True,
    )
    if not text:
        text = trafilatura.html2txt(source) or ""
    return text.strip()


class _TextOnly(HTMLParser):
    """The text of an HTML document, without its scripts, styles and markup."""

    SKIPPED = frozenset({"script", "style", "noscript", "template", "head"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIPPED:
            self._skipping += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIPPED and self._skipping:
            self._skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self._skipping and data.strip():
            self.parts.append(data.strip())


def _tag_free_text(html: str) -> str:
    parser = _TextOnly()
    parser.feed(html)
    parser.close()
    return "\n".join(parser.parts)


def cut_utf8(text: str, limit_bytes: int) -> tuple[str, bool]:
    """``text`` cut to at most ``limit_bytes`` of UTF-8, never inside a character; and whether it was cut."""
    encoded = text.encode("utf-8", errors="replace")
    if len(encoded) <= limit_bytes:
        return text, False
    # The encoding is valid UTF-8, so the only invalid bytes after the cut are a split character's head.
    return encoded[:limit_bytes].decode("utf-8", errors="ignore"), True


async def safe_fetch(
    url: str,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_redirects: int = DEFAULT_MAX_REDIRECTS,
    text_limit_bytes: int = WEB_FETCH_TEXT_LIMIT_BYTES,
    allow_private: bool = False,
    allowed_endpoints: Iterable[tuple[str, int]] = (),
    resolver: Resolver = system_resolver,
    trust: ssl.SSLContext | None = None,
) -> FetchedPage:
    """Fetch ``url`` under the SSRF policy and return its readable text; raises :class:`FetchError`.

    ``timeout_s`` bounds the whole fetch (resolution, every redirect, the body); ``connect_timeout_s`` each
    connection. ``allow_private`` and ``allowed_endpoints`` relax the address rules (see
    :class:`ragline.web.ssrf.FetchPolicy`); both default to the strict policy. ``trust`` replaces the system's
    certificate authorities (an intranet CA, a test CA); certificates are always verified.
    """
    policy = FetchPolicy.build(allow_private, allowed_endpoints)
    limits = _Limits(
        timeout=httpx.Timeout(timeout_s, connect=min(connect_timeout_s, timeout_s)),
        max_bytes=max_bytes,
        trust=trust if trust is not None else True,
    )
    redirects: list[str] = []
    current = url
    try:
        async with asyncio.timeout(timeout_s):
            for _attempt in range(max_redirects + 1):
                target = await vet_url(current, policy, resolver)
                hop = await _get(target, limits)
                if hop.location is not None:
                    current = hop.location
                    redirects.append(current)
                    continue
                # lxml parsing is CPU work: off the event loop so parallel fetches keep streaming.
                text = await asyncio.to_thread(readable_text, hop.body, hop.media_type, hop.charset)
                break
            else:
                raise FetchError(FetchFailure.TOO_MANY_REDIRECTS, f"more than {max_redirects} redirects")
    except TimeoutError as exc:
        raise FetchError(FetchFailure.TIMEOUT, f"no page within {timeout_s:g}s") from exc
    if not text:
        raise FetchError(FetchFailure.EMPTY_TEXT, "the page has no readable text")
    text, text_truncated = cut_utf8(text, text_limit_bytes)
    return FetchedPage(
        url=str(target.url.copy_with(fragment=None)),
        status_code=hop.status_code,
        content_type=hop.media_type,
        text=text,
        body_bytes=len(hop.body),
        body_truncated=hop.body_truncated,
        text_truncated=text_truncated,
        redirects=tuple(redirects),
    )


@dataclass(frozen=True)
class _Limits:
    timeout: httpx.Timeout
    max_bytes: int
    trust: ssl.SSLContext | bool


@dataclass(frozen=True)
class _Hop:
    """One response: a redirect's absolute target, or a page's capped body."""

    status_code: int
    location: str | None = None
    body: bytes = b""
    body_truncated: bool = False
    media_type: str = ""
    charset: str | None = None


async def _get(target: VettedTarget, limits: _Limits, content_types: frozenset[str] = ALLOWED_CONTENT_TYPES) -> _Hop:
    """One GET to the pinned address.

    A fresh client per hop: a pooled connection would carry a request for the next host over a TLS session that was
    verified for the previous one.
    """
    async with httpx.AsyncClient(
        timeout=limits.timeout, follow_redirects=False, trust_env=False, verify=limits.trust
    ) as client:
        try:
            response = await client.send(pinned_request(client, target), stream=True)
        except httpx.TimeoutException as exc:
            raise FetchError(FetchFailure.TIMEOUT, f"{target.host}: {type(exc).__name__}") from exc
        except httpx.HTTPError as exc:
            raise FetchError(FetchFailure.NETWORK, f"{target.host}: {type(exc).__name__}: {exc}") from exc
        try:
            if response.status_code in REDIRECT_STATUSES:
                return _Hop(response.status_code, location=_redirect_target(target, response))
            if not response.is_success:
                raise FetchError(FetchFailure.HTTP_STATUS, f"HTTP {response.status_code}")
            media_type, charset = media_type_of(response.headers.get("content-type", ""))
            if media_type not in content_types:
                raise FetchError(FetchFailure.UNSUPPORTED_CONTENT_TYPE, f"{media_type or '(none)'} is not a page")
            try:
                body, truncated = await read_capped(response, limits.max_bytes)
            except httpx.TimeoutException as exc:
                raise FetchError(FetchFailure.TIMEOUT, f"{target.host}: {type(exc).__name__}") from exc
            except httpx.HTTPError as exc:
                raise FetchError(FetchFailure.NETWORK, f"{target.host}: {type(exc).__name__}") from exc
            return _Hop(response.status_code, None, body, truncated, media_type, charset)
        finally:
            # Closing a stream that was not read to the end closes its connection: nothing more is downloaded.
            await response.aclose()


def _redirect_target(target: VettedTarget, response: httpx.Response) -> str:
    """The absolute URL a redirect points to, resolved against the named URL (not the pinned address)."""
    location = response.headers.get("location", "").strip()
    if not location:
        raise FetchError(FetchFailure.HTTP_STATUS, f"HTTP {response.status_code} without Location")
    try:
        return str(target.url.join(location).copy_with(fragment=None))
    except (httpx.InvalidURL, ValueError) as exc:
        raise FetchError(FetchFailure.INVALID_URL, f"unusable Location {location!r}: {exc}") from exc


# --- a document from a URL (WeKnora's knowledge from URL)

# What a knowledge base can take from a URL: pages, text and the document formats ingestion reads; a server
# that says octet-stream leaves it to the file's name.
DOCUMENT_CONTENT_TYPES = frozenset(
    {
        *ALLOWED_CONTENT_TYPES,
        "text/markdown",
        "text/x-markdown",
        "text/csv",
        "text/tab-separated-values",
        "application/pdf",
        "application/epub+zip",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "application/octet-stream",
    }
)
DOCUMENT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class FetchedDocument:
    """A whole response body from a URL, as a file: where it ended up, its media type and bytes."""

    url: str
    media_type: str
    body: bytes
    redirects: tuple[str, ...] = ()


async def fetch_document(
    url: str, config: WebFetchConfig, *, max_bytes: int, resolver: Resolver = system_resolver
) -> FetchedDocument:
    """The body at ``url`` under WEB_FETCH's SSRF policy, whole or not at all.

    The body at ``url`` under the same SSRF policy as WEB_FETCH (every hop vetted, the address pinned, redirects
    followed by hand), whole or not at all: a body over ``max_bytes`` is :attr:`FetchFailure.TOO_LARGE`. Raises
    :class:`FetchError`.
    """
    policy = FetchPolicy.build(config.allow_private, config.allowed_endpoints)
    timeout_s = max(config.timeout_s, DOCUMENT_TIMEOUT_S)
    trust = ssl.create_default_context(cafile=config.ca_bundle) if config.ca_bundle else True
    limits = _Limits(
        timeout=httpx.Timeout(timeout_s, connect=min(config.connect_timeout_s, timeout_s)),
        max_bytes=max_bytes,
        trust=trust,
    )
    redirects: list[str] = []
    current = url
    try:
        async with asyncio.timeout(timeout_s):
            for _attempt in range(config.max_redirects + 1):
                target = await vet_url(current, policy, resolver)
                hop = await _get(target, limits, DOCUMENT_CONTENT_TYPES)
                if hop.location is None:
                    break
                current = hop.location
                redirects.append(current)
            else:
                raise FetchError(FetchFailure.TOO_MANY_REDIRECTS, f"more than {config.max_redirects} redirects")
    except TimeoutError as exc:
        raise FetchError(FetchFailure.TIMEOUT, f"no document within {timeout_s:g}s") from exc
    if hop.body_truncated:
        raise FetchError(FetchFailure.TOO_LARGE, f"the document is larger than {max_bytes} bytes")
    if not hop.body:
        raise FetchError(FetchFailure.EMPTY_TEXT, "the document is empty")
    return FetchedDocument(
        url=str(target.url.copy_with(fragment=None)),
        media_type=hop.media_type,
        body=hop.body,
        redirects=tuple(redirects),
    )


# --- what WEB_FETCH plugs in


class WebFetchConfig(BaseModel):
    """WEB_FETCH settings for ``AppConfig`` (the lead hooks it in); defaults are the strict policy."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    max_bytes: int = DEFAULT_MAX_BYTES
    max_redirects: int = DEFAULT_MAX_REDIRECTS
    text_limit_bytes: int = WEB_FETCH_TEXT_LIMIT_BYTES
    # Used when a request's ``web_fetch_top_n`` is not positive.
    default_top_n: int = DEFAULT_TOP_N
    # A request asking for many pages still opens at most this many connections at once.
    max_parallel: int = DEFAULT_MAX_PARALLEL
    # Deliberate intranet fetching only; tests use ``allowed_endpoints`` for their 127.0.0.1 servers.
    allow_private: bool = False
    allowed_endpoints: list[tuple[str, int]] = Field(default_factory=list)
    # A PEM file of certificate authorities to trust instead of the system's (an intranet CA); "" = system.
    ca_bundle: str = ""


class PageFetcher(Protocol):
    """The port WEB_FETCH calls: a URL in, readable text out, :class:`FetchError` on any failure."""

    async def fetch(self, url: str) -> FetchedPage:
        """The page at ``url``; :class:`FetchError` when it cannot be fetched."""
        ...


class SafePageFetcher:
    """:func:`safe_fetch` with one configuration."""

    def __init__(self, config: WebFetchConfig | None = None, resolver: Resolver = system_resolver) -> None:
        """A fetcher with ``config``'s limits and SSRF policy, resolving names with ``resolver``."""
        self._config = config if config is not None else WebFetchConfig()
        self._resolver = resolver
        self._trust = ssl.create_default_context(cafile=self._config.ca_bundle) if self._config.ca_bundle else None

    async def fetch(self, url: str) -> FetchedPage:
        """The page at ``url``, fetched under the configured limits and SSRF policy."""
        config = self._config
        return await safe_fetch(
            url,
            timeout_s=config.timeout_s,
            connect_timeout_s=config.connect_timeout_s,
            max_bytes=config.max_bytes,
            max_redirects=config.max_redirects,
            text_limit_bytes=config.text_limit_bytes,
            allow_private=config.allow_private,
            allowed_endpoints=config.allowed_endpoints,
            resolver=self._resolver,
            trust=self._trust,
        )
