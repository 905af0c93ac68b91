"""The channels' golden streams (spec/examples/channels/): every frame valid against the protocol's official
schema, each stream accepted by the protocol's real client, and the files what the reference server records."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState

import gns3_copilot_spec as spec
from conformance.rules.official import errors
from gns3_copilot_generated.constants import OPENAI_MODEL_ID
from tests.readme import readme_command

from .node_clients import ag_ui_run, ui_read

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = spec.SPEC_DIR / "examples" / "channels"
CHANNELS = ("openai-chat", "openai-responses", "ui", "ag-ui")
SCENARIOS = ("plain-answer", "tool-round-trip", "parallel-tool-calls", "llm-error", "mid-stream-error")
FAILING = {"llm-error", "mid-stream-error"}


def frames(body: str) -> list[tuple[str | None, str]]:
    """(event, data) of every SSE frame, comments left out; frames are LF-separated (CRLF is never sent)."""
    assert "\r" not in body
    found = []
    for block in body.split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith(":")]
        if not lines:
            continue
        fields = dict(line.split(": ", 1) for line in lines)
        assert set(fields) <= {"event", "data"}, block
        found.append((fields.get("event"), fields["data"]))
    return found


def example(channel: str, scenario: str) -> str:
    return (EXAMPLES / channel / f"{scenario}.sse").read_text()


def replaying(body: str) -> openai.OpenAI:
    """The real `openai` client, every request of which is answered with the recorded stream `body`."""
    answer = httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})
    transport = httpx.MockTransport(lambda request: answer)
    return openai.OpenAI(api_key="token", base_url="http://recorded/v1", http_client=httpx.Client(transport=transport))


def test_every_channel_has_every_scenario_and_nothing_else():
    present = {(path.parent.name, path.stem) for path in EXAMPLES.glob("*/*.sse")}
    assert present == {(channel, scenario) for channel in CHANNELS for scenario in SCENARIOS}


@pytest.mark.covers("OPENAI-002", "OPENAI-004", "CHANNEL-010")
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_openai_chat_examples(scenario: str):
    body = example("openai-chat", scenario)
    found = frames(body)
    assert found[-1] == (None, "[DONE]")
    chunks = [json.loads(data) for _, data in found[:-1]]
    for chunk in chunks:
        if "error" in chunk:  # the in-stream error frame: OpenAI's error object, then [DONE]
            assert scenario in FAILING and chunk is chunks[-1], chunk
            assert set(chunk["error"]) == {"message", "type", "param", "code"}
        else:
            assert errors("openai_chat_completion_chunk", chunk) == [], chunk
    # The real client over the recorded body: its stream, assembled by its own stream state.
    client = replaying(body)
    state = ChatCompletionStreamState()
    stream = client.chat.completions.create(model=OPENAI_MODEL_ID, messages=[], stream=True)
    if scenario in FAILING:
        with pytest.raises(openai.APIError) as raised:
            for chunk in stream:
                state.handle_chunk(chunk)
        assert raised.value.code == "llm_error"
    else:
        for chunk in stream:
            state.handle_chunk(chunk)
        completion = state.get_final_completion()
        assert completion.choices[0].finish_reason == "stop" and completion.choices[0].message.content


@pytest.mark.covers("OPENAI-006")
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_openai_responses_examples(scenario: str):
    body = example("openai-responses", scenario)
    found = frames(body)
    events = [json.loads(data) for _, data in found]
    for (event, _), data in zip(found, events, strict=True):
        assert event == data["type"]
        assert errors("openai_response_stream_event", data) == [], data
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[-1]["type"] == ("response.failed" if scenario in FAILING else "response.completed")
    client = replaying(body)
    with client.responses.stream(model=OPENAI_MODEL_ID, input="recorded") as stream:
        if scenario in FAILING:
            with pytest.raises(RuntimeError):  # the client's own verdict: no response.completed
                stream.get_final_response()
        else:
            assert stream.get_final_response().output_text


def _parts(message: dict[str, Any]) -> list[str]:
    return [part["type"] for part in message["parts"]]


@pytest.mark.covers("UI-002", "UI-003")
def test_ui_examples():
    bodies = {scenario: example("ui", scenario) for scenario in SCENARIOS}
    for scenario, body in bodies.items():
        found = frames(body)
        assert found[-1] == (None, "[DONE]")
        for _, data in found[:-1]:
            assert errors("ai_ui_message_chunk", json.loads(data)) == [], (scenario, data)
    results = dict(zip(bodies, ui_read([{"body": body} for body in bodies.values()]), strict=True))
    for scenario, result in results.items():
        if scenario in FAILING:  # an `error` chunk: the client reports it, and still assembles the message
            assert result["error"] is not None, scenario
        else:
            assert result["ok"] and result["error"] is None, (scenario, result["error"])
    assert "tool-get_topology" in _parts(results["tool-round-trip"]["message"])
    states = [p.get("state") for p in results["parallel-tool-calls"]["message"]["parts"] if "toolCallId" in p]
    assert states and set(states) == {"output-available"}


@pytest.mark.covers("AGUI-002", "AGUI-003")
def test_ag_ui_examples():
    bodies = {scenario: example("ag-ui", scenario) for scenario in SCENARIOS}
    for scenario, body in bodies.items():
        for _, data in frames(body):
            assert errors("ag_ui_event", json.loads(data)) == [], (scenario, data)
    results = dict(zip(bodies, ag_ui_run([{"body": body} for body in bodies.values()]), strict=True))
    for scenario, result in results.items():
        assert result["ok"], (scenario, result["error"])  # RUN_ERROR resolves the run; a violation rejects it
        last = result["events"][-1]["type"]
        assert last == ("RUN_ERROR" if scenario in FAILING else "RUN_FINISHED"), scenario
    roles = [message["role"] for message in results["tool-round-trip"]["messages"]]
    assert roles.count("tool") == 1 and roles[-1] == "assistant"


def test_the_examples_are_what_the_reference_server_records():
    """The README's command, as written (with this environment's python): the recording is reproducible."""
    command = readme_command(".venv/bin/python tools/record_channel_examples.py --check")
    completed = subprocess.run([sys.executable, *command[1:]], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stdout + completed.stderr
