"""The table of session states (conformance/rules/session_states.py) against the contract: a row for every session
operation of openapi.yaml, a cell for every state, and each cell either judged by sessions.states(_running), or
naming a check that judges its rules, or saying where the contract is silent."""

from __future__ import annotations

import copy

import pytest

import gns3_copilot_spec as spec
from conformance.checks import load_all
from conformance.rules import session_states as table
from conformance.rules.session_states import SENT, Cell, Expect, Observed, missing_rows, problems

PREFIX = "/v3/projects/{project_id}/chat"


def test_every_session_operation_of_openapi_has_a_row_and_every_state_a_cell():
    assert missing_rows(spec.load_openapi()) == []
    assert table.session_operations(spec.load_openapi()) == [
        "streamChat",
        "getSessionHistory",
        "renameSession",
        "deleteSession",
        "pinSession",
        "unpinSession",
        "abortSessionTurn",
    ]
    assert set(table.TABLE) == {(s, op) for s in table.STATES for op in table.TABLE_OPS}
    assert set(table.STATE_WORDS) == set(table.STATES)


def test_a_new_session_operation_without_a_row_fails():
    document = copy.deepcopy(spec.load_openapi())
    path = f"{PREFIX}/sessions/{{session_id}}/archive"
    document["paths"][path] = {
        "put": {"operationId": "archiveSession", "tags": ["sessions"], "responses": {"200": {"description": "ok"}}}
    }
    assert missing_rows(document) == ["archiveSession: a session operation of openapi.yaml without a row"]


def test_a_new_body_that_names_a_session_is_a_session_operation_too():
    document = copy.deepcopy(spec.load_openapi())
    body = {"type": "object", "properties": {"session_id": {"type": "string"}}}
    document["paths"][f"{PREFIX}/fork"] = {
        "post": {
            "operationId": "forkSession",
            "tags": ["chat"],
            "requestBody": {"content": {"application/json": {"schema": body}}},
            "responses": {"200": {"description": "ok"}},
        }
    }
    assert missing_rows(document) == ["forkSession: a session operation of openapi.yaml without a row"]


def test_an_operation_gone_from_openapi_leaves_a_row_that_fails():
    document = copy.deepcopy(spec.load_openapi())
    del document["paths"][f"{PREFIX}/sessions/{{session_id}}/pin"]["delete"]
    assert missing_rows(document) == ["unpinSession: a row of an operation openapi.yaml does not have"]


def test_a_state_without_its_cells_fails(monkeypatch):
    monkeypatch.setattr(table, "STATES", (*table.STATES, "archived"))
    assert len(missing_rows(spec.load_openapi())) == len(table.TABLE_OPS)


@pytest.mark.parametrize("key", sorted(table.TABLE), ids=lambda k: f"{k[0]}-{k[1]}")
def test_each_cell_is_judged_somewhere_by_a_check_of_its_rules(key):
    cell = table.TABLE[key]
    assert cell.says
    checks = load_all()
    requirements = {r["id"]: r for r in spec.load_requirements()["requirements"]}
    if cell.judged_by:
        assert not cell.expect, key
        assert cell.judged_by in checks, key
        named = [rid for rid in requirements if rid in cell.says]
        assert named, f"{key}: the cell cites no requirement id"
        for rid in named:
            assert cell.judged_by in requirements[rid]["checks"], (key, rid)
        return
    assert cell.expect, key
    judge = "sessions.states_running" if key[0] == "running" else "sessions.states"
    for expectation in cell.expect:
        assert judge in requirements[expectation.requirement]["checks"], (key, expectation)
        assert expectation.requirement in cell.says, (key, expectation.requirement)


def test_the_closed_gaps_are_cells_judged_here():
    for key in [
        ("renamed", "pinSession"),
        ("renamed", "unpinSession"),
        ("running", "pinSession"),
        ("running", "unpinSession"),
        ("pinned", "renameSession"),
        ("running", "renameSession"),
        ("pinned", "deleteSession"),
        ("running", "deleteSession"),
    ]:
        assert table.TABLE[key].expect, key


def test_a_silent_contract_is_said_not_judged():
    """Where the contract does not say (how a deleted running turn's stream ends, whether a running turn's messages
    are in the history), the cell says so and judges nothing of it."""
    assert table.TABLE[("running", "deleteSession")].silent
    assert table.TABLE[("running", "getSessionHistory")].silent
    assert not any(e.what.startswith("stream") for cell in table.TABLE.values() for e in cell.expect)


def _seen(**changes) -> Observed:
    before = {"thread_id": "s", "title": "Old", "pinned": True}
    values = dict(
        session_id="s",
        before=before,
        title_sent="New",
        status=200,
        body={"thread_id": "s", "title": "New", "pinned": True},
        after={**before, "title": "New"},
        history_status=200,
        history_grown=None,
    )
    return Observed(**{**values, **changes})


def test_the_judgement_of_a_rename_of_a_pinned_session():
    cell = table.TABLE[("pinned", "renameSession")]
    assert problems(cell, _seen()) == []
    unpinned = _seen(body={"thread_id": "s", "title": "New", "pinned": False}, after={"title": "New", "pinned": False})
    assert {rid for rid, _ in problems(cell, unpinned)} == {"SESSION-004", "PIN-001"}
    assert problems(cell, _seen(status=409)) == [("SESSION-004", "answered 409, expected 200")]
    lost = _seen(after={"thread_id": "s", "title": "Old", "pinned": True})
    assert [rid for rid, _ in problems(cell, lost)] == ["SESSION-004"]


def test_the_judgement_of_a_delete():
    cell = table.TABLE[("pinned", "deleteSession")]
    assert problems(cell, _seen(status=204, body=None, after=None, history_status=404)) == []
    listed = problems(cell, _seen(status=204, body=None, history_status=404))
    assert listed == [("SESSION-006", "the session is still listed")]


def test_a_member_of_another_type_is_not_equal():
    cell = Cell("X", (Expect("answer.pinned", True, "PIN-001"), Expect("answer.title", SENT, "SESSION-004")))
    assert [rid for rid, _ in problems(cell, _seen(body={"pinned": 1, "title": "New"}))] == ["PIN-001"]


def test_the_abort_cells_need_the_capability():
    assert [op for op, _ in table.cells("pinned", set())] == [
        "renameSession",
        "pinSession",
        "unpinSession",
        "getSessionHistory",
        "streamChat",
        "deleteSession",
    ]
    assert table.unplayable(("renamed", "pinned"), set()) == {"ABORT-003": "abort", "ABORT-005": "abort"}
    assert table.unplayable(("renamed", "pinned"), {"abort"}) == {}
