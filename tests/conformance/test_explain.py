"""`explain`: every requirement is traced to where it is specified, checked, implemented and proven."""

from __future__ import annotations

import shutil
from functools import cache
from pathlib import Path

import pytest

import gns3_copilot_spec as spec
from conformance import explain as explain_module
from conformance.explain import HEADINGS, Location, UnknownRequirement, explain, mentioned_ids, render
from tests.quality.mutants import MUTANTS
from tests.reference_server.test_traceability import covered_ids

RECORDS = {record["id"]: record for record in spec.load_requirements()["requirements"]}
covered = cache(covered_ids)  # parses every reference-server test: once, not once per requirement


def line_at(repo_root: Path, location: Location) -> str:
    lines = (repo_root / location.path).read_text(encoding="utf-8").splitlines()
    assert 1 <= location.line <= len(lines), location
    return lines[location.line - 1].strip()


@pytest.mark.parametrize("rid", sorted(RECORDS))
def test_every_requirement_is_traced_or_says_why_not(rid: str, repo_root: Path):
    record, expl = RECORDS[rid], explain(rid)
    assert (expl.id, expl.level, expl.section, expl.capability) == (
        rid,
        record["level"],
        record["section"],
        record.get("capability"),
    )

    assert [location.path for location in expl.specified] == ["spec/behaviour.md", "spec/requirements.yaml"]
    assert line_at(repo_root, expl.specified[0]).startswith(f"- **{rid}** ({record['level']})")
    assert line_at(repo_root, expl.specified[1]) == f"- id: {rid}"

    if "excluded" in record:
        assert expl.checked_by == () and record["excluded"] in expl.notes["checked_by"]
    else:
        assert expl.missing_checks == ()
        assert [location.label for location in expl.checked_by] == record["checks"]
        for location in expl.checked_by:
            assert location.path.startswith("conformance/checks/"), location
            assert line_at(repo_root, location).startswith(("@", "def ", "async def ")), location

    # Every non-excluded rule is named where the reference server implements it; an excluded one at least says why.
    assert expl.implemented_in or ("excluded" in record and expl.notes.get("implemented_in"))
    for location in expl.implemented_in:
        assert location.path.startswith(f"{expl.area}/"), location
        assert rid in mentioned_ids(line_at(repo_root, location)), location

    if expl.area == "reference_server":  # the same reading as the traceability test
        shown = {f"{Path(location.path).name}::{location.label}" for location in expl.verified_by}
        assert shown == set(covered().get(rid, []))
    assert expl.verified_by or expl.notes.get("verified_by")

    # The mutants as read from the AST are the mutants as registered.
    assert {location.label.split(":")[0] for location in expl.mutants} == {
        m.name for m in MUTANTS.values() if rid in m.targets
    }
    assert {location.label.split(":")[0] for location in expl.mutant_consequences} == {
        m.name for m in MUTANTS.values() if rid in m.consequences - m.targets
    }
    for location in expl.mutants + expl.mutant_consequences:
        assert line_at(repo_root, location).startswith(("@mutant(", "mutant(")), location
    assert bool(expl.mutants) != (expl.notes.get("mutants") == "no mutant targets it")

    text = render(expl)
    assert all(f"\n{heading}" in text for heading in HEADINGS)


def test_toolcall_005(repo_root: Path):
    expl = explain("TOOLCALL-005")
    assert expl.specified[0].path == "spec/behaviour.md" and 50 <= expl.specified[0].line <= 60
    assert expl.checked_by and all(location.path.startswith("conformance/checks/") for location in expl.checked_by)
    assert any(location.path == "reference_server/agent/graph.py" for location in expl.implemented_in)
    # No mutant targets it today; the one that removes tool_start's id breaks it as a consequence.
    assert any(location.label.startswith("tool-start-without-id:") for location in expl.mutant_consequences)
    text = render(expl)
    assert "spec/behaviour.md:" in text and "tests/quality/mutants.py:" in text


@pytest.mark.parametrize("unknown", ["TOOLCALL-05", "toolcal-005"])
def test_an_unknown_id_names_the_closest_ones(unknown: str):
    with pytest.raises(UnknownRequirement, match=f"unknown requirement id '{unknown}'; closest: .*TOOLCALL-005"):
        explain(unknown)


def test_ids_are_accepted_in_any_case():
    assert explain(" toolcall-005 ").id == explain("ToolCall-005").id == "TOOLCALL-005"


def test_mentions_are_whole_ids_with_ranges_and_lists_expanded():
    assert mentioned_ids("(STATS-001..004)") == {"STATS-001", "STATS-002", "STATS-003", "STATS-004"}
    assert mentioned_ids("DB-001..DB-003, and TITLE-002") == {"DB-001", "DB-002", "DB-003", "TITLE-002"}
    assert mentioned_ids("(INPUT-006, -007)") == {"INPUT-006", "INPUT-007"}
    assert mentioned_ids("STREAM-ORDER-001") == {"STREAM-ORDER-001"}
    assert mentioned_ids("TOOLCALL-00 TOOLCALL-0051 xTOOLCALL-005 MIGRATION-*") == set()


def test_an_installation_without_tests_says_so(tmp_path: Path, repo_root: Path, monkeypatch: pytest.MonkeyPatch):
    shutil.copytree(repo_root / "reference_server", tmp_path / "reference_server")
    monkeypatch.setattr(explain_module, "ROOT", tmp_path)
    expl = explain("TOOLCALL-005")
    assert expl.implemented_in and expl.verified_by == () and expl.mutants == expl.mutant_consequences == ()
    assert "installed package" in expl.notes["verified_by"] and "installed package" in expl.notes["mutants"]
    assert "not installed" in explain("FAKELLM-001").notes["implemented_in"]


def test_a_protocol_rule_shows_its_source_and_citation():
    expl = explain("OPENAI-PROTO-002")
    citation = RECORDS["OPENAI-PROTO-002"]["citation"]
    assert expl.source == "protocol" and expl.citation == citation
    text = render(expl)
    assert "\nsource: protocol (the protocol's own rule)\ncitation:\n" in text
    assert f"  protocol   {citation['protocol']}\n" in text and f"  version    {citation['version']}\n" in text
    shown = " ".join(text[text.index("  reference  ") :].split("\nspecified:")[0].split())
    assert shown == "reference " + " ".join(citation["reference"].split())


def test_a_contract_rule_shows_its_source_and_no_citation():
    expl = explain("OPENAI-001")
    assert expl.source == "contract" and expl.citation is None
    text = render(expl)
    assert "\nsource: contract (what the GNS3 Copilot contract adds; spec/behaviour.md)\n" in text
    assert "citation:" not in text


@pytest.mark.parametrize("rid", sorted(RECORDS))
def test_every_requirement_says_whose_it_is(rid: str):
    expl, record = explain(rid), RECORDS[rid]
    assert expl.source == record["source"]
    assert (expl.citation is not None) == (record["source"] == "protocol")
    assert f"\nsource: {record['source']} (" in render(expl)
