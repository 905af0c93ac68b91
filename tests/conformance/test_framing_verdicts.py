"""The GNS3 framing rules (conformance/rules/framing.py) judge the one tokenizer's frames, and give the verdicts the
rules gave when they split the body themselves (before issue 28, item 1): the same events and the same requirements
broken, for every body, whole or cut short by the suite. The old splitter is kept here, verbatim in what it decided,
as the oracle."""

from __future__ import annotations

import json
import random

import pytest

from conformance.rules.framing import judge_frames, parse_stream
from conformance.transport.sse import SseTokenizer, parse


def _old_parse_stream(body: str) -> tuple[list, set[str]]:
    """conformance/framing.py's parse_stream before the tokenizer: (events, requirements broken)."""
    events, broken = [], set()
    if "\r" in body:
        broken.add("FRAME-002")
        body = body.replace("\r\n", "\n").replace("\r", "\n")
    if body and not body.endswith("\n\n"):
        broken.add("FRAME-002")
    for frame in (f for f in body.split("\n\n") if f):
        lines = frame.split("\n")
        if len(lines) != 1 or any(not line.startswith("data:") for line in lines):
            broken.add("FRAME-002")
        for line in (line for line in lines if line.startswith("data:")):
            if not line.startswith("data: "):
                broken.add("FRAME-002")
            text = line[len("data:") :].removeprefix(" ")
            if text.strip() == "[DONE]":
                broken.add("FRAME-003")
                continue
            try:
                payload = json.loads(text)
            except json.JSONDecodeError:
                broken.add("FRAME-003")
                continue
            if not isinstance(payload, dict):
                broken.add("FRAME-002")
                continue
            events.append(payload)
    return events, broken


def _old_cut(text: str) -> str:
    """What the old chat client judged of a stream the suite cut short: the text up to its last `\\n\\n`."""
    return text[: text.rfind("\n\n") + 2]


def _new(text: str, *, finished: bool = True) -> tuple[list, set[str]]:
    parsed = judge_frames(parse(text), finished=finished)
    return parsed.events, {v.requirement for v in parsed.violations}


PIECES = [
    'data: {"type": "content"}',
    'data: {"type": "done"}',
    'data:{"a": 1}',
    "data: [DONE]",
    "data: 1",
    "data: nope",
    ": heartbeat",
    "event: message",
    "id: 3",
    "\n",
    "\n",
    "\n\n",
    "\r",
    "\r\n",
    "x",
    " ",
]

EDGES = [
    "",
    "\n",
    "\n\n",
    "\n\n\n",
    'data: {"a": 1}\n\n',
    'data: {"a": 1}\n\n\n',  # one blank line too many: the old splitter's next frame began with an empty line
    'data: {"a": 1}\n\n\n\n',  # two too many: the old splitter saw an empty frame, and dropped it
    'data: {"a": 1}\n\n\ndata: {"b": 2}\n\n',
    '\ndata: {"a": 1}\n\n',
    '\n\ndata: {"a": 1}\n\n',
    'data: {"a": 1}\n\ndata: {"b": 2}',  # unterminated: its event still counted
    'data: {"a": 1}\n\ndata: {"b": 2}\n',
    'data: {"a": 1}\r\n\r\ndata: {"b": 2}\r\n\r\n',
    'data: {"a": 1}\r\rdata: {"b": 2}\r',
    'data: {"a": 1}\ndata: {"b": 2}\n\n',  # two data lines: two events
    'event: x\ndata: {"a": 1}\n\n: c\n\n',
    'data: {"a": 1}\n\ndata: [DONE]\n\n',
]


def _bodies(count: int, seed: int = 28) -> list[str]:
    rng = random.Random(seed)
    return EDGES + ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 12))) for _ in range(count)]


def test_whole_bodies_are_judged_as_the_old_splitter_judged_them():
    differing = [text for text in _bodies(4000) if _new(text) != _old_parse_stream(text)]
    assert differing == [], f"{len(differing)} bodies judged otherwise, e.g. {differing[:5]}"


def test_parse_stream_is_judge_frames_of_the_whole_body():
    for text in EDGES:
        assert parse_stream(text).events == _new(text)[0]


def _cut_bodies(count: int) -> list[str]:
    # Where the old client's cut was defined: the suite stops only after a complete frame, so the text read holds an
    # LF frame end. (With none, the old client judged the body's first character as a frame: see rules/framing.py.)
    return [text for text in _bodies(count) if "\n\n" in text and "\r" not in text]


def test_streams_cut_short_are_judged_as_the_old_client_judged_them():
    differing = [t for t in _cut_bodies(4000) if _new(t, finished=False) != _old_parse_stream(_old_cut(t))]
    assert differing == [], f"{len(differing)} cut bodies judged otherwise, e.g. {differing[:5]}"


@pytest.mark.parametrize("text", EDGES[4:])
def test_the_verdicts_do_not_depend_on_how_the_body_arrived(text):
    whole = _new(text)
    for cut in range(len(text) + 1):
        tokenizer = SseTokenizer()
        tokenizer.feed(text[:cut], 1.0)
        tokenizer.feed(text[cut:], 2.0)
        parsed = judge_frames(tokenizer.body())
        assert (parsed.events, {v.requirement for v in parsed.violations}) == whole, f"cut at {cut}"
        assert len(parsed.arrivals) == len(parsed.events)
