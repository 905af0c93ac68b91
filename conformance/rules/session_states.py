"""Every operation on a session, in every state of a session the contract names: what the contract requires of the
answer and of the effect, cell by cell, with the requirement ids that say so. Pure data and pure judgement: the
check that plays the cells is conformance/checks/session_states.py.

The operations are those of openapi.yaml's GNS3 chat API that name one session: in their path (`{session_id}`) or
in their request body (a `session_id` member: the stream). `missing_rows` compares the table with a document, so
that a new session operation without its row fails a test (tests/conformance/test_session_states_table.py).

A cell either is judged here (`expect`), or names the check that already judges that operation in that state
(`judged_by`), or says that the contract is silent on part of it (`silent`): that part is judged by no one, and no
rule is made up for it. What an expectation compares:

- `answer.<member>`: the answer's JSON member; `answer.status` its status;
- `listed.<member>`: the session's entry in the listing afterwards (for a running turn: once its stream ended);
  `listed` alone with ABSENT: the session is not listed;
- `history.status`: the status of the session's history afterwards; `history.grown`: it holds more messages.

The values SENT (the title the rename sent), KEPT (the member as it was before the operation) and the session id
stand for what the scenario knows only when it runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import Any

import gns3_copilot_spec as spec

# The states of a session the contract's rules name.
STATES = ("new", "with_history", "renamed", "pinned", "running", "deleted", "other_users")
STATE_WORDS = {
    "new": "a valid id that names no session (never created)",
    "with_history": "a session with a served turn, neither renamed nor pinned",
    "renamed": "a session with a served turn, then renamed",
    "pinned": "a session with a served turn, then pinned",
    "running": "a session whose (second) turn is running: its slow generation has begun and its stream is open",
    "deleted": "a session that was deleted",
    "other_users": "a session of another user of the project",
}

SENT, KEPT, ABSENT, SESSION = "<the title sent>", "<as before>", "<not listed>", "<the session id>"


@dataclass(frozen=True)
class Expect:
    what: str  # answer.<member>, listed.<member>, listed, history.status, history.grown
    value: Any
    requirement: str


@dataclass(frozen=True)
class Cell:
    says: str  # what the contract requires, in words
    expect: tuple[Expect, ...] = ()
    judged_by: str = ""  # the check that judges this cell already
    silent: str = ""  # what the contract does not say here: judged by no one


def _e(what: str, value: Any, requirement: str) -> Expect:
    return Expect(what, value, requirement)


def _rename(state: str) -> Cell:
    keep = [_e("answer.pinned", KEPT, "SESSION-004"), _e("listed.pinned", KEPT, "PIN-001")]
    listed = (
        "TITLE-003: listed with that title once the turn has ended (its titling overwrites no PATCH title)"
        if state == "running"
        else "listed with that title afterwards"
    )
    return Cell(
        f"SESSION-004: 200 with the renamed session (the title sent, pinned as it was); {listed}; PIN-001: a pin "
        "lasts until it is removed",
        (
            _e("answer.status", 200, "SESSION-004"),
            _e("answer.thread_id", SESSION, "SESSION-004"),
            _e("answer.title", SENT, "SESSION-004"),
            # Undone once the running turn ends: automatic titling overwrote a PATCH title (TITLE-003).
            _e("listed.title", SENT, "TITLE-003" if state == "running" else "SESSION-004"),
            *keep,
        ),
    )


def _pin(state: str, pinned: bool) -> Cell:
    operation = "PUT" if pinned else "DELETE"
    return Cell(
        f"PIN-001: {operation} pin answers 200 with the session (its title as it is), pinned {str(pinned).lower()}, "
        "idempotent",
        (
            _e("answer.status", 200, "PIN-001"),
            _e("answer.thread_id", SESSION, "PIN-001"),
            _e("answer.pinned", pinned, "PIN-001"),
            _e("answer.title", KEPT, "PIN-001"),
            _e("listed.pinned", pinned, "PIN-001"),
            _e("listed.title", KEPT, "PIN-001"),
        ),
    )


def _delete(state: str) -> Cell:
    silent = (
        "how the running turn's stream ends (the stream rules of every stream still judge it) and whether the turn "
        "is stopped"
        if state == "running"
        else ""
    )
    return Cell(
        "SESSION-006: 204, and the session is removed (not listed, whether pinned or not); SESSION-007: its history "
        "answers 404",
        (
            _e("answer.status", 204, "SESSION-006"),
            _e("listed", ABSENT, "SESSION-006"),
            _e("history.status", 404, "SESSION-007"),
        ),
        silent=silent,
    )


def _history(state: str) -> Cell:
    silent = "whether the running turn's messages are in the history yet" if state == "running" else ""
    return Cell(
        "HISTORY-001: 200 with the session's messages, thread_id the session id and title the session's title",
        (
            _e("answer.status", 200, "HISTORY-001"),
            _e("answer.thread_id", SESSION, "HISTORY-001"),
            _e("answer.title", KEPT, "HISTORY-001"),
        ),
        silent=silent,
    )


def _stream(state: str) -> Cell:
    return Cell(
        "SESSION-005: the turn continues the session (its history grows); TITLE-003: a PATCH title is never "
        "overwritten by the turn's titling; PIN-001: its pin lasts",
        (
            _e("answer.status", 200, "SESSION-005"),
            _e("history.grown", True, "SESSION-005"),
            _e("listed.title", KEPT, "TITLE-003"),
            _e("listed.pinned", KEPT, "PIN-001"),
        ),
    )


def _abort_idle(state: str) -> Cell:
    return Cell(
        "with `abort` declared: ABORT-003, 200 and nothing changes; ABORT-005, `aborted: false`",
        (
            _e("answer.status", 200, "ABORT-003"),
            _e("answer.aborted", False, "ABORT-005"),
            _e("listed.title", KEPT, "ABORT-003"),
            _e("listed.pinned", KEPT, "ABORT-003"),
        ),
    )


def _idle_row(state: str) -> dict[str, Cell]:
    return {
        "renameSession": _rename(state),
        "pinSession": _pin(state, True),
        "unpinSession": _pin(state, False),
        "deleteSession": _delete(state),
        "getSessionHistory": _history(state),
        "streamChat": _stream(state),
        "abortSessionTurn": _abort_idle(state),
    }


_PATH_OPERATIONS = ("renameSession", "pinSession", "unpinSession", "deleteSession", "getSessionHistory")


def _elsewhere(check: str, says: str) -> Cell:
    return Cell(says, judged_by=check)


TABLE: dict[tuple[str, str], Cell] = {
    # Never created: every endpoint with the id in its path is 404; a stream creates the session under that id.
    **{
        ("new", op): _elsewhere("sessions.never_created", "SESSION-008: 404")
        for op in (*_PATH_OPERATIONS, "abortSessionTurn")
    },
    ("new", "streamChat"): _elsewhere("sessions.create_with_id", "SESSION-002: a new session under that id"),
    # With history, neither renamed nor pinned: each operation's own check plays it on such a session.
    ("with_history", "renameSession"): _elsewhere("sessions.rename", "SESSION-004: 200 with the renamed session"),
    ("with_history", "pinSession"): _elsewhere("listing.pin", "PIN-001: 200, pinned true, idempotent"),
    ("with_history", "unpinSession"): _elsewhere("listing.pin", "PIN-001: 200, pinned false, idempotent"),
    ("with_history", "deleteSession"): _elsewhere("sessions.delete", "SESSION-006: 204, removed"),
    ("with_history", "getSessionHistory"): _elsewhere("history.format", "HISTORY-001: the messages, oldest first"),
    ("with_history", "streamChat"): _elsewhere("stats.multi_turn", "SESSION-005: the session continues"),
    ("with_history", "abortSessionTurn"): _elsewhere("abort.idle_session", "ABORT-003, ABORT-005: 200, no change"),
    # Renamed, pinned: judged here.
    **{("renamed", op): cell for op, cell in _idle_row("renamed").items()},
    **{("pinned", op): cell for op, cell in _idle_row("pinned").items()},
    # Running a turn: judged here, but the stream and the abort, whose own checks play exactly this state.
    ("running", "renameSession"): _rename("running"),
    ("running", "pinSession"): _pin("running", True),
    ("running", "unpinSession"): _pin("running", False),
    ("running", "deleteSession"): _delete("running"),
    ("running", "getSessionHistory"): _history("running"),
    ("running", "streamChat"): _elsewhere("concurrency.busy", "CONCURRENCY-001: 409 session_busy before any stream"),
    ("running", "abortSessionTurn"): _elsewhere(
        "abort.running_turn", "ABORT-002: 200 and `done` within 5 s; ABORT-005: `aborted: true`"
    ),
    # Deleted: every endpoint with the id in its path is 404; a stream starts a new, empty session.
    **{
        ("deleted", op): _elsewhere("sessions.delete", "SESSION-007: 404")
        for op in (*_PATH_OPERATIONS, "abortSessionTurn")
    },
    ("deleted", "streamChat"): _elsewhere("sessions.delete", "SESSION-007: a new, empty session under that id"),
    # Another user's: 404 on every endpoint with the id in its path, and on the stream, before it begins.
    **{
        ("other_users", op): _elsewhere("isolation.endpoints", "ISOLATION-001: 404")
        for op in (*_PATH_OPERATIONS, "abortSessionTurn")
    },
    ("other_users", "streamChat"): _elsewhere("isolation.stream", "ISOLATION-002: 404, the session unchanged"),
}

# The capability an operation needs: without it the cell is not played (the rule is N/A).
CAPABILITY = {"abortSessionTurn": "abort"}
# The operations that end the running turn's stream themselves: played last, each on a session of its own.
ENDS_THE_SESSION = {"deleteSession"}

_METHODS = ("get", "put", "post", "patch", "delete")


def _body_schema(definition: dict[str, Any]) -> dict[str, Any]:
    schema = definition.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
    ref = schema.get("$ref")
    return spec.load_document(spec.OPENAPI_PATH.parent / ref) if isinstance(ref, str) and "#" not in ref else schema


def session_operations(document: dict[str, Any]) -> list[str]:
    """The operationIds of the chat API (no channel, no controller operation) that name one session: in the path
    or as the request body's `session_id`."""
    found = []
    for path, item in spec.chat_api_only(document)["paths"].items():
        for method, definition in item.items():
            if method not in _METHODS:
                continue
            in_body = "session_id" in _body_schema(definition).get("properties", {})
            if "{session_id}" in path or in_body:
                found.append(definition["operationId"])
    return found


