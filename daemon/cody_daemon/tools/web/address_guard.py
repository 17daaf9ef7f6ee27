"""Which network addresses a model-chosen URL may reach (fetchUrl).

A model (or a page it read) picks the URL, so without a guard it could make the daemon read
services on the user's machine or network: a router's admin page, a cloud metadata endpoint
(169.254.169.254), a dev server on localhost. Only globally routable addresses are fetched,
unless the user lists networks in `[tools.fetchUrl] allow_private` (IPs or CIDR networks,
e.g. `["127.0.0.1", "10.0.0.0/8"]`; a cloned project cannot set it).

Invariants: the host of every hop (the first URL and each redirect) is resolved and every
address it resolves to must be allowed, before a request is sent to it; after connecting,
the address actually connected to is checked again (so a DNS answer that changes between the
check and the connection — DNS rebinding — is caught before any of the body is read). When
the request goes through an HTTP proxy from the environment, the proxy resolves the name;
only the first check applies then.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

__all__ = ["AddressPolicy", "BlockedAddress", "UnresolvableHost"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class BlockedAddress(Exception):
    """The URL's host is (or resolves to) an address the policy does not allow."""


class UnresolvableHost(BlockedAddress):
    """The host name does not resolve here (a remote fetcher such as Firecrawl may still try)."""


def _plain(address: IPAddress) -> IPAddress:
    """An IPv4-mapped IPv6 address (::ffff:127.0.0.1) as the IPv4 address it maps."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


@dataclass(frozen=True, slots=True)
class AddressPolicy:
    allowed_private: tuple[IPNetwork, ...] = ()

    @classmethod
    def from_config(cls, entries: Iterable[str]) -> AddressPolicy:
        """Entries are validated by the config model; a bad one here is a programming error."""
        return cls(tuple(ipaddress.ip_network(entry, strict=False) for entry in entries))

    def refusal(self, address: IPAddress) -> str | None:
        """Why `address` may not be reached, or None when it may."""
        address = _plain(address)
        if address.is_global:
            return None
        if any(address.version == net.version and address in net for net in self.allowed_private):
            return None
        if address.is_loopback:
            kind = "a loopback address (this machine)"
        elif address.is_link_local:
            kind = "a link-local address"
        elif address.is_private:
            kind = "a private network address"
        else:
            kind = "not a public internet address"
        return f"{address} is {kind}"

    async def check_host(self, host: str, port: int) -> None:
        """Raise BlockedAddress unless every address `host` resolves to is allowed."""
        for address in await _resolve(host, port):
            reason = self.refusal(address)
            if reason is not None:
                raise BlockedAddress(_message(host, reason))

    def check_peer(self, response: httpx.Response, host: str) -> None:
        """Raise BlockedAddress when the connection behind `response` went somewhere refused."""
        if _proxied(str(response.url)):
            return
        stream = response.extensions.get("network_stream")
        if stream is None:
            return
        peer = stream.get_extra_info("server_addr")
        if not isinstance(peer, Sequence) or not peer:
            return
        try:
            address = ipaddress.ip_address(str(peer[0]).split("%", 1)[0])
        except ValueError:
            return
        reason = self.refusal(address)
        if reason is not None:
            raise BlockedAddress(_message(host, reason))


def _message(host: str, reason: str) -> str:
    return (
        f"{host}: {reason}; fetchUrl only reaches public addresses. To allow it, add the "
        "address to allow_private under [tools.fetchUrl] in your config (e.g. allow_private = "
        '["127.0.0.1"]).'
    )


async def _resolve(host: str, port: int) -> list[IPAddress]:
    literal = host.strip("[]")
    try:
        return [ipaddress.ip_address(literal)]
    except ValueError:
        pass
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(literal, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise UnresolvableHost(
            f"{host}: the name does not resolve ({exc.strerror or exc})"
        ) from None
    found: list[IPAddress] = []
    for *_, sockaddr in infos:
        try:
            found.append(ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0]))
        except ValueError:
            continue
    if not found:
        raise UnresolvableHost(f"{host}: the name does not resolve to an IP address")
    return found


def _proxied(url: str) -> bool:
    """True when an environment proxy (HTTP_PROXY, ...) would carry a request for `url`."""
    scheme, _, rest = url.partition("://")
    proxies = urllib.request.getproxies()
    if scheme not in proxies and "all" not in proxies:
        return False
    host = rest.split("/", 1)[0]
    return not urllib.request.proxy_bypass(host)
