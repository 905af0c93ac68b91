"""The client side of the HTTP subjects: log in, make a project, and time an SSE stream frame by frame."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx

from .samples import TurnSample


async def login(client: httpx.AsyncClient, username: str = "admin", password: str = "admin") -> dict[str, str]:
    response = await client.post("/v3/access/users/authenticate", json={"username": username, "password": password})
    response.raise_for_status()
    return {"Authorization": f"Bearer {response.json()['access_token']}"}


async def my_user_id(client: httpx.AsyncClient, headers: dict[str, str]) -> str:
    """The caller's user_id: the server filters GET /sessions by it (and by the project)."""
    response = await client.get("/v3/access/users/me", headers=headers)
    response.raise_for_status()
    return response.json()["user_id"]


async def new_project(client: httpx.AsyncClient, headers: dict[str, str], name: str) -> str:
    """A new project, opened by its creation."""
    response = await client.post("/v3/projects", json={"name": name}, headers=headers)
    response.raise_for_status()
    return response.json()["project_id"]


async def timed_stream(
    client: httpx.AsyncClient,
    url: str,
    *,
    body: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    keep: list[bytes] | None = None,
    counts: Callable[[bytes], bool] | None = None,
) -> TurnSample:
    """POST, then read the raw body and count complete `data:` frames; `keep` receives the frames if given.
    With `counts`, only the frames whose `data:` payload it accepts are counted (a frame may start with an
    `event:` line, as OpenAI's Responses stream writes them).

    The clock starts before the request is sent; TTFE is when the first whole counted frame has arrived.
    """
    count, first, pending = 0, None, b""
    start = time.perf_counter()
    async with client.stream("POST", url, json=body or {}, headers=headers) as response:
        if response.status_code != 200:
            await response.aread()
            raise RuntimeError(f"POST {url}: {response.status_code} {response.text}")
        async for chunk in response.aiter_raw():
            pending += chunk
            if b"\n\n" not in pending:
                continue
            *frames, pending = pending.split(b"\n\n")
            for frame in frames:
                data = _data(frame)
                if data is not None and (counts is None or counts(data)):
                    count += 1
                    if first is None:
                        first = time.perf_counter()
            if keep is not None:
                keep.extend(frame for frame in frames if frame)
    end = time.perf_counter()
    if pending.strip():
        raise RuntimeError(f"POST {url}: the stream ended inside a frame: {pending[:200]!r}")
    return TurnSample(events=count, ttfe=(first or end) - start, total=end - start)


def _data(frame: bytes) -> bytes | None:
    """The payload of a frame's `data:` line (which may follow `event:` or `id:` lines); None without one."""
    if frame.startswith(b"data:"):
        return frame[5:]
    at = frame.find(b"\ndata:")
    return None if at < 0 else frame[at + 6 :]
