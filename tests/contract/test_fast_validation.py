"""The compiled check (spec/fast_validation.py) is never laxer than jsonschema: over the contract's example events,
the protocols' recorded streams and their broken variants, every instance jsonschema-rs accepts has no jsonschema
error. (Where it is stricter, jsonschema decides: the suite's verdicts are jsonschema's either way.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gns3_copilot_spec as spec
from conformance.rules import official
from gns3_copilot_spec.fast_validation import surely_valid

# What a broken variant puts in place of a value: each JSON type, and values near the usual constraints.
REPLACEMENTS = (None, True, 0, -1, 1.5, "", "x", "\n", [], {}, [None], {"": None}, 2**70)
VARIANTS_PER_INSTANCE = 400


def _paths(node: Any, at: tuple = ()) -> Iterator[tuple]:
    yield at
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*at, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, (*at, index))


def _replaced(instance: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    copy = json.loads(json.dumps(instance))
    parent = copy
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = value
    return copy


def _without(instance: Any, path: tuple) -> Any:
    copy = json.loads(json.dumps(instance))
    parent = copy
    for part in path[:-1]:
        parent = parent[part]
    del parent[path[-1]]
    return copy


def variants(instance: Any) -> list[Any]:
    """The instance, and copies with one value replaced, one member or item removed, or one member added."""
    found = [instance]
    for path in _paths(instance):
        found += [_replaced(instance, path, value) for value in REPLACEMENTS]
        if path:
            found.append(_without(instance, path))
        node = instance
        for part in path:
            node = node[part]
        if isinstance(node, dict):
            found.append(_replaced(instance, path, {**node, "zz_extra": 1}))
    return found[:VARIANTS_PER_INSTANCE]


def _sse_payloads(path: Path) -> list[Any]:
    payloads = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
            payloads.append(json.loads(line[5:]))
    return payloads


def _contract_events() -> list[Any]:
    return [event for path in sorted(spec.EXAMPLES_DIR.glob("*.sse")) for event in _sse_payloads(path)]


# The official schema each recorded channel stream's payloads are judged by.
CHANNEL_SCHEMAS = {
    "openai-chat": "openai_chat_completion_chunk",
    "openai-responses": "openai_response_stream_event",
    "ui": "ai_ui_message_chunk",
    "ag-ui": "ag_ui_event",
}


def _agree(fast: Any, full_errors, instances: list[Any]) -> tuple[list[Any], int]:
    """(instances the compiled check accepts that have jsonschema errors, how many jsonschema refuses)."""
    laxer, refused = [], 0
    for instance in instances:
        errors = full_errors(instance)
        refused += bool(errors)
        if surely_valid(fast, instance) and errors:
            laxer.append((instance, errors[:2]))
    return laxer, refused


def test_the_contract_s_event_schemas_compile_and_the_gate_is_never_laxer():
    events = _contract_events()
    assert {event["type"] for event in events} >= {"content", "tool_start", "tool_end", "done", "error"}
    refused_in_all = 0
    for event in events:
        validator = spec.schema_validator(spec.event_schema_paths()[event["type"]])
        assert validator.fast is not None, event["type"]
        laxer, refused = _agree(validator.fast, lambda i, v=validator: list(v.full.iter_errors(i)), variants(event))
        assert laxer == [], laxer[:3]
        refused_in_all += refused
    assert refused_in_all > 100  # the variants do break the schemas


@pytest.mark.parametrize("channel", sorted(CHANNEL_SCHEMAS))
def test_the_official_schemas_compile_and_the_gate_is_never_laxer(channel):
    name = CHANNEL_SCHEMAS[channel]
    fast = official._compiled(name)
    assert fast is not None, name

    def full_errors(instance: Any) -> list[Any]:
        kind = instance.get("type") if isinstance(instance, dict) else None
        branch = official._branches(name).get(kind) if isinstance(kind, str) else None
        return list((branch if branch is not None else official.validator(name)).iter_errors(instance))

    payloads = [
        p for path in sorted((spec.EXAMPLES_DIR / "channels" / channel).glob("*.sse")) for p in _sse_payloads(path)
    ]
    assert payloads, channel
    kinds = {}
    for payload in payloads:  # one of each kind: its variants are what differ
        kinds.setdefault(json.dumps(sorted(payload)) + str(payload.get("type")), payload)
    refused_in_all = 0
    for payload in kinds.values():
        laxer, refused = _agree(fast, full_errors, variants(payload))
        assert laxer == [], laxer[:3]
        refused_in_all += refused
    assert refused_in_all > 20


def test_the_gate_answers_as_jsonschema_does_where_the_compiled_check_cannot_read_the_instance():
    validator = spec.schema_validator(spec.event_schema_paths()["content"])
    for unreadable in (  # no JSON object (a key that is no string), an integer beyond 64 bits; `content` missing
        {"type": "content", "session_id": "s", 1: 2},
        {"type": "content", "session_id": "s", "n": 2**70},
    ):
        errors = [e.message for e in validator.full.iter_errors(unreadable)]
        assert errors and not validator.is_valid(unreadable)
        assert [e.message for e in validator.iter_errors(unreadable)] == errors
