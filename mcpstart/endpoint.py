"""Where a Streamable HTTP server's MCP endpoint is: a URL read into host, port and path, and
whether a host is a loopback address. A leaf: targets (a --url, a config's remote entry)
and the HTTP transport both use it."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

ENDPOINT = "/mcp"
"""The MCP endpoint of a spawned server by default (the reference servers' path; a recipe's
``run.endpoint`` or ``--endpoint`` names another)."""


def endpoint_path(value: str) -> str:
    """The path of a spawned server's MCP endpoint, as given: it starts with "/" and holds no
    whitespace (a query may follow).

    Raises:
        ValueError: any other value.
    """
    if not value.startswith("/") or any(c.isspace() for c in value):
        raise ValueError(f"{value!r} is not a path: it must start with / and hold no spaces")
    return value


def is_loopback(host: str) -> bool:
    """True for a loopback address (127.0.0.0/8, ::1) or "localhost"."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Endpoint:
    """Where the MCP endpoint is: ``host``, ``port``, ``path``, and ``headers`` sent with
    every request (an editor config's, e.g. Authorization)."""

    host: str
    port: int
    path: str = ENDPOINT
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, url: str, headers: dict[str, str] | None = None) -> "Endpoint":
        """An ``http://host:port/path`` URL (https is not spoken).

        Raises:
            ValueError: another scheme, or no host.
        """
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"{url!r}: an http://HOST:PORT/PATH URL is needed (mcpstart does "
                             "not speak https)")
        path = parts.path or "/"
        if parts.query:
            path += f"?{parts.query}"
        return cls(parts.hostname, parts.port or 80, path, tuple((headers or {}).items()))

    @property
    def authority(self) -> str:
        """``host:port`` as a URL and a Host header write it (an IPv6 address bracketed)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.authority}{self.path}"
