"""The operator's allow-list of LLM provider URLs (--llm-base-url-allow), matched as URLs, never as strings.

A string prefix let `https://api.openai.com` allow `https://api.openai.com.evil.example/` (another host) and
`https://api.openai.com@evil.example/` (userinfo, the host being evil.example): issue 34. Both sides are parsed by
httpx, the parser of the client that calls the provider, so that what is compared is what would be called: the
scheme, the host and the port (a scheme's default port written or not) must be equal, a URL with userinfo is never
allowed, and the entry's path must be a whole-segment prefix of the URL's (`/v1` allows `/v1` and `/v1/x`, not
`/v10`), after the client's own normalisation of `.` and `..` segments.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import httpx

DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class AllowedUrl:
    scheme: str
    host: str
    port: int
    path: str  # no trailing "/": "" allows every path of the host

    def allows(self, url: httpx.URL) -> bool:
        if (url.scheme, url.host, _port(url)) != (self.scheme, self.host, self.port) or url.userinfo:
            return False
        path = _raw_path(url)
        return not self.path or path == self.path or path.startswith(self.path + "/")


def _port(url: httpx.URL) -> int:
    return url.port if url.port is not None else DEFAULT_PORTS[url.scheme]


def _raw_path(url: httpx.URL) -> str:
    """The path as sent (percent-encoded, so that `%2F` never counts as a segment boundary), without the query."""
    return url.raw_path.partition(b"?")[0].decode("ascii")


@functools.lru_cache(maxsize=256)  # asked at every turn of a configuration, for the few entries an operator gives
def parse_allowed(entry: str) -> AllowedUrl:
    """An allow-list entry, or ValueError saying what is wrong with it (the server refuses to start)."""
    expected = "give scheme://host[:port][/path], scheme http or https, without user, query or fragment"
    try:
        url = httpx.URL(entry)
    except (httpx.InvalidURL, TypeError) as exc:
        raise ValueError(f"{entry!r} is not a URL ({exc}): {expected}") from exc
    if url.scheme not in DEFAULT_PORTS or not url.host:
        raise ValueError(f"{entry!r} has no http(s) scheme and host: {expected}")
    if url.userinfo or url.query or url.fragment or "?" in entry or "#" in entry:
        raise ValueError(f"{entry!r} has a user, a query or a fragment: {expected}")
    if not 0 < _port(url) < 65536:
        raise ValueError(f"{entry!r} has no valid port: {expected}")
    return AllowedUrl(url.scheme, url.host, _port(url), _raw_path(url).rstrip("/"))


def url_allowed(base_url: str, allowed: list[AllowedUrl]) -> bool:
    """Whether `base_url` is under one of the `allowed` entries; a URL that does not parse is under none."""
    try:
        url = httpx.URL(base_url)
    except (httpx.InvalidURL, TypeError):
        return False
    if url.scheme not in DEFAULT_PORTS or not url.host:
        return False
    return any(entry.allows(url) for entry in allowed)
