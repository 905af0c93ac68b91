"""The suite's one HTTP transport: a request read whole, or a stream read frame by frame through the one SSE
tokenizer (sse.py), each under a hard deadline, optionally on a fresh connection, each kept as evidence (an Exchange
in the check's list) with its tokens redacted, the headers a rule is about kept and a transport error worded once;
the sessions a turn made go in the run's ledger from here too.

The GNS3 chat stream (conformance/channels/gns3_stream.py) and the channels (conformance/channels/client.py) are
adapters over it: they build the protocol's request and read the protocol's meaning out of the answer."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ssl
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from conformance.transport.exchanges import Exchange
from conformance.transport.sse import Frame, SseBody, SseTokenizer

if TYPE_CHECKING:
    from conformance.harness.environment import Environment

# The headers a rule is about (authentication, caching, the stream's type, allowed methods, the UI stream's marker,
# proxies' buffering), and X-Copilot-Worker: the process of a server of several that answered (the reference
# server's, with --workers), shown in the evidence of a rule broken across processes.
KEPT_HEADERS = (
    "www-authenticate",
    "cache-control",
    "content-type",
    "allow",
    "x-accel-buffering",
    "x-vercel-ai-ui-message-stream",
    "x-copilot-worker",
)


@dataclass
class Streamed:
    """An answer to a request whose answer may be a stream: `sse` holds its frames when it was one (a 200
    text/event-stream), else `exchange.body` the body read whole."""

    exchange: Exchange
    headers: dict[str, str] = field(default_factory=dict)  # every response header, names in lower case
    sse: SseBody | None = None
    raw: str = ""  # the body as received
    completed: bool = False  # the server ended the answer (not the suite's disconnect or deadline)
    opened: float = 0.0  # seconds from sending the request to the response's headers
    started: float = 0.0  # monotonic time the request was begun: frames' `at` and `opened` count from it


def transport_error(exc: Exception, started: float) -> str:
    """A transport error or the suite's deadline, as the evidence words it."""
    after = f" after {time.monotonic() - started:.1f} s"
    if isinstance(exc, TimeoutError):
        return f"TimeoutError{after} (the suite's deadline)"
    return f"{type(exc).__name__}{after}" + (f": {exc}" if str(exc) else "")


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One for every client the suite makes: making one per client (httpx's default) costs some 20 ms of CPU, which
    would spread requests meant to go at once over the run's event loop."""
    return ssl.create_default_context()


@contextlib.asynccontextmanager
async def _connection(shared: httpx.AsyncClient, fresh: bool) -> AsyncIterator[httpx.AsyncClient]:
    """The run's client, or with `fresh` a client of its own that opens one new TCP connection for the one request
    and closes it after: a server of several processes behind one port then gets each such request on whichever
    process the kernel gives that connection, whatever the run's client keeps alive."""
    if not fresh:
        yield shared
        return
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=0)
    async with httpx.AsyncClient(
        timeout=shared.timeout, limits=limits, trust_env=False, verify=tls_context()
    ) as client:
        yield client