def operations_of_table() -> list[str]:
    return list(dict.fromkeys(op for _, op in TABLE))


def missing_rows(document: dict[str, Any]) -> list[str]:
    """What the table lacks for `document`: a session operation without a row, a (state, operation) without a
    cell, or a row of an operation the document no longer has."""
    wanted = session_operations(document)
    problems = [f"{op}: a session operation of openapi.yaml without a row" for op in wanted if op not in TABLE_OPS]
    problems += [f"{op}: a row of an operation openapi.yaml does not have" for op in TABLE_OPS if op not in wanted]
    problems += [f"({s}, {op}): no cell" for s, op in product(STATES, TABLE_OPS) if (s, op) not in TABLE]
    return problems


TABLE_OPS = operations_of_table()


def cells(state: str, capabilities: set[str]) -> list[tuple[str, Cell]]:
    """The cells of one state this suite judges here, for a target with `capabilities` (deletes last)."""
    row = [
        (op, cell)
        for (s, op), cell in TABLE.items()
        if s == state and cell.expect and (op not in CAPABILITY or CAPABILITY[op] in capabilities)
    ]
    return sorted(row, key=lambda item: item[0] in ENDS_THE_SESSION)


def unplayable(states: tuple[str, ...], capabilities: set[str]) -> dict[str, str]:
    """Requirement -> the capability its cells of `states` need and the target does not declare."""
    return {
        e.requirement: CAPABILITY[op]
        for (s, op), cell in TABLE.items()
        if s in states and op in CAPABILITY and CAPABILITY[op] not in capabilities
        for e in cell.expect
    }


