"""History (HISTORY-*): the session's messages oldest first in the OpenAI format, with stable unique ids,
arguments as JSON strings, tool messages naming their calls, the statistics and timestamps of the session, and
`limit` selecting the newest messages."""

from __future__ import annotations

from typing import Any

from conformance.checks import check
from conformance.checks.blame import require_turn
from conformance.checks.context import CheckContext
from conformance.checks.support import answered, expected_roles, history, listed, message_keys, scenario_or, turn
from conformance.transport.exchanges import json_or_none
from gns3_copilot_generated.constants import HISTORY_LIMIT_DEFAULT, HISTORY_LIMIT_MAX, HISTORY_LIMIT_MIN


def _parsed_arguments(value: Any) -> Any:
    return json_or_none(value) if isinstance(value, str) else value


@check("history.format")
async def history_format(ctx: CheckContext) -> None:
    session_id = ctx.session_id()
    scripts = ["cs-tool", scenario_or(ctx, "cs-parallel", "cs-tool"), "cs-plain"]
    sent = []
    for n, script in enumerate(scripts):
        sent.append(ctx.message(script, f"History format, turn {n + 1}"))
        await require_turn(ctx, await ctx.client.stream({"message": sent[-1], "session_id": session_id}), "HISTORY-001")
    session = await listed(ctx, session_id, "HISTORY-001")
    data = await history(ctx, session_id, "HISTORY-001")
    messages = [m for m in data["messages"] if m.get("role") != "system"]

    # HISTORY-001: the session's messages, oldest first, with the session's id and title.
    ctx.findings.expect(
        "HISTORY-001",
        data.get("thread_id") == session_id,
        f"thread_id {data.get('thread_id')!r}, expected the session id {session_id!r}",
    )
    ctx.findings.expect(
        "HISTORY-001",
        data.get("title") == session.get("title"),
        f"the history's title {data.get('title')!r} differs from the session's {session.get('title')!r}",
    )
    wanted_roles = [r for s in scripts for r in expected_roles(ctx.env.scripts[s])]
    roles = [m.get("role") for m in messages]
    users = [m.get("content") for m in messages if m.get("role") == "user"]
    ctx.findings.expect(
        "HISTORY-001",
        roles == wanted_roles and users == sent,
        f"the messages, oldest first, should have the roles {wanted_roles} and the user messages in the order sent; "
        f"got the roles {roles} and the user messages {users!r}",
    )
    scripted = [
        (call["name"], call["arguments"])
        for s in scripts
        for step in ctx.env.scripts[s]["steps"]
        for call in step.get("tool_calls", [])
    ]
    calls = [
        ((c.get("function") or {}).get("name"), _parsed_arguments((c.get("function") or {}).get("arguments")))
        for m in messages
        if m.get("role") == "assistant"
        for c in m.get("tool_calls") or []
        if isinstance(c, dict)
    ]
    # Arguments that do not parse to an object are HISTORY-004's finding; the others must be the LLM's.
    same = len(calls) == len(scripted) and all(
        name == want_name and (not isinstance(arguments, dict) or arguments == want_arguments)
        for (name, arguments), (want_name, want_arguments) in zip(calls, scripted, strict=True)
    )
    ctx.findings.expect(
        "HISTORY-001",
        same,
        f"the assistant messages' tool calls (name, parsed arguments) are {calls}, the LLM made {scripted}",
    )

    # HISTORY-004: arguments are JSON strings of objects.
    bad_arguments, seen = [], 0
    for message in messages:
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            seen += 1
            arguments = (call.get("function") or {}).get("arguments") if isinstance(call, dict) else None
            parsed = json_or_none(arguments) if isinstance(arguments, str) else None
            if not isinstance(parsed, dict):
                bad_arguments.append(f"message {message.get('id')}: arguments {arguments!r}")
    ctx.findings.require(seen > 0, "HISTORY-004", "the history holds no assistant tool call, though the LLM made some")
    ctx.findings.expect(
        "HISTORY-004",
        not bad_arguments,
        "tool call arguments that are not a JSON string of an object: " + "; ".join(bad_arguments[:5]),
    )

    # HISTORY-005: tool messages name an earlier call, with its function name.
    earlier: dict[str, str | None] = {}
    bad_tools, tools_seen = [], 0
    for message in messages:
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or []:
                if isinstance(call, dict):
                    earlier[call.get("id")] = (call.get("function") or {}).get("name")
        elif message.get("role") == "tool":
            tools_seen += 1
            call_id, name = message.get("tool_call_id"), message.get("name")
            if call_id not in earlier:
                bad_tools.append(f"message {message.get('id')}: tool_call_id {call_id!r} names no earlier tool call")
            elif name != earlier[call_id]:
                bad_tools.append(
                    f"message {message.get('id')}: name {name!r}, the call {call_id} is {earlier[call_id]!r}"
                )
    ctx.findings.require(tools_seen > 0, "HISTORY-005", "the history holds no tool message, though tools ran")
    ctx.findings.expect("HISTORY-005", not bad_tools, "; ".join(bad_tools[:5]))

    # HISTORY-008: llm_calls and the timestamps.
    ctx.findings.expect(
        "HISTORY-008",
        data.get("llm_calls") == session.get("llm_calls_count"),
        f"llm_calls {data.get('llm_calls')!r}, the session's llm_calls_count is {session.get('llm_calls_count')!r}",
    )
    empty = [f for f in ("created_at", "updated_at") if not (isinstance(data.get(f), str) and data[f].strip())]
    ctx.findings.expect(
        "HISTORY-008", not empty, f"the history's {empty} are not filled in: {[data.get(f) for f in empty]}"
    )


