"""The requirement registry is well formed and says exactly what the normative prose says."""

from __future__ import annotations

import re
from collections import Counter

import pytest

import gns3_copilot_spec as spec

RULE = re.compile(r"^- \*\*(?P<id>[A-Z]+(?:-[A-Z]+)*-\d{3})\*\* \((?P<level>MUST|SHOULD|MAY)\) (?P<text>.+)$")
ID_FORMAT = re.compile(r"^[A-Z]+(?:-[A-Z]+)*-\d{3}$")
CHECK_FORMAT = re.compile(r"^[a-z_]+\.[a-z_]+$")


def prose_rules() -> list[dict]:
    rules, section = [], None
    for line in spec.BEHAVIOUR_PATH.read_text().splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
        elif line.startswith("- **"):
            match = RULE.match(line)
            assert match, f"a rule bullet that does not parse: {line[:80]!r}"
            rules.append({**match.groupdict(), "section": section})
    return rules


def records() -> list[dict]:
    return spec.load_requirements()["requirements"]


def test_registry_is_valid_against_its_schema():
    errors = list(
        spec.schema_validator(spec.SPEC_DIR / "requirements.schema.json").iter_errors(spec.load_requirements())
    )
    assert not errors, [e.message for e in errors]


def test_ids_are_unique_and_well_formed():
    ids = [r["id"] for r in records()]
    assert [i for i, n in Counter(ids).items() if n > 1] == []
    assert all(ID_FORMAT.match(i) for i in ids)


def test_every_record_is_checked_or_excluded_with_a_reason():
    for record in records():
        assert ("checks" in record) != ("excluded" in record), record["id"]
        if "checks" in record:
            assert record["checks"] and all(CHECK_FORMAT.match(c) for c in record["checks"]), record["id"]
        else:
            assert len(record["excluded"]) > 20, f"{record['id']}: give a real reason"


def test_capabilities_are_declared():
    declared = set(spec.load_requirements()["capabilities"])
    used = {r["capability"] for r in records() if "capability" in r}
    assert used == declared


def test_prose_and_registry_agree():
    prose = {r["id"]: r for r in prose_rules()}
    registry = {r["id"]: r for r in records()}
    assert sorted(set(prose) - set(registry)) == [], "rules in behaviour.md missing from requirements.yaml"
    assert sorted(set(registry) - set(prose)) == [], "records in requirements.yaml missing from behaviour.md"
    for rule_id, rule in prose.items():
        record = registry[rule_id]
        assert (record["level"], record["section"]) == (rule["level"], rule["section"]), rule_id
        assert " ".join(record["text"].split()) == " ".join(rule["text"].split()), rule_id


def test_prose_ids_are_unique():
    ids = [r["id"] for r in prose_rules()]
    assert [i for i, n in Counter(ids).items() if n > 1] == []


# The product decisions of issue 2 that the contract must state, each by the id that states it.
PRODUCT_DECISIONS = {
    "framing": ["FRAME-001", "FRAME-002", "FRAME-003"],
    "grammar": ["STREAM-ORDER-001", "STREAM-ORDER-002", "STREAM-ORDER-003", "EVENT-002", "EVENT-003"],
    "tool calls": ["TOOLCALL-001", "TOOLCALL-002", "TOOLCALL-003", "TOOLCALL-004", "TOOLCALL-005", "TOOLCALL-006"],
    "statistics": ["STATS-001", "STATS-002", "STATS-003", "STATS-004", "STATS-005", "STATS-006"],
    "titles": ["TITLE-001", "TITLE-002", "TITLE-003"],
    "listing": ["LIST-001", "LIST-002", "LIST-003", "TIME-001", "TIME-002"],
    "history": [
        "HISTORY-002",
        "HISTORY-003",
        "HISTORY-004",
        "HISTORY-005",
        "HISTORY-006",
        "HISTORY-007",
        "HISTORY-008",
    ],
    "sessions": ["SESSION-001", "SESSION-002", "SESSION-003", "SESSION-004", "SESSION-006", "SESSION-007"],
    "isolation": ["ISOLATION-001", "ISOLATION-002"],
    "auth and projects": ["AUTH-001", "AUTH-002", "PROJECT-001", "PROJECT-002", "LLM-001", "PRECHECK-001"],
    "input": ["INPUT-001", "INPUT-002", "INPUT-003", "INPUT-005", "INPUT-007"],
    "in-stream errors": ["ERRSTREAM-001", "ERRSTREAM-002"],
    "heartbeat": ["HEARTBEAT-001"],
    "concurrency": ["CONCURRENCY-001", "CONCURRENCY-002"],
    "migrations": ["MIGRATION-001", "MIGRATION-002", "MIGRATION-003"],
    "secrets": ["SECRET-001", "SECRET-002"],
}
LEVELS = {"TIME-001": "SHOULD", "EVENT-003": "SHOULD", "INPUT-005": "MAY"}


@pytest.mark.parametrize("topic", sorted(PRODUCT_DECISIONS))
def test_product_decisions_are_in_the_registry(topic: str):
    registry = {r["id"]: r for r in records()}
    for rule_id in PRODUCT_DECISIONS[topic]:
        assert rule_id in registry, f"{topic}: {rule_id} missing"
        assert registry[rule_id]["level"] == LEVELS.get(rule_id, "MUST"), rule_id


def test_contract_version_is_the_same_everywhere():
    assert spec.contract_version() == spec.load_openapi()["x-contract-version"]


def test_behaviour_ends_with_the_departures():
    text = spec.BEHAVIOUR_PATH.read_text()
    last_heading = [line for line in text.splitlines() if line.startswith("## ")][-1]
    assert last_heading == "## Departures from the design document"
    departures = text.split(last_heading)[1]
    assert len(re.findall(r"^\d+\. \*\*", departures, flags=re.M)) >= 10
