"""Preflight against servers that answer oddly where the target file points: a chat prefix or a channel path that
answers 405, a web page, or nothing at all, while the server answers at its root; tokens the server refuses. Each
stops the run with exit 2 naming the key of the target file to change and the URL tried, and blames base_url only
where nothing answers at all. The odd answers come from a small ASGI app on 127.0.0.1, alone (a channel-only
target) or in front of the module's reference server (a target with the GNS3 chat API: its controller passes
through, its chat prefix answers oddly)."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest
import uvicorn
import yaml
from click.testing import CliRunner

from conformance.cli import cli
from conformance.harness.processes import free_port
from tests.conformance.test_preflight import run_preflight
from tests.reference_server.conftest import start_server_process

pytestmark = pytest.mark.slow  # servers and suite runs: left out of --quick

Asgi = Callable[[dict[str, Any], Callable[[], Awaitable[dict]], Callable[[dict], Awaitable[None]]], Awaitable[None]]
CHAT = re.compile(r"^/v3/projects/[^/]+/chat(/|$)")  # the reference target's chat_prefix
QUICK_DEADLINE = 2  # stream_deadline_seconds: how long the suite waits for a path that never answers


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    started = start_server_process(tmp_path_factory.mktemp("odd") / "data", "--heartbeat-interval", "1")
    yield started
    started.stop()


# --- the odd answers ------------------------------------------------------------------------------------------------


async def _body(receive) -> bytes:
    body, more = b"", True
    while more:
        message = await receive()
        body, more = body + message.get("body", b""), message.get("more_body", False)
    return body


def answering(status: int, content_type: str, body: bytes) -> Asgi:
    async def app(scope, receive, send):
        await _body(receive)
        headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


async def silent(scope, receive, send):
    """Reads the request and never answers, until the client goes away."""
    while (await receive())["type"] != "http.disconnect":
        pass


NOT_ALLOWED = answering(405, "application/json", b'{"detail": "Method Not Allowed"}')
WEB_PAGE = answering(200, "text/html; charset=utf-8", b"<!doctype html><html><body><div id=app></div></body></html>")
ROOT = answering(200, "text/plain", b"my server")


def routed(odd_path: re.Pattern[str], odd: Asgi, rest: Asgi) -> Asgi:
    async def app(scope, receive, send):
        if scope["type"] == "http":
            await (odd if odd_path.search(scope["path"]) else rest)(scope, receive, send)

    return app


def proxy_to(upstream: str) -> Asgi:
    """Every request passed to `upstream` (the reference server) and its answer back, read whole."""
    clients: list[httpx.AsyncClient] = []  # made on the server's own event loop, at its first request

    async def app(scope, receive, send):
        if not clients:
            clients.append(httpx.AsyncClient(base_url=upstream, timeout=60, trust_env=False))
        headers = [(k.decode(), v.decode()) for k, v in scope["headers"] if k not in (b"host", b"content-length")]
        answer = await clients[0].request(
            scope["method"],
            scope["path"] + ("?" + scope["query_string"].decode() if scope["query_string"] else ""),
            content=await _body(receive),
            headers=headers,
        )
        dropped = ("content-length", "transfer-encoding", "content-encoding")
        kept = [(k.encode(), v.encode()) for k, v in answer.headers.items() if k.lower() not in dropped]
        length = (b"content-length", str(len(answer.content)).encode())
        await send({"type": "http.response.start", "status": answer.status_code, "headers": [*kept, length]})
        await send({"type": "http.response.body", "body": answer.content})

    return app


@contextlib.contextmanager
def serving(app: Asgi) -> Iterator[str]:
    """`app` served on 127.0.0.1 by uvicorn in a thread of this process, for the block: its base URL."""
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=5)
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()
    until = time.monotonic() + 30
    while not running.started and thread.is_alive() and time.monotonic() < until:
        time.sleep(0.02)  # polls a state with a bound
    assert running.started, "the odd server did not start"
    try:
        yield f"http://127.0.0.1:{listening.getsockname()[1]}"
    finally:
        running.should_exit = True
        thread.join(30)
        listening.close()


def stopped_before_any_verdict(result, tmp_path, key: str, tried: str) -> str:
    said = " ".join(result.output.split())  # the message as one line, however the terminal wrapped it
    assert result.exit_code == 2, result.output
    assert f"change the target file: {key}: " in said, said
    assert tried in said, said
    assert "Traceback" not in result.output and "FAIL" not in result.output
    assert not (tmp_path / "reports").exists()  # nothing was judged, so nothing is reported
    return said


# --- a target with the GNS3 chat API: its chat prefix answers oddly -------------------------------------------------


@pytest.mark.parametrize(
    ("odd", "says"),
    [
        (NOT_ALLOWED, "answered 405"),
        (WEB_PAGE, "answered 200 with an HTML page"),
        (silent, "no answer (TimeoutError"),
    ],
    ids=["answers-405", "answers-a-web-page", "answers-nothing"],
)
def test_a_chat_prefix_that_is_not_the_chat_api_is_named_with_the_url_tried(tmp_path, server, odd, says):
    """The server answers (its controller works through the same base_url, and its root answers), but not as the
    chat API under the declared prefix: chat_prefix is the key to change, never base_url."""

    def through(data):
        data["base_url"] = base_url
        data["stream_deadline_seconds"] = QUICK_DEADLINE

    with serving(routed(CHAT, odd, proxy_to(server.base_url))) as base_url:
        result = run_preflight(tmp_path, through, server)
    said = stopped_before_any_verdict(result, tmp_path, "chat_prefix", f"GET {base_url}/v3/projects/")
    assert says in said and "/chat/sessions as main" in said
    assert server.what_is_on() == {"users": ["admin"], "projects": []}  # what the run made went again


def _given_tokens(base_url: str, tokens: dict[str, str]) -> Callable[[dict], None]:
    """The reference target as a file that gives ready tokens and fixed projects (no admin password)."""

    def change(data):
        del data["access_control"]  # needs the admin
        data.update(
            base_url=base_url,
            auth={"mode": "tokens", "tokens": tokens},
            # ids of no project: a token is refused before the project it names is looked up
            projects={"mode": "fixed", "opened": "project-opened", "closed": "project-closed"},
            llm={"mode": "preconfigured"},
            fake_llm={"port": free_port()},
        )

    return change


def test_ready_tokens_the_server_refuses_name_the_token_key_and_the_url(tmp_path, server):
    secret = "not-a-token-of-this-server"
    result = run_preflight(tmp_path, _given_tokens(server.base_url, {"main": secret, "other": secret + "-2"}), server)
    said = stopped_before_any_verdict(result, tmp_path, "auth.tokens.main", f"GET {server.base_url}/v3/projects/")
    assert "answered 401" in said and secret not in said  # the key names the token; the token itself is a secret
    assert server.what_is_on() == {"users": ["admin"], "projects": []}


def test_ready_tokens_at_a_url_where_nothing_answers_name_base_url(tmp_path, server):
    """With ready tokens nothing is asked of the server before preflight; the chat prefix gets no answer, and
    neither does the server's root: base_url is the key, not chat_prefix."""
    base_url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    result = run_preflight(tmp_path, _given_tokens(base_url, {"main": "t-1", "other": "t-2"}), server)
    said = stopped_before_any_verdict(result, tmp_path, "base_url", f"no server answers at {base_url}:")
    assert f"GET {base_url}/: " in said


