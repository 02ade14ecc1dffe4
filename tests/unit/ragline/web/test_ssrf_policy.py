"""The address and host-name rules of the fetch policy, without any network."""

from __future__ import annotations

from ipaddress import ip_address

import pytest

from ragline.web.ssrf import (
    FetchPolicy,
    address_block_reason,
    embedded_ipv4,
    hostname_block_reason,
    is_non_canonical_numeric,
)


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("::1", "loopback"),
        ("10.0.0.1", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.254", "private"),
        ("192.168.1.1", "private"),
        ("fd00::1", "private"),
        ("169.254.169.254", "link-local"),  # the cloud metadata service
        ("fe80::1", "link-local"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("0.1.2.3", "private"),  # "this network"
        ("100.64.0.1", "shared address space (CGNAT)"),
        ("100.127.255.254", "shared address space (CGNAT)"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("fec0::1", "site-local"),
    ],
)
def test_refused_addresses(address, reason):
    assert address_block_reason(ip_address(address)) == reason


# Python versions file these under "private" or "reserved"; refused either way.
@pytest.mark.parametrize("address", ["240.0.0.1", "255.255.255.255", "192.0.2.10", "198.18.0.1", "2001:db8::1"])
def test_reserved_documentation_and_benchmark_ranges_are_refused(address):
    assert address_block_reason(ip_address(address)) is not None


@pytest.mark.parametrize(
    ("address", "mechanism"),
    [
        ("::ffff:127.0.0.1", "IPv4-mapped 127.0.0.1 is loopback"),
        ("::ffff:169.254.169.254", "IPv4-mapped 169.254.169.254 is link-local"),
        ("::ffff:10.1.2.3", "IPv4-mapped 10.1.2.3 is private"),
        ("2002:7f00:1::", "6to4 127.0.0.1 is loopback"),
        ("2002:a9fe:a9fe::1", "6to4 169.254.169.254 is link-local"),
        ("64:ff9b::a00:1", "NAT64 10.0.0.1 is private"),
        ("::127.0.0.1", "IPv4-compatible 127.0.0.1 is loopback"),
    ],
)
def test_ipv6_embedding_a_refused_ipv4_is_refused(address, mechanism):
    assert address_block_reason(ip_address(address)) == mechanism


def test_teredo_client_address_is_checked():
    # Teredo server 65.54.227.120, client 127.0.0.1 (stored inverted in the last 32 bits).
    teredo = ip_address("2001:0:4136:e378:8000:63bf:80ff:fffe")
    assert ("Teredo", ip_address("127.0.0.1")) in embedded_ipv4(teredo)
    assert address_block_reason(teredo) == "Teredo 127.0.0.1 is loopback"


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "1.1.1.1", "2606:4700::1111", "2a00:1450::1"])
def test_public_addresses_pass(address):
    assert address_block_reason(ip_address(address)) is None


@pytest.mark.parametrize("host", ["2130706433", "0x7f000001", "0177.0.0.1", "127.1", "0x7f.0.0.1", "017700000001"])
def test_non_canonical_numeric_spellings(host):
    assert is_non_canonical_numeric(host)


@pytest.mark.parametrize("host", ["127.0.0.1", "8.8.8.8", "example.com", "1password.com", "123.example", "::1"])
def test_canonical_literals_and_names_are_not_numeric_spellings(host):
    assert not is_non_canonical_numeric(host)


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST.", "api.localhost", "[localhost]"])
def test_localhost_names(host):
    assert hostname_block_reason(host) == "a localhost name"


def test_ordinary_names_are_left_to_resolution():
    assert hostname_block_reason("example.com") is None
    assert hostname_block_reason("") == "empty host"


def test_policy_exemptions_are_exact_host_and_port():
    policy = FetchPolicy.build(allowed_endpoints=[("127.0.0.1", 8080), ("Wiki.Corp.", 443), ("[::1]", 9000)])
    assert policy.exempts("127.0.0.1", 8080)
    assert not policy.exempts("127.0.0.1", 8081)
    assert policy.exempts("wiki.corp", 443)
    assert policy.exempts("::1", 9000)
    assert not FetchPolicy().exempts("127.0.0.1", 8080)
    assert FetchPolicy.build(allow_private=True).exempts("10.0.0.1", 80)