@check("history.ids")
async def history_ids(ctx: CheckContext) -> None:
    session_id = ctx.session_id()
    await turn(ctx, "HISTORY-002", session_id, "cs-tool")
    await turn(ctx, "HISTORY-002", session_id, "cs-plain")
    first = (await history(ctx, session_id, "HISTORY-002"))["messages"]
    second = (await history(ctx, session_id, "HISTORY-003"))["messages"]
    ids = [m.get("id") for m in first]
    duplicates = sorted({str(i) for i in ids if ids.count(i) > 1})
    missing = [n for n, i in enumerate(ids) if not isinstance(i, str) or not i]
    ctx.findings.expect(
        "HISTORY-002",
        not duplicates and not missing and len(ids) >= 6,
        f"{len(ids)} messages (6 expected); ids used more than once: {duplicates}; positions without an id: {missing}",
    )
    ctx.findings.expect(
        "HISTORY-003",
        [m.get("id") for m in second] == ids,
        f"two history calls in a row gave different ids: {ids} then {[m.get('id') for m in second]}",
    )
    await turn(ctx, "HISTORY-003", session_id, "cs-plain")
    third = (await history(ctx, session_id, "HISTORY-003"))["messages"]
    ctx.findings.expect(
        "HISTORY-003",
        [m.get("id") for m in third[: len(ids)]] == ids,
        f"after another turn the earlier messages have the ids {[m.get('id') for m in third[: len(ids)]]}, "
        f"before {ids}",
    )
    newest = (await history(ctx, session_id, "HISTORY-003", limit=2))["messages"]
    tail = third[-len(newest) :] if newest else []  # which messages a limit selects is HISTORY-006's
    ctx.findings.expect(
        "HISTORY-003",
        [m.get("id") for m in newest] == [m.get("id") for m in tail],
        f"with limit=2 the ids are {[m.get('id') for m in newest]}, the same messages of the full history have "
        f"{[m.get('id') for m in tail]}",
    )
    all_ids = [m.get("id") for m in third]
    ctx.findings.expect(
        "HISTORY-002",
        len(set(all_ids)) == len(all_ids),
        f"after a third turn, ids are reused: {sorted({str(i) for i in all_ids if all_ids.count(i) > 1})}",
    )


def _shown(messages: list[dict[str, Any]]) -> str:
    return ", ".join(f"{m.get('role')}:{str(m.get('content'))[:24]!r}" for m in messages[:4]) + (
        f" ... ({len(messages)} messages)" if len(messages) > 4 else ""
    )


@check("history.limit")
async def history_limit(ctx: CheckContext) -> None:
    session_id = ctx.session_id()
    # Every user message is unique and the last turn is the only plain one, so a window of the newest messages
    # matches the full history's tail only at its true place (compared without ids: those are HISTORY-003's).
    # Fewer than 100 messages: a history past the default of 100 takes 21 turns (6-9 s more for the suite
    # on the reference server, far more with tools that wait), so the default is judged on a short session.
    middle = scenario_or(ctx, "cs-parallel", "cs-tool")
    for n, script in enumerate(("cs-tool", middle, "cs-plain")):
        await turn(ctx, "HISTORY-006", session_id, script, text=f"History limit, turn {n + 1}")
    full = (await history(ctx, session_id, "HISTORY-006", limit=HISTORY_LIMIT_MAX))["messages"]
    expected_length = sum(len(expected_roles(ctx.env.scripts[s])) for s in ("cs-tool", middle, "cs-plain"))
    ctx.findings.require(
        len(full) == expected_length,
        "HISTORY-006",
        f"after 3 turns that make {expected_length} messages, limit={HISTORY_LIMIT_MAX} returned {len(full)}: "
        f"{_shown(full)}",
    )
    default = (await history(ctx, session_id, "HISTORY-006"))["messages"]
    ctx.findings.expect(
        "HISTORY-006",
        message_keys(default) == message_keys(full),
        f"without limit: {_shown(default)}; expected all {len(full)} messages (fewer than the default "
        f"{HISTORY_LIMIT_DEFAULT}), oldest first",
    )
    for limit in (HISTORY_LIMIT_MIN, 2, 3, 6, len(full) - 1, len(full), HISTORY_LIMIT_MAX):
        got = (await history(ctx, session_id, "HISTORY-006", limit=limit))["messages"]
        expected = full[-limit:]
        ctx.findings.expect(
            "HISTORY-006",
            message_keys(got) == message_keys(expected),
            f"limit={limit}: got {_shown(got)}; expected the newest {len(expected)} of {len(full)}, oldest first: "
            f"{_shown(expected)}",
        )
    outside = (f"{HISTORY_LIMIT_MIN - 1}", f"{HISTORY_LIMIT_MAX + 1}")  # just outside HISTORY-006's range
    for value in (*outside, "-1", "abc", "1.5", "1_000", " 5", "5 ", "+5"):
        exchange = await ctx.client.call(
            "GET",
            f"/sessions/{session_id}/history",
            operation="getSessionHistory",
            params={"limit": value},
        )
        ctx.findings.expect(
            "HISTORY-007", exchange.status == 422, f"limit={value!r}: {answered(exchange)}; expected 422", exchange
        )
