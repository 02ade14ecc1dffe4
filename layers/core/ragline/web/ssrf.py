"""Which hosts and addresses a web fetch may reach: the SSRF policy, as pure functions.

Web search hands the pipeline URLs chosen by strangers (anyone can publish a page that ranks), and a server
that fetches them runs inside a network with things worth reaching: the cloud metadata service at
169.254.169.254 (instance credentials), databases and admin consoles on private addresses, services bound to
loopback. So a URL is refused unless every address its host resolves to is a public unicast address.

Refused addresses (``address_block_reason`` names the rule that matched):

- unspecified (``0.0.0.0``, ``::``) — connecting to it reaches the local host;
- loopback (``127.0.0.0/8``, ``::1``);
- link-local (``169.254.0.0/16`` — the cloud metadata endpoint — and ``fe80::/10``);
- multicast (``224.0.0.0/4``, ``ff00::/8``);
- shared address space / carrier-grade NAT (``100.64.0.0/10``), which Python does not count as private;
- private (``10/8``, ``172.16/12``, ``192.168/16``, ``fc00::/7`` and the rest of Python's private list:
  ``0.0.0.0/8``, documentation and benchmarking ranges, ``255.255.255.255``, …);
- reserved (``240.0.0.0/4``, ``::/8`` including IPv4-compatible ``::a.b.c.d``, …);
- IPv6 site-local (``fec0::/10``, deprecated but still routed by some stacks);
- IPv6 addresses that embed an IPv4 address which would be refused: IPv4-mapped ``::ffff:a.b.c.d``,
  6to4 ``2002::/16``, Teredo ``2001::/32`` (the client address), NAT64 ``64:ff9b::/96`` and
  IPv4-compatible ``::a.b.c.d`` — a dual-stack socket or a translator would deliver them to that IPv4 host;
- anything else Python does not call globally reachable.

Refused host names, before any DNS lookup:

- ``localhost`` and ``*.localhost`` (RFC 6761 reserves them for loopback);
- numeric host spellings that are not a canonical dotted quad — ``2130706433``, ``0x7f000001``,
  ``0177.0.0.1``, ``127.1`` — because resolvers and URL parsers disagree on what they mean (inet_aton reads
  ``0177`` as octal 127), and a check that parses one way while the connection parses another is the
  classic bypass.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address

IPAddress = IPv4Address | IPv6Address

CGNAT = IPv4Network("100.64.0.0/10")
NAT64_WELL_KNOWN = IPv6Network("64:ff9b::/96")
# IPv4-compatible IPv6 (deprecated): the low 32 bits are an IPv4 address.
IPV4_COMPATIBLE = IPv6Network("::/96")
IPV4_BITS = 0xFFFFFFFF
# One label of a numeric host: decimal, octal (leading 0) or hex (0x) — the forms inet_aton accepts.
_NUMERIC_LABEL = r"(?:0x[0-9a-f]*|[0-9]+)"
NUMERIC_HOST = re.compile(rf"{_NUMERIC_LABEL}(?:\.{_NUMERIC_LABEL}){{0,3}}\.?", re.IGNORECASE)
LOCALHOST = "localhost"
# The only schemes a result URL may have, whether it is cited or fetched.
WEB_SCHEMES = frozenset({"http", "https"})


def normalize_host(host: str) -> str:
    """Lower case, no trailing dot, no IPv6 brackets: the form hosts are compared in."""
    return host.strip().lower().rstrip(".").removeprefix("[").removesuffix("]")


def embedded_ipv4(address: IPv6Address) -> list[tuple[str, IPv4Address]]:
    """IPv4 addresses an IPv6 address carries, with the mechanism that would deliver to them."""
    found: list[tuple[str, IPv4Address]] = []
    if address.ipv4_mapped is not None:
        found.append(("IPv4-mapped", address.ipv4_mapped))
    if address.sixtofour is not None:
        found.append(("6to4", address.sixtofour))
    if address.teredo is not None:
        found.append(("Teredo", address.teredo[1]))
    if address in NAT64_WELL_KNOWN:
        found.append(("NAT64", IPv4Address(int(address) & IPV4_BITS)))
    if address in IPV4_COMPATIBLE and int(address) > 1:  # :: and ::1 are their own rules
        found.append(("IPv4-compatible", IPv4Address(int(address) & IPV4_BITS)))
    return found


def address_block_reason(address: IPAddress) -> str | None:
    """Why a connection to ``address`` is refused, or None when it is a public unicast address."""
    if isinstance(address, IPv6Address):
        for mechanism, inner in embedded_ipv4(address):
            reason = address_block_reason(inner)
            if reason is not None:
                return f"{mechanism} {inner} is {reason}"
    if address.is_unspecified:
        return "unspecified"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast:
        return "multicast"
    if isinstance(address, IPv4Address) and address in CGNAT:
        return "shared address space (CGNAT)"
    if address.is_private:
        return "private"
    if address.is_reserved:
        return "reserved"
    if isinstance(address, IPv6Address) and address.is_site_local:
        return "site-local"
    if not address.is_global:
        return "not globally reachable"
    return None


def parse_ip_literal(host: str) -> IPAddress | None:
    """``host`` as an IP address when it is a canonical literal (dotted quad or IPv6), else None."""
    try:
        return ip_address(normalize_host(host))
    except ValueError:
        return None


def is_non_canonical_numeric(host: str) -> bool:
    """Whether ``host`` is a number-only spelling other than a dotted quad or IPv6 literal.

    ``host`` is a number-only spelling other than a dotted quad or IPv6 literal (``2130706433``, ``0x7f000001``,
    ``0177.0.0.1``, ``127.1``). Refused under every policy: it is ambiguous, not private.
    """
    name = normalize_host(host)
    return bool(NUMERIC_HOST.fullmatch(name)) and parse_ip_literal(name) is None


def hostname_block_reason(host: str) -> str | None:
    """A refusal the name alone decides (before DNS), which a policy exemption lifts; None lets resolution decide."""
    name = normalize_host(host)
    if not name:
        return "empty host"
    if name == LOCALHOST or name.endswith(f".{LOCALHOST}"):
        return "a localhost name"
    return None


@dataclass(frozen=True)
class FetchPolicy:
    """Who may be reached besides the public internet.

    ``allow_private`` lifts the address rules entirely (a deployment that deliberately fetches intranet
    pages). ``allowed_endpoints`` lifts them for exact ``(host, port)`` pairs only — tests serve pages from
    127.0.0.1 this way and can still prove that a redirect to another loopback port is refused. Neither
    lifts the scheme rule or the numeric-spelling rule.
    """

    allow_private: bool = False
    allowed_endpoints: frozenset[tuple[str, int]] = field(default_factory=frozenset)

    @classmethod
    def build(cls, allow_private: bool = False, allowed_endpoints: Iterable[tuple[str, int]] = ()) -> FetchPolicy:
        """A policy from configuration: host names normalised, ports as integers."""
        return cls(allow_private, frozenset((normalize_host(host), int(port)) for host, port in allowed_endpoints))

    def exempts(self, host: str, port: int) -> bool:
        """True when ``(host, port)`` may be reached even though its address is private."""
        return self.allow_private or (normalize_host(host), port) in self.allowed_endpoints
