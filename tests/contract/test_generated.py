"""generated/ is exactly what the generator makes from spec/ today, and the models parse the contract's data."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

import gns3_copilot_spec as spec
from conformance.rules.framing import parse_stream
from gns3_copilot_generated.api.chat_request import ChatRequest
from gns3_copilot_generated.api.chat_session import ChatSession
from gns3_copilot_generated.events.chat_stream_event import ChatStreamEvent
from gns3_copilot_generated.events.tool_call import ToolCallEvent


def test_generated_is_up_to_date(repo_root: Path):
    result = subprocess.run(
        [sys.executable, "tools/generate.py", "--check"], cwd=repo_root, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_staleness_is_detected(repo_root: Path, tmp_path: Path):
    """The check must fail when generated/ differs: edit one file of a copy and compare."""
    from tools.generate import differences

    copy = tmp_path / "generated"
    subprocess.run(["cp", "-r", str(repo_root / "generated"), str(copy)], check=True)
    (copy / "events" / "done.py").write_text("# edited by hand\n")
    (copy / "events" / "extra.py").write_text("")
    (copy / "constants.py").write_text((copy / "constants.py").read_text().replace("100000", "100001"))
    (copy / "api" / "session_id.py").unlink()
    found = differences(repo_root / "generated", copy)
    assert any("done.py" in d for d in found) and any("extra.py" in d for d in found)
    assert any("constants.py" in d and "100001" in d for d in found)
    assert any("missing from generated/: api/session_id.py" in d for d in found)


@pytest.mark.parametrize("example", sorted(spec.EXAMPLES_DIR.glob("*.sse")), ids=lambda p: p.name)
def test_event_union_parses_every_golden_event(example: Path):
    for payload in parse_stream(example.read_text()).events:
        event = ChatStreamEvent.model_validate(payload).root
        assert event.type == payload["type"]
        assert event.model_dump(exclude_none=True, mode="json") == payload


def test_event_union_discriminates_and_rejects():
    event = ChatStreamEvent.model_validate(
        {
            "type": "tool_call",
            "session_id": "s1",
            "tool_call": {"id": "c1", "type": "function", "function": {"name": "t", "arguments": ""}},
        }
    ).root
    assert isinstance(event, ToolCallEvent)
    with pytest.raises(ValidationError):
        ChatStreamEvent.model_validate({"type": "nope", "session_id": "s1"})
    with pytest.raises(ValidationError):
        ChatStreamEvent.model_validate({"type": "done"})  # session_id is required on done


def test_api_models_carry_the_contract_constraints():
    assert ChatRequest.model_validate({"message": "hi"}).mode == "text"
    for bad in (
        {"message": ""},
        {"message": "x", "temperature": 2.5},
        {"message": "x", "session_id": "a b"},
        {"message": "x", "mode": "voice"},
        {"message": "x", "stream": False},
    ):
        with pytest.raises(ValidationError):
            ChatRequest.model_validate(bad)
    example = spec.load_document(spec.SCHEMAS_DIR / "chat-session.json")["examples"][0]
    assert ChatSession.model_validate(example).total_tokens == 165
