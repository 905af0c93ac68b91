"""Sessions: statistics, titles, listing and pinning, history, lifecycle, isolation and abort."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from conformance.rules.responses import response_violations
from conformance.rules.stream_events import check_events
from fake_llm.scripts import ScriptLibrary
from gns3_copilot_generated.constants import HISTORY_LIMIT_MAX, HISTORY_LIMIT_MIN, INITIAL_TITLE, SESSION_ID_MAX_LENGTH
from reference_server.agent.turn import CANCELLED_TOOL_OUTPUT

pytestmark = pytest.mark.anyio

LIBRARY = ScriptLibrary.from_folders()
RFC3339_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def usage(script: str, steps: int, *, title: bool) -> tuple[int, int]:
    """Input and output tokens of the first `steps` steps of a built-in script, plus its title step."""
    chosen = LIBRARY.get(script)
    counted = list(chosen.steps[:steps]) + ([chosen.title] if title else [])
    return sum(s.usage.input_tokens for s in counted), sum(s.usage.output_tokens for s in counted)


def checked(operation_id: str, response):
    assert (
        response_violations(operation_id, response.status_code, response.headers.get("content-type"), response.content)
        == []
    )
    return response


@pytest.mark.covers("STATS-001", "STATS-002", "STATS-003", "STATS-004", "STATS-006", "SESSION-005")
async def test_statistics_add_up_exactly_over_a_multi_turn_session(lab):
    first = await lab.stream("[[fake-llm:tool-round-trip]]", "stats-1")
    second = await lab.stream("[[fake-llm:parallel-tools]]", "stats-1")
    third = await lab.stream("[[fake-llm:plain]]", "stats-1")
    assert [s.types[-1] for s in (first, second, third)] == ["done"] * 3
    session = await lab.session("stats-1")
    history = await lab.history("stats-1")
    # turn 1: 2 generations + title; turn 2: 2 generations; turn 3: 1 generation (title only once)
    i1, o1 = usage("tool-round-trip", 2, title=True)
    i2, o2 = usage("parallel-tools", 2, title=False)
    i3, o3 = usage("plain", 1, title=False)
    assert session["llm_calls_count"] == 3 + 2 + 1
    assert (session["input_tokens"], session["output_tokens"]) == (i1 + i2 + i3, o1 + o2 + o3)
    assert session["total_tokens"] == session["input_tokens"] + session["output_tokens"]
    # user, assistant(call), tool, assistant | user, assistant(2 calls), tool, tool, assistant | user, assistant
    assert session["message_count"] == len(history["messages"]) == 4 + 5 + 2


@pytest.mark.covers("STATS-002", "STATS-003", "STATS-006")
async def test_title_generation_can_be_left_out_of_the_statistics(make_settings):
    from tests.reference_server.conftest import in_process_lab

    async with in_process_lab(make_settings(title_counts_in_stats=False)) as lab:
        await lab.stream("[[fake-llm:plain]]", "no-title-stats")
        session = await lab.session("no-title-stats")
    assert session["llm_calls_count"] == 1
    assert (session["input_tokens"], session["output_tokens"]) == usage("plain", 1, title=False)
    assert session["title"] != INITIAL_TITLE


@pytest.mark.covers("STATS-005", "STATS-001", "STATS-002", "STATS-003")
async def test_statistics_of_turns_ending_by_error(lab):
    await lab.stream("[[fake-llm:llm-error]]", "err-stats")
    session = await lab.session("err-stats")
    assert (session["llm_calls_count"], session["input_tokens"], session["output_tokens"]) == (1, 0, 0)
    assert session["message_count"] == len((await lab.history("err-stats"))["messages"]) == 1
    await lab.stream("[[fake-llm:mid-stream-error]]", "err-stats")
    session = await lab.session("err-stats")
    assert session["llm_calls_count"] == 2
    assert session["message_count"] == len((await lab.history("err-stats"))["messages"]) == 3


@pytest.mark.covers("TITLE-001", "TITLE-002", "TITLE-004")
async def test_title_is_generated_once_after_the_first_plain_answer(lab):
    await lab.stream("[[fake-llm:llm-error]]", "title-1")
    assert (await lab.session("title-1"))["title"] == INITIAL_TITLE
    await lab.stream("[[fake-llm:quoted-title]]", "title-1")
    title = (await lab.session("title-1"))["title"]
    raw = "".join(LIBRARY.get("quoted-title").title.text_chunks)
    assert title == " ".join(raw.splitlines()).strip().strip("\"'").strip() and "\n" not in title
    await lab.stream("[[fake-llm:parallel-tools]]", "title-1")
    assert (await lab.session("title-1"))["title"] == title


@pytest.mark.covers("TITLE-003", "SESSION-004", "LIST-003")
async def test_a_rename_is_never_overwritten(lab):
    renamed = checked(
        "renameSession",
        await lab.client.patch(f"{lab.prefix()}/sessions/manual-1", json={"title": "My own"}, headers=lab.headers),
    )
    assert renamed.status_code == 404  # no such session yet
    first = await lab.stream("[[fake-llm:llm-error]]", "manual-1")  # no title yet
    assert first.types[-1] == "done"
    before = await lab.session("manual-1")
    renamed = checked(
        "renameSession",
        await lab.client.patch(f"{lab.prefix()}/sessions/manual-1", json={"title": "My own"}, headers=lab.headers),
    )
    assert renamed.status_code == 200 and renamed.json()["title"] == "My own"
    assert renamed.json()["updated_at"] > before["updated_at"]
    await lab.stream("[[fake-llm:plain]]", "manual-1")
    assert (await lab.session("manual-1"))["title"] == "My own"


@pytest.mark.covers("TITLE-003")
async def test_a_rename_during_the_first_turn_wins_over_the_generated_title(lab):
    task = asyncio.create_task(lab.stream("[[fake-llm:slow]]", "manual-2"))
    for _ in range(100):
        listing = (await lab.client.get(f"{lab.prefix()}/sessions", headers=lab.headers)).json()
        if any(s["thread_id"] == "manual-2" for s in listing):
            break
        await asyncio.sleep(0.02)
    response = await lab.client.patch(
        f"{lab.prefix()}/sessions/manual-2", json={"title": "Chosen"}, headers=lab.headers
    )
    assert response.status_code == 200
    assert (await task).types[-1] == "done"
    assert (await lab.session("manual-2"))["title"] == "Chosen"


@pytest.mark.covers("TITLE-006")
async def test_a_failed_title_generation_keeps_the_title_and_the_turn(lab):
    stream = await lab.stream("[[fake-llm:title-fails]]", "title-fails")
    assert stream.types == ["content", "done"]
    session = await lab.session("title-fails")
    assert session["title"] == INITIAL_TITLE
    assert session["llm_calls_count"] == 2  # the failed title generation counts (STATS-002)


@pytest.mark.covers("SESSION-004", "INPUT-007")
@pytest.mark.parametrize("title", ["", "x" * 256, None, 5])
async def test_rename_rejects_invalid_titles(lab, title):
    await lab.stream("[[fake-llm:plain]]", "rename-bad")
    response = checked(
        "renameSession",
        await lab.client.patch(f"{lab.prefix()}/sessions/rename-bad", json={"title": title}, headers=lab.headers),
    )
    assert response.status_code == 422
    assert response.json()["details"]["errors"][0]["loc"] == ["body", "title"]


@pytest.mark.covers("LIST-001", "LIST-002", "LIST-003", "PIN-001", "TIME-001", "TIME-002", "CONTRACT-001")
async def test_listing_order_pinning_and_time(lab):
    for name in ("order-a", "order-b", "order-c"):
        await lab.stream("[[fake-llm:plain]]", name)
    other_project = await lab.new_project()
    await lab.stream("[[fake-llm:plain]]", "elsewhere", project_id=other_project)
    listing = checked("listSessions", await lab.client.get(f"{lab.prefix()}/sessions", headers=lab.headers)).json()
    assert [s["thread_id"] for s in listing] == ["order-c", "order-b", "order-a"]
    for session in listing:
        assert all(RFC3339_Z.match(session[k]) for k in ("created_at", "updated_at", "last_message_at"))
        assert session["created_at"] <= session["updated_at"]
    pinned = checked("pinSession", await lab.client.put(f"{lab.prefix()}/sessions/order-a/pin", headers=lab.headers))
    assert pinned.status_code == 200 and pinned.json()["pinned"] is True
    assert pinned.json()["updated_at"] > listing[2]["updated_at"]
    again = checked("pinSession", await lab.client.put(f"{lab.prefix()}/sessions/order-a/pin", headers=lab.headers))
    assert again.json()["pinned"] is True and again.json()["updated_at"] == pinned.json()["updated_at"]
    listing = (await lab.client.get(f"{lab.prefix()}/sessions", headers=lab.headers)).json()
    assert [s["thread_id"] for s in listing] == ["order-a", "order-c", "order-b"]
    unpinned = checked(
        "unpinSession", await lab.client.delete(f"{lab.prefix()}/sessions/order-a/pin", headers=lab.headers)
    )
    assert unpinned.json()["pinned"] is False and unpinned.json()["updated_at"] > pinned.json()["updated_at"]
    twice = await lab.client.delete(f"{lab.prefix()}/sessions/order-a/pin", headers=lab.headers)
    assert twice.status_code == 200 and twice.json()["updated_at"] == unpinned.json()["updated_at"]
    listing = (await lab.client.get(f"{lab.prefix()}/sessions", headers=lab.headers)).json()
    assert [s["thread_id"] for s in listing] == ["order-a", "order-c", "order-b"]  # unpin is a mutation


@pytest.mark.covers("LIST-002")
async def test_ties_on_updated_at_are_broken_by_id(lab):
    import sqlite3

    from reference_server.agent.service import database_path

    for name in ("tie-1", "tie-2", "tie-3"):
        await lab.stream("[[fake-llm:plain]]", name)
    db = database_path(lab.settings.projects_dir / lab.project_id)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE chat_sessions SET updated_at = '2026-01-01T00:00:00.000000Z'")
    listing = (await lab.client.get(f"{lab.prefix()}/sessions", headers=lab.headers)).json()
    assert [s["thread_id"] for s in listing] == ["tie-3", "tie-2", "tie-1"]
    assert [s["id"] for s in listing] == sorted((s["id"] for s in listing), reverse=True)


@pytest.mark.covers(
    "HISTORY-001",
    "HISTORY-002",
    "HISTORY-003",
    "HISTORY-004",
    "HISTORY-005",
    "HISTORY-008",
    "HISTORY-009",
    "CONTRACT-001",
)
async def test_history_format_and_stable_ids(lab):
    message = 'Is R1 up? ünïcode "quotes"\nnew line [[fake-llm:parallel-tools]]'
    stream = await lab.stream(message, "hist-1")
    await lab.stream("[[fake-llm:tool-round-trip]]", "hist-1")
    response = checked(
        "getSessionHistory", await lab.client.get(f"{lab.prefix()}/sessions/hist-1/history", headers=lab.headers)
    )
    history = response.json()
    session = await lab.session("hist-1")
    assert history["thread_id"] == "hist-1" and history["title"] == session["title"]
    assert history["llm_calls"] == session["llm_calls_count"]
    assert history["created_at"] and history["updated_at"]
    messages = history["messages"]
    assert messages[0] == {**messages[0], "role": "user", "content": message}
    assert [m["role"] for m in messages] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert len({m["id"] for m in messages}) == len(messages)
    calls = {}
    for m in messages:
        for call in m.get("tool_calls") or []:
            assert isinstance(json.loads(call["function"]["arguments"]), dict)
            calls[call["id"]] = call["function"]["name"]
        if m["role"] == "tool":
            assert calls[m["tool_call_id"]] == m["name"]
    assert stream.session_id == "hist-1"
    again = await lab.history("hist-1")
    assert [m["id"] for m in again["messages"]] == [m["id"] for m in messages]


@pytest.mark.covers("HISTORY-006", "HISTORY-007", "CONTRACT-001")
async def test_history_limit(lab):
    for _ in range(3):
        await lab.stream("[[fake-llm:plain]]", "limit-1")
    full = (await lab.history("limit-1"))["messages"]
    assert len(full) == 6
    assert (await lab.history("limit-1", limit=2))["messages"] == full[-2:]
    assert (await lab.history("limit-1", limit=HISTORY_LIMIT_MAX))["messages"] == full
    for bad in (str(HISTORY_LIMIT_MIN - 1), str(HISTORY_LIMIT_MAX + 1), "-1", "abc", "1.5", ""):
        response = checked(
            "getSessionHistory",
            await lab.client.get(
                f"{lab.prefix()}/sessions/limit-1/history", params={"limit": bad}, headers=lab.headers
            ),
        )
        assert response.status_code == 422, bad
        assert response.json()["details"]["errors"][0]["loc"] == ["query", "limit"]


@pytest.mark.covers("SESSION-001", "SESSION-002", "SESSION-003")
async def test_session_ids(lab):
    generated = await lab.stream("[[fake-llm:plain]]")
    assert re.fullmatch(r"[0-9a-f-]{36}", generated.session_id)
    chosen = await lab.stream("[[fake-llm:plain]]", "my.session:id-1_x")
    assert chosen.session_id == "my.session:id-1_x"
    too_long = "x" * (SESSION_ID_MAX_LENGTH + 1)
    for bad in ("", "has space", too_long, "slash/inside", "é"):
        response = await lab.client.post(
            f"{lab.prefix()}/stream", json={"message": "x", "session_id": bad}, headers=lab.headers
        )
        assert response.status_code == 422, bad
    response = checked(
        "getSessionHistory", await lab.client.get(f"{lab.prefix()}/sessions/{too_long}/history", headers=lab.headers)
    )
    assert response.status_code == 422


@pytest.mark.covers("SESSION-006", "SESSION-007", "DB-006", "CONTRACT-001")
async def test_delete_removes_the_session_and_its_checkpoints(lab):
    import sqlite3

    from reference_server.agent.service import database_path

    await lab.stream("[[fake-llm:tool-round-trip]]", "doomed")
    deleted = checked("deleteSession", await lab.client.delete(f"{lab.prefix()}/sessions/doomed", headers=lab.headers))
    assert deleted.status_code == 204
    with sqlite3.connect(database_path(lab.settings.projects_dir / lab.project_id)) as conn:
        for table in ("chat_sessions", "checkpoints", "writes"):
            column = "thread_id"
            assert conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {column} = 'doomed'").fetchone()[0] == 0
    for method, path in [
        ("GET", "/history"),
        ("PATCH", ""),
        ("DELETE", ""),
        ("PUT", "/pin"),
        ("DELETE", "/pin"),
        ("POST", "/abort"),
    ]:
        kwargs = {"json": {"title": "t"}} if method == "PATCH" else {}
        response = await lab.client.request(
            method, f"{lab.prefix()}/sessions/doomed{path}", headers=lab.headers, **kwargs
        )
        assert response.status_code == 404 and response.json()["code"] == "session_not_found", (method, path)
    fresh = await lab.stream("[[fake-llm:plain]]", "doomed")
    assert fresh.types[-1] == "done"
    assert len((await lab.history("doomed"))["messages"]) == 2
    assert (await lab.session("doomed"))["llm_calls_count"] == 2


@pytest.mark.covers("ISOLATION-001", "ISOLATION-002", "LIST-001")
async def test_another_user_sees_nothing_and_changes_nothing(lab):
    await lab.stream("[[fake-llm:plain]]", "owned")
    before = await lab.session("owned")
    history_before = await lab.history("owned")
    _, bob = await lab.add_user("bob")
    listing = (await lab.client.get(f"{lab.prefix()}/sessions", headers=bob)).json()
    assert listing == []
    for method, path in [
        ("GET", "/history"),
        ("PATCH", ""),
        ("DELETE", ""),
        ("PUT", "/pin"),
        ("DELETE", "/pin"),
        ("POST", "/abort"),
    ]:
        kwargs = {"json": {"title": "stolen"}} if method == "PATCH" else {}
        response = await lab.client.request(method, f"{lab.prefix()}/sessions/owned{path}", headers=bob, **kwargs)
        assert response.status_code == 404, (method, path)
    stream = await lab.stream("[[fake-llm:plain]]", "owned", headers=bob)
    assert stream.status == 404 and json.loads(stream.text)["code"] == "session_not_found"
    assert await lab.session("owned") == before
    assert await lab.history("owned") == history_before
    await lab.stream("[[fake-llm:plain]]", "bobs", headers=bob)
    assert [s["thread_id"] for s in (await lab.client.get(f"{lab.prefix()}/sessions", headers=bob)).json()] == ["bobs"]
    assert "bobs" not in [
        s["thread_id"] for s in (await lab.client.get(f"{lab.prefix()}/sessions", headers=lab.headers)).json()
    ]


@pytest.mark.covers("ABORT-001", "ABORT-002", "ABORT-003", "ABORT-004", "ABORT-005", "STATS-005")
async def test_abort_stops_a_running_turn(lab):
    await lab.stream("[[fake-llm:plain]]", "abort-1")
    idle = checked(
        "abortSessionTurn", await lab.client.post(f"{lab.prefix()}/sessions/abort-1/abort", headers=lab.headers)
    )
    assert idle.json() == {"session_id": "abort-1", "aborted": False}
    task = asyncio.create_task(lab.stream("[[fake-llm:slow]]", "abort-1"))

    async def asked() -> bool:  # the user's message is kept, the model is thinking
        return len((await lab.history("abort-1"))["messages"]) == 3

    await lab.until(asked, "the slow turn's question kept")
    assert await lab.abort_when_running("abort-1") == {"session_id": "abort-1", "aborted": True}
    started = asyncio.get_running_loop().time()
    stream = await asyncio.wait_for(task, 5)
    assert stream.types[-1] == "done" and asyncio.get_running_loop().time() - started < 5
    session = await lab.session("abort-1")
    assert session["message_count"] == len((await lab.history("abort-1"))["messages"]) == 3
    assert session["llm_calls_count"] == 3  # plain + title, then the aborted generation
    after = await lab.stream("[[fake-llm:plain]]", "abort-1")
    assert after.types[-1] == "done" and "error" not in after.types
    assert (await lab.session("abort-1"))["message_count"] == 5


@pytest.mark.covers("ABORT-004", "HISTORY-005", "STATS-001", "TOOLCALL-005")
async def test_abort_mid_tool_leaves_a_whole_history(lab, tmp_path):
    from tests.reference_server.conftest import in_process_lab

    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "waits.yaml").write_text(
        "name: waits\nsteps:\n"
        "  - tool_calls: [{id: call_w, name: wait_seconds, arguments: {seconds: 5}}]\n"
        "    usage: {input_tokens: 10, output_tokens: 5}\n"
        "  - text_chunks: [done waiting]\n    usage: {input_tokens: 20, output_tokens: 2}\n"
        "title:\n  text_chunks: [Waiting]\n  usage: {input_tokens: 3, output_tokens: 1}\n"
    )
    async with in_process_lab(
        lab.settings.model_copy(update={"fake_llm_scripts": [scripts], "data_dir": tmp_path / "d2"})
    ) as lab2:
        task = asyncio.create_task(lab2.stream("[[fake-llm:waits]]", "mid-tool"))

        async def tool_running() -> bool:  # the call is kept before its tool runs
            response = await lab2.client.get(f"{lab2.prefix()}/sessions/mid-tool/history", headers=lab2.headers)
            return response.status_code == 200 and any(m.get("tool_calls") for m in response.json()["messages"])

        await lab2.until(tool_running, "the wait_seconds call")
        await lab2.abort_when_running("mid-tool")
        stream = await asyncio.wait_for(task, 5)
        assert "tool_start" in stream.types and stream.types[-1] == "done"
        # The started call still ends, once, with the output its tool message keeps (TOOLCALL-005).
        ends = [e for e in stream.events if e["type"] == "tool_end"]
        assert [(e["tool_call_id"], e["tool_output"]) for e in ends] == [("call_w", CANCELLED_TOOL_OUTPUT)]
        assert check_events(stream.events) == []
        history = (await lab2.history("mid-tool"))["messages"]
        assert [m["role"] for m in history] == ["user", "assistant", "tool"]
        assert history[2]["tool_call_id"] == "call_w" and history[2]["content"].startswith("Cancelled")
        session = await lab2.session("mid-tool")
        assert session["message_count"] == 3 and session["llm_calls_count"] == 1
        after = await lab2.stream("[[fake-llm:plain]]", "mid-tool")
        assert after.content == "The lab looks healthy."
        session = await lab2.session("mid-tool")
        assert session["message_count"] == len((await lab2.history("mid-tool"))["messages"]) == 5
        assert session["llm_calls_count"] == 3  # no pending node ran again: 1 + plain + title


@pytest.mark.covers("SESSION-008", "ERROR-002")
async def test_a_session_that_was_never_created_is_404_on_every_path_endpoint(lab):
    for method, path in [
        ("GET", "/history"),
        ("PATCH", ""),
        ("DELETE", ""),
        ("PUT", "/pin"),
        ("DELETE", "/pin"),
        ("POST", "/abort"),
    ]:
        kwargs = {"json": {"title": "t"}} if method == "PATCH" else {}
        response = await lab.client.request(
            method, f"{lab.prefix()}/sessions/never-created{path}", headers=lab.headers, **kwargs
        )
        assert response.status_code == 404 and response.json()["code"] == "session_not_found", (method, path)


@pytest.mark.covers("INPUT-003", "INPUT-004", "INPUT-007")
@pytest.mark.parametrize(
    ("member", "value"),
    [
        ("temperature", "0.5"),
        ("temperature", "1"),
        ("temperature", True),
        ("temperature", False),
        ("stream", 1),
        ("stream", 1.0),
        ("stream", "true"),
        ("message", 5),
    ],
)
async def test_json_types_are_taken_as_they_are(lab, member, value):
    body = {"message": "x", member: value}
    response = await lab.client.post(f"{lab.prefix()}/stream", json=body, headers=lab.headers)
    assert response.status_code == 422, (member, value, response.text)
    errors = response.json()["details"]["errors"]
    assert [e["loc"] for e in errors] == [["body", member]]


@pytest.mark.covers("HISTORY-007")
@pytest.mark.parametrize("limit", ["1_000", " 5", "5 ", "+5", "٥", "5.0"])
async def test_a_history_limit_is_digits_only(lab, limit):
    await lab.stream("[[fake-llm:default]]", "limited")
    response = await lab.client.get(
        f"{lab.prefix()}/sessions/limited/history", params={"limit": limit}, headers=lab.headers
    )
    assert response.status_code == 422, (limit, response.text)


async def _made_meanwhile(lab, session_id: str, owner_headers: dict[str, str]) -> None:
    """Make `session_id` (a turn of the owner's), then have the project's first read of it answer None once: as if
    the session had been made between the turn's read and its claim (another worker's turn, or one here that ended)."""
    assert (await lab.stream("[[fake-llm:plain]]", session_id, headers=owner_headers)).status == 200
    service = lab.app.state.services.manager.get(lab.project_id)
    get, missed = service.repo.get, []

    async def get_missing_once(thread_id):
        if thread_id == session_id and not missed:
            missed.append(thread_id)
            return None
        return await get(thread_id)

    service.repo.get = get_missing_once


@pytest.mark.covers("SESSION-005")
async def test_a_session_made_between_the_read_and_the_claim_goes_on(lab):
    """A new session's row and its in-flight mark are one write, made only if no session has the id (issue 33); one
    made meanwhile is read again under the busy lock and continues, as a session read at once would have."""
    await _made_meanwhile(lab, "appeared", lab.headers)
    second = await lab.stream("[[fake-llm:plain]]", "appeared")
    assert second.status == 200 and second.types[-1] == "done" and second.session_id == "appeared"
    history = await lab.history("appeared")
    assert [m["role"] for m in history["messages"]] == ["user", "assistant", "user", "assistant"]
    assert (await lab.session("appeared"))["message_count"] == 4


@pytest.mark.covers("ISOLATION-002")
async def test_another_users_session_made_between_the_read_and_the_claim_is_not_found(lab):
    _, other = await lab.add_user("meanwhile")
    await _made_meanwhile(lab, "theirs", other)
    refused = await lab.stream("[[fake-llm:plain]]", "theirs")
    assert refused.status == 404 and json.loads(refused.text)["code"] == "session_not_found"
    history = await lab.client.get(f"{lab.prefix()}/sessions/theirs/history", headers=other)
    assert [m["role"] for m in history.json()["messages"]] == ["user", "assistant"]  # theirs untouched
