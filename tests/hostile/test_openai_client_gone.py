"""A non-streamed OpenAI turn whose client left is stopped, as a stream's is (CHANNEL-009), and a 409 on the OpenAI
paths says `x-should-retry: false` (issue 34): the `openai` client's timeout and retries once made three whole
turns of one call, and it re-sent a `session_busy` twice."""

from __future__ import annotations

import threading
import time
import uuid

import httpx
import openai
import pytest

import gns3_copilot_spec as spec

from .conftest import scripted_server

pytestmark = pytest.mark.slow  # a server process: left out of `python3 tasks.py test --quick`

ANSWER = "all links are up, at last."
SCRIPT = {
    "name": "very-slow",
    "description": "Answers after 20 s: longer than any client here waits.",
    "steps": [{"text_chunks": [ANSWER], "delay_before_ms": 20000, "usage": {"input_tokens": 9, "output_tokens": 6}}],
    "title": {"text_chunks": ["Very slow"], "usage": {"input_tokens": 5, "output_tokens": 2}},
}
TURN = "[[fake-llm:very-slow]] Check the links"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from scripted_server(tmp_path_factory, SCRIPT)


@pytest.fixture
def api(server):
    client = httpx.Client(base_url=server.base_url, timeout=60)
    login = client.post("/v3/access/users/authenticate", json={"username": "admin", "password": "admin"})
    client.headers["Authorization"] = f"Bearer {login.json()['access_token']}"
    project = client.post("/v3/projects", json={"name": f"gone-{uuid.uuid4().hex[:8]}"}, headers=client.headers)
    client.prefix = spec.default_prefix().format(project_id=project.json()["project_id"])
    yield client
    client.close()


def _free_turn(api: httpx.Client, session_id: str) -> httpx.Response:
    """A plain turn on the session once it is no longer busy (409 while it is), within a minute."""
    for _ in range(240):
        answer = api.post(api.prefix + "/stream", json={"message": "[[fake-llm:plain]] hi", "session_id": session_id})
        if answer.status_code != 409:
            return answer
        time.sleep(0.25)
    raise AssertionError("the session stayed busy for a minute")


def test_a_non_streamed_turn_whose_client_left_is_stopped(api):
    session_id = str(uuid.uuid4())
    message = {"role": "user", "content": TURN}
    body = {"model": "gns3-copilot", "messages": [message], "metadata": {"session_id": session_id}}
    with pytest.raises(httpx.TimeoutException):  # the client gives up long before the answer
        api.post(api.prefix + "/openai/v1/chat/completions", json=body, timeout=1.5)
    assert _free_turn(api, session_id).status_code == 200
    history = api.get(f"{api.prefix}/sessions/{session_id}/history").text
    assert ANSWER not in history, "the turn ran to its end after its client left"


def test_a_busy_session_is_answered_409_once_to_the_openai_client(api, server):
    session_id = str(uuid.uuid4())
    started = threading.Event()

    def slow_turn() -> None:  # the session's running turn, on the GNS3 stream
        with api.stream("POST", api.prefix + "/stream", json={"message": TURN, "session_id": session_id}) as answer:
            for _ in answer.iter_lines():
                started.set()

    running = threading.Thread(target=slow_turn, daemon=True)
    running.start()
    assert started.wait(30), "the slow turn did not start"
    sent: list[httpx.Request] = []
    http_client = httpx.Client(event_hooks={"request": [sent.append]}, timeout=30)
    token = api.headers["Authorization"].removeprefix("Bearer ")
    client = openai.OpenAI(base_url=f"{server.base_url}{api.prefix}/openai/v1", api_key=token, http_client=http_client)
    with pytest.raises(openai.ConflictError) as refused:
        client.chat.completions.create(
            model="gns3-copilot", messages=[{"role": "user", "content": "hi"}], metadata={"session_id": session_id}
        )
    assert refused.value.response.headers.get("x-should-retry") == "false"
    assert len(sent) == 1, f"the openai client sent the request {len(sent)} times"
    api.post(f"{api.prefix}/sessions/{session_id}/abort")
    running.join(30)
