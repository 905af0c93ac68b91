"""Snapshots of the reference server's stream for each golden scenario (spec/examples), ids masked by ordinal.

`python3 tasks.py test tests/reference_server/test_snapshots.py --snapshot-update` rewrites them; review the
diff of `__snapshots__/` like code.
"""

from __future__ import annotations

import pytest

import gns3_copilot_spec as spec
from conformance.reports.sse_snapshot import SseSnapshotExtension, snapshot_events, snapshot_text
from conformance.rules.framing import parse_stream
from tests.reference_server.conftest import in_process_lab

pytestmark = pytest.mark.anyio

SCENARIOS = {  # golden example of spec/examples -> the script that plays it on the reference server
    "plain-answer": "plain",
    "tool-round-trip": "tool-round-trip",
    "parallel-tool-calls": "parallel-tools",
    "llm-error": "mid-stream-error",
    "heartbeat": "slow",
}


def kinds(events):
    collapsed: list[str] = []
    for event in events:
        if not (collapsed and collapsed[-1] == event["type"]):  # runs of content, heartbeats, tool_call
            collapsed.append(event["type"])
    return collapsed


@pytest.mark.covers("EVENT-001", "STREAM-ORDER-003")
@pytest.mark.parametrize("example", sorted(SCENARIOS))
async def test_stream_snapshot(example, make_settings, snapshot):
    # Heartbeats only where the scenario is a silence (3 s at 0.75 s); elsewhere a loaded machine's slow first chunk
    # must not add one to the snapshot.
    interval = 0.75 if example == "heartbeat" else 30.0
    async with in_process_lab(make_settings(heartbeat_interval=interval)) as lab:
        stream = await lab.stream(f"scenario {example} [[fake-llm:{SCENARIOS[example]}]]")
    assert snapshot_text(stream.text) == snapshot(extension_class=SseSnapshotExtension)
    # the same kinds of events, in the same order, as the contract's golden example of the scenario (text
    # may come at other points: the scripts' wording is not the examples')
    golden = parse_stream((spec.EXAMPLES_DIR / f"{example}.sse").read_text(encoding="utf-8")).events
    assert kinds(e for e in stream.events if e["type"] != "content") == kinds(
        e for e in golden if e["type"] != "content"
    )


def test_masking_keeps_identity_and_collapses_heartbeats():
    events = [
        {"type": "heartbeat", "session_id": "a"},
        {"type": "heartbeat", "session_id": "a"},
        {
            "type": "tool_call",
            "session_id": "a",
            "tool_call": {"id": "x", "type": "function", "function": {"name": "t", "arguments": ""}},
        },
        {"type": "tool_start", "session_id": "a", "tool_call_id": "x", "tool_name": "t"},
        {"type": "done", "session_id": "b"},
    ]
    text = snapshot_events(events)
    assert text.count("heartbeat") == 1
    assert text.count("<tool_call_id:1>") == 2 and "<session_id:2>" in text and '"x"' not in text
