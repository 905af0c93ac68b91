"""The protocol's rules against the protocol's own server: the UI message streams that npm `ai` 6.0.325's
`streamText` + `pipeUIMessageStreamToResponse` sends (tests/conformance/fixtures/ui/, recorded by
tools/record_ai_ui_stream.mjs) break no UI-PROTO rule, by the suite's rules and by `ai`'s own reader. The contract's
rules may find deviations (no sessionId, tools not providerExecuted...), each in the contract's name (issue 29: the
suite once reported "UI-003 MUST FAIL" on this server, which makes no protocol violation)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conformance.channels import real_clients
from conformance.channels.endpoints import STREAMING, ChannelAnswer
from conformance.rules import ui as rules_ui
from conformance.rules import ui_protocol
from conformance.transport.exchanges import Exchange
from conformance.transport.sse import parse

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "conformance" / "fixtures" / "ui"
TURNS = ["text", "tool", "tool-error", "llm-error", "mid-stream-error"]


def recorded(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def answer(name: str) -> ChannelAnswer:
    fixture = recorded(name)
    exchange = Exchange("POST", "http://ai-server/chat", json.dumps(fixture["request"]), status=fixture["status"])
    return ChannelAnswer(
        STREAMING["ui"], exchange, headers=fixture["headers"], sse=parse(fixture["body"]), completed=True,
        raw=fixture["body"],
    )  # fmt: skip


def test_the_fixtures_are_ais_own_answers():
    assert sorted(p.stem for p in FIXTURES.glob("*.json")) == sorted(TURNS)
    for name in TURNS:
        assert recorded(name)["produced_by"].startswith("npm ai 6.0.325: streamText")
    kinds = {name: [c.get("type") for _, c in ui_protocol.chunks(answer(name))] for name in TURNS}
    assert "tool-output-available" in kinds["tool"] and "tool-output-error" in kinds["tool-error"]
    assert "error" in kinds["llm-error"] and "text-delta" in kinds["mid-stream-error"]


@pytest.mark.parametrize("name", TURNS)
def test_the_protocols_rules_find_nothing_on_ais_own_server(name: str):
    assert ui_protocol.judge(answer(name)) == []
    found = rules_ui.judge(answer(name), None)
    assert {v.requirement for v in found} <= {"UI-002", "UI-003"}, [str(v) for v in found]


def test_the_contract_differs_in_its_own_name():
    """`ai`'s server sends no session in start and runs its tools itself (no providerExecuted): UI-003's deviations,
    never a protocol's."""
    found = rules_ui.judge(answer("tool"), None)
    assert any(v.requirement == "UI-003" and "sessionId" in v.message for v in found)
    assert any(v.requirement == "UI-003" and "providerExecuted" in v.message for v in found)
    failed = [v.message for v in rules_ui.judge(answer("tool-error"), None)]
    assert any("closed by tool-output-error" in m for m in failed), failed
    assert not any("open" in m or "no tool-output-available" in m for m in failed), failed


def test_ais_own_reader_reads_them_all():
    """`ai`'s readUIMessageStream (conformance/channels/js/ui-read.mjs) rejects none of them: it stops only at the
    streams' own `error` chunks, which are no rejection."""
    answers = [answer(name) for name in TURNS]
    for name, one, read in zip(TURNS, answers, real_clients.ui([a.raw for a in answers]), strict=True):
        texts = [c["errorText"] for _, c in ui_protocol.chunks(one) if c.get("type") == "error"]
        assert ui_protocol.reader_rejection(read.detail.get("error"), texts) is None, (name, read.error)
        assert read.ok == (not texts), (name, read.error)


def test_the_recorder_still_gives_the_fixtures():
    """tools/record_ai_ui_stream.mjs --check: the installed `ai` serves the same bytes (no stale fixture)."""
    done = subprocess.run(
        ["node", "tools/record_ai_ui_stream.mjs", "--check"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
