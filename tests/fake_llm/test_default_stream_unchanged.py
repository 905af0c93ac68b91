"""Stream shapes change nothing by default: every built-in script that existed before shapes streams, byte for
byte, what it streamed then (default_streams.json was captured from the code before shapes, with capture.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fake_llm.scripts import ScriptLibrary
from tests.fake_llm.capture import http_completion, http_stream, in_process_chunks

GOLDEN = json.loads((Path(__file__).parent / "default_streams.json").read_text(encoding="utf-8"))
LIBRARY = ScriptLibrary.from_folders()


def _split(key: str) -> tuple[str, int | None]:
    name, step = key.rsplit("/", 1)
    return name, None if step == "title" else int(step)


@pytest.mark.parametrize("key", sorted(GOLDEN))
def test_the_default_stream_is_unchanged(key: str, monkeypatch):
    name, step = _split(key)
    expected = GOLDEN[key]
    assert http_stream(LIBRARY, name, step, monkeypatch) == expected["http"]
    assert in_process_chunks(LIBRARY, name, step, monkeypatch) == expected["in_process"]
    assert http_completion(LIBRARY, name, step) == expected["completion"]


def test_the_golden_file_covers_the_tool_call_scripts():
    assert {"tool-round-trip/0", "parallel-tools/0", "mid-stream-error/0", "default/title"} <= set(GOLDEN)