class Transport:
    """One check's requests; every exchange goes in `exchanges`, the check's evidence, in the order made."""

    def __init__(self, env: Environment, exchanges: list[Exchange]) -> None:
        self.env, self.exchanges = env, exchanges

    def note_session(self, user: str | None, project_id: str | None, session_id: object) -> None:
        """A session a turn may have made goes in the run's ledger, with who made it (for the clean-up)."""
        if user and isinstance(session_id, str) and session_id:
            self.env.ledger.session(user, project_id or self.env.project_id, session_id)

    def headers_for(self, user: str | None, headers: dict[str, str] | None, *, json_body: bool) -> dict[str, str]:
        sent = {**(self.env.authorization(user) if user is not None else {}), **(headers or {})}
        if json_body:
            sent.setdefault("Content-Type", "application/json")
        return sent

    def shown_authorization(self, header: str | None) -> str | None:
        """The Authorization header as evidence shows it: a user's real token becomes $TOKEN, the controller admin's
        $ADMIN_TOKEN; a forged or foreign header is shown as sent."""
        if header is not None and any(header == f"Bearer {u.token}" for u in self.env.users.values() if u.token):
            return "Bearer $TOKEN"
        controller = self.env.controller
        if header is not None and controller is not None and header == f"Bearer {controller.admin_token}":
            return "Bearer $ADMIN_TOKEN"
        return header

    def _exchange(self, method: str, url: str, content: bytes | None, sent: dict[str, str], user: str | None):
        body = content.decode("utf-8", "replace") if content is not None else None
        return Exchange(
            method, url, body, user=user or "(none)", authorization=self.shown_authorization(sent.get("Authorization"))
        )

    @staticmethod
    def _note_response(exchange: Exchange, response: httpx.Response) -> dict[str, str]:
        exchange.status = response.status_code
        exchange.content_type = response.headers.get("content-type")
        every = {k.lower(): v for k, v in response.headers.items()}
        exchange.headers = {k: v for k, v in every.items() if k in KEPT_HEADERS}
        return every

    async def send(
        self,
        method: str,
        url: str,
        *,
        user: str | None = "main",
        content: bytes | None = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        deadline: float,
        fresh: bool = False,
    ) -> Exchange:
        """One request read whole, never longer than `deadline` seconds."""
        sent = self.headers_for(user, headers, json_body=content is not None)
        exchange = self._exchange(method, str(httpx.URL(url, params=params)), content, sent, user)
        started = time.monotonic()
        try:
            async with asyncio.timeout(deadline), _connection(self.env.client, fresh) as client:
                response = await client.request(method, url, content=content, params=params, headers=sent)
        except (httpx.TransportError, TimeoutError) as exc:
            exchange.error = transport_error(exc, started)
        else:
            self._note_response(exchange, response)
            exchange.body = response.text
        exchange.elapsed = time.monotonic() - started
        self.exchanges.append(exchange)
        return exchange

    async def stream(
        self,
        url: str,
        content: bytes,
        *,
        user: str | None = "main",
        headers: dict[str, str] | None = None,
        deadline: float,
        fresh: bool = False,
        stop_when: Callable[[Frame], bool] | None = None,
    ) -> Streamed:
        """POST `content` and read the answer: a 200 text/event-stream frame by frame to its end, or until
        `stop_when(frame)` (then the suite disconnects); any other answer whole; never longer than `deadline`."""
        sent = self.headers_for(user, headers, json_body=True)
        exchange = self._exchange("POST", url, content, sent, user)
        answer = Streamed(exchange, started=time.monotonic())
        tokenizer = SseTokenizer()
        chunks: list[str] = []
        try:
            async with asyncio.timeout(deadline), _connection(self.env.client, fresh) as client:
                async with client.stream("POST", url, content=content, headers=sent) as response:
                    answer.opened = time.monotonic() - answer.started
                    answer.headers = self._note_response(exchange, response)
                    if response.status_code != 200 or not (exchange.content_type or "").startswith("text/event-stream"):
                        exchange.body = answer.raw = (await response.aread()).decode("utf-8", "replace")
                        answer.completed = True
                    else:
                        answer.completed = await _read(response, tokenizer, chunks, answer.started, stop_when)
        except (httpx.TransportError, TimeoutError) as exc:
            exchange.error = transport_error(exc, answer.started)
        exchange.elapsed = time.monotonic() - answer.started
        if chunks:
            answer.raw = "".join(chunks)
            answer.sse = tokenizer.body()
        self.exchanges.append(exchange)
        return answer


async def _read(
    response: httpx.Response,
    tokenizer: SseTokenizer,
    chunks: list[str],
    started: float,
    stop_when: Callable[[Frame], bool] | None,
) -> bool:
    """Feed the body to the tokenizer as it comes; False when `stop_when` cut it short."""
    async for text in response.aiter_text():
        chunks.append(text)
        frames = tokenizer.feed(text, time.monotonic() - started)
        if stop_when is not None and any(stop_when(frame) for frame in frames):
            return False
    return True