def requirements_judged_here() -> set[str]:
    return {e.requirement for cell in TABLE.values() for e in cell.expect}


# --- judging one cell --------------------------------------------------------------------------------------------


@dataclass
class Observed:
    """What the scenario saw of one operation: the session before it, the answer, and the session after it."""

    session_id: str
    before: dict[str, Any]  # the listed session before the operation
    title_sent: str | None
    status: int | None
    body: Any
    after: dict[str, Any] | None  # the listed session afterwards, None when not listed
    history_status: int | None
    history_grown: bool | None


def _wanted(value: Any, member: str, seen: Observed) -> Any:
    if value == SENT:
        return seen.title_sent
    if value == KEPT:
        return seen.before.get(member)
    if value == SESSION:
        return seen.session_id
    return value


def judged_requirements(cell: Cell, seen: Observed) -> list[str]:
    """The requirements `seen` lets the cell judge: all of them when the answer's status is the one required, else
    only the status's (the effect of an operation refused, or answered otherwise, shows nothing of the others)."""
    status = next((e for e in cell.expect if e.what == "answer.status"), None)
    if status is not None and seen.status != status.value:
        return [status.requirement]
    return list(dict.fromkeys(e.requirement for e in cell.expect))


def problems(cell: Cell, seen: Observed) -> list[tuple[str, str]]:
    """(requirement, what is wrong) for each expectation of `cell` that `seen` breaks. Nothing is judged of the
    effect when the answer's status is not the one required: the status's requirement fails, and says why."""
    found: list[tuple[str, str]] = []
    status = next((e for e in cell.expect if e.what == "answer.status"), None)
    if status is not None and seen.status != status.value:
        return [(status.requirement, f"answered {seen.status}, expected {status.value}")]
    for e in cell.expect:
        where, _, member = e.what.partition(".")
        if e.what == "answer.status":
            continue
        wanted = _wanted(e.value, member, seen)
        if where == "answer":
            got = seen.body.get(member, "(absent)") if isinstance(seen.body, dict) else "(no JSON object)"
            if got != wanted or type(got) is not type(wanted):
                found.append((e.requirement, f"the answer has {member} {_short(got)}, expected {_short(wanted)}"))
        elif e.what == "listed":
            if (seen.after is None) != (e.value == ABSENT):
                found.append((e.requirement, "the session is still listed" if seen.after else "it is not listed"))
        elif where == "listed":
            if seen.after is None:
                found.append((e.requirement, "the session is no longer listed"))
            elif seen.after.get(member) != wanted:
                got = seen.after.get(member)
                found.append((e.requirement, f"it is listed with {member} {_short(got)}, expected {_short(wanted)}"))
        elif e.what == "history.status" and seen.history_status != wanted:
            found.append((e.requirement, f"its history answered {seen.history_status}, expected {wanted}"))
        elif e.what == "history.grown" and seen.history_grown is not wanted:
            found.append((e.requirement, "its history did not grow by the turn"))
    return found


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