# --- a channel-only target: its channel path answers oddly ---------------------------------------------------------


def run_channel_only(tmp_path, base_url: str, path: str):
    data = {
        "name": "my-server",
        "base_url": base_url,
        "channels": {"openai": {"path": path, "endpoints": ["chat_completions"]}},
        "stream_deadline_seconds": QUICK_DEADLINE,
    }
    target = tmp_path / "target.yaml"
    target.write_text(yaml.safe_dump(data), encoding="utf-8")
    arguments = ["run", "--target", str(target), "--report-dir", str(tmp_path / "reports"), "--quiet"]
    return CliRunner().invoke(cli, arguments, prog_name="copilot-conformance")


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("/silent", "no answer (TimeoutError"),
        ("/v1", "answered 404"),  # nothing is served under /v1
        ("/page", "answered 200 with an HTML page"),  # a web UI's catch-all page
    ],
    ids=["answers-nothing", "answers-404", "answers-a-web-page"],
)
def test_a_channel_path_that_serves_nothing_is_named_with_the_url_tried(tmp_path, path, says):
    """The server answers at its root, but not as the channel at the declared path: the path's key is to change."""

    async def elsewhere(scope, receive, send):
        await (ROOT if scope["path"] == "/" else answering(404, "text/plain", b"Not Found"))(scope, receive, send)

    app = routed(re.compile(r"^/silent/"), silent, routed(re.compile(r"^/page/"), WEB_PAGE, elsewhere))
    with serving(app) as base_url:
        result = run_channel_only(tmp_path, base_url, path)
    said = stopped_before_any_verdict(
        result, tmp_path, "channels.openai.path", f"POST {base_url}{path}/chat/completions"
    )
    assert says in said


def test_a_channel_only_target_where_nothing_answers_names_base_url(tmp_path):
    base_url = f"http://127.0.0.1:{free_port()}"
    said = stopped_before_any_verdict(
        run_channel_only(tmp_path, base_url, "/v1"), tmp_path, "base_url", f"no server answers at {base_url}:"
    )
    assert f"POST {base_url}/v1/chat/completions" in said
