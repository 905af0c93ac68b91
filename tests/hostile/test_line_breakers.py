"""SSE frames stay whole lines for every line reader (issue 34): JSON leaves U+0085, U+2028 and U+2029 raw, and
`str.splitlines()`, so httpx's `iter_lines()`, breaks a line there. A model's answer carrying them is streamed on
every channel, read with `iter_lines()`: every line is an SSE field or empty, every data line whole JSON, and the
text arrives unchanged."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

import gns3_copilot_spec as spec
from tools.channel_requests import CHANNELS, gns3

from .conftest import scripted_server

pytestmark = pytest.mark.slow  # a server process: left out of `python3 tasks.py test --quick`

BROKEN = ["Line one\u2028line two ", "next\u2029paragraph ", "and\u0085more."]
SCRIPT = {
    "name": "line-breakers",
    "description": "An answer whose text holds the characters line readers split on.",
    "steps": [{"text_chunks": BROKEN, "usage": {"input_tokens": 10, "output_tokens": 6}}],
    "title": {"text_chunks": ["Line\u2028breakers"], "usage": {"input_tokens": 5, "output_tokens": 2}},
}
FIELDS = ("data:", "event:", "id:", "retry:", ":")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from scripted_server(tmp_path_factory, SCRIPT)


@pytest.mark.parametrize("channel", ["gns3", *CHANNELS])
def test_a_frame_is_one_line_to_httpx_iter_lines(server, channel):
    with httpx.Client(base_url=server.base_url, timeout=60) as client:
        login = client.post("/v3/access/users/authenticate", json={"username": "admin", "password": "admin"})
        headers = {"Authorization": f"Bearer {login.json()['access_token']}"}
        project = client.post("/v3/projects", json={"name": f"lines-{uuid.uuid4().hex[:8]}"}, headers=headers)
        prefix = spec.default_prefix().format(project_id=project.json()["project_id"])
        make = gns3 if channel == "gns3" else CHANNELS[channel]
        path, body = make(str(uuid.uuid4()), "[[fake-llm:line-breakers]] Say it")
        with client.stream("POST", prefix + path, json=body, headers=headers) as answer:
            assert answer.status_code == 200, answer.read()
            lines = list(answer.iter_lines())
    strays = [line for line in lines if line and not line.startswith(FIELDS)]
    assert strays == [], f"lines that are no SSE field: a frame was split: {strays[:3]}"
    data = [line[5:].strip() for line in lines if line.startswith("data:") and line != "data: [DONE]"]
    payloads = [json.loads(text) for text in data]  # each a whole JSON value
    streamed = json.dumps(payloads, ensure_ascii=False)
    for piece in BROKEN:
        assert piece in streamed, f"{piece!r} did not arrive unchanged"
    assert not any(c in line for line in lines for c in "\u0085\u2028\u2029"), "a raw line breaker in a line"
