"""Stream checks: framing, headers, event schemas, session ids, grammar, tool calls, in-stream errors,
heartbeats, content against history, what the LLM receives, and the set-up itself."""

from __future__ import annotations

import spec

from ..context import CheckContext, StreamResult
from . import check

SCENARIOS = ["cs-plain", "cs-tool", "cs-parallel", "cs-failing-tool", "cs-llm-error", "cs-mid-stream-error"]


async def _scenario_streams(ctx: CheckContext, names=SCENARIOS) -> list[StreamResult]:
    results = []
    for name in names:
        if name in ctx.env.scripts:
            results.append(await ctx.stream({"message": ctx.message(name)}))
    return results


def _rule(results: list[StreamResult], requirement: str) -> list[str]:
    return [
        f"{r.exchange.request_body}: {v}"
        for r in results
        for v in r.frame_violations + r.rule_violations
        if v.requirement == requirement
    ]


def _judge_rules(ctx: CheckContext, results: list[StreamResult], requirements: list[str]) -> None:
    for result in results:  # error scenarios included: only an answered, finished stream can be judged
        ctx.require(
            result.status == 200 and bool(result.events) and result.completed,
            requirements[0],
            f"no complete stream to judge: {result.exchange.describe()}",
            result.exchange,
        )
    for requirement in requirements:
        problems = _rule(results, requirement)
        offending = [
            r.exchange
            for r in results
            if any(v.requirement == requirement for v in r.frame_violations + r.rule_violations)
        ]
        ctx.expect(requirement, not problems, "; ".join(problems[:5]), *(offending[:2] or [results[0].exchange]))


@check("stream.framing")
async def framing(ctx: CheckContext) -> None:
    results = await _scenario_streams(ctx, ["cs-plain", "cs-tool"])
    for result in results:
        ok = result.status == 200 and (result.exchange.content_type or "").startswith("text/event-stream")
        ctx.expect(
            "FRAME-001", ok, f"status {result.status}, content type {result.exchange.content_type!r}", result.exchange
        )
    ctx.require(all(r.completed and r.events for r in results), "FRAME-003", "a stream did not end by itself")
    _judge_rules(ctx, results, ["FRAME-002", "FRAME-003"])


@check("stream.headers")
async def headers(ctx: CheckContext) -> None:
    result = await ctx.stream({"message": ctx.message("cs-plain")})
    value = result.exchange.headers.get("cache-control", "")
    ctx.expect("FRAME-004", "no-cache" in value.lower(), f"Cache-Control is {value!r}", result.exchange)


@check("stream.event_schema")
async def event_schema(ctx: CheckContext) -> None:
    results = await _scenario_streams(ctx)
    for result in results:
        ctx.require(bool(result.events), "EVENT-001", f"no events: {result.exchange.describe()}", result.exchange)
        errors = [
            f"event {i} ({e.get('type')}): {err}" for i, e in enumerate(result.events) for err in spec.validate_event(e)
        ]
        ctx.expect("EVENT-001", not errors, "; ".join(errors[:5]), result.exchange)


@check("stream.session_ids")
async def session_ids(ctx: CheckContext) -> None:
    results = await _scenario_streams(ctx, ["cs-plain", "cs-tool"])
    given = ctx.session_id("given")
    results.append(await ctx.stream({"message": ctx.message("cs-plain"), "session_id": given}))
    for result in results:
        ctx.require_stream(result, "EVENT-002")
    _judge_rules(ctx, results, ["EVENT-002", "EVENT-003", "EVENT-004"])
    last = results[-1]
    ctx.expect(
        "EVENT-004",
        all(e.get("session_id", given) == given for e in last.events),
        f"events carry another session id than the one requested ({given})",
        last.exchange,
    )


@check("stream.grammar")
async def grammar(ctx: CheckContext) -> None:
    _judge_rules(ctx, await _scenario_streams(ctx), ["STREAM-ORDER-001", "STREAM-ORDER-002", "STREAM-ORDER-003"])


@check("tools.accumulation")
async def accumulation(ctx: CheckContext) -> None:
    results = await _scenario_streams(ctx, ["cs-tool", "cs-parallel", "cs-failing-tool"])
    for result in results:
        ctx.require(
            "tool_call" in result.types,
            "TOOLCALL-001",
            f"the scripted tool call produced no tool_call event: {result.types}",
            result.exchange,
        )
    _judge_rules(
        ctx, results, ["TOOLCALL-001", "TOOLCALL-002", "TOOLCALL-003", "TOOLCALL-004", "TOOLCALL-005", "TOOLCALL-007"]
    )


@check("tools.parallel")
async def parallel(ctx: CheckContext) -> None:
    result = await ctx.stream({"message": ctx.message("cs-parallel")})
    ctx.require_stream(result, "TOOLCALL-006")
    completed = [
        e["tool_call"]["id"]
        for e in result.events
        if e.get("type") == "tool_call" and e["tool_call"]["function"].get("complete")
    ]
    started = [e.get("tool_call_id") for e in result.events if e.get("type") == "tool_start"]
    ends = [e for e in result.events if e.get("type") == "tool_end"]
    problems = _rule([result], "TOOLCALL-006")
    if sorted(completed) != ["call_cs_p1", "call_cs_p2"]:
        problems.append(f"completed calls {completed}, expected call_cs_p1 and call_cs_p2, each once")
    if len(ends) != 2 or (None not in started and sorted(started) != ["call_cs_p1", "call_cs_p2"]):
        problems.append(f"started {started} and {len(ends)} tool_end events, expected both calls started and ended")
    ctx.expect("TOOLCALL-006", not problems, "; ".join(problems), result.exchange)


@check("tools.failing_tool")
async def failing_tool(ctx: CheckContext) -> None:
    result = await ctx.stream({"message": ctx.message("cs-failing-tool")})
    ctx.require_stream(result, "TOOLCALL-008")
    name = ctx.target.tools["failing"]["name"]
    ends = [e for e in result.events if e.get("type") == "tool_end" and e.get("tool_name") == name]
    after = result.types[result.types.index("tool_end") + 1 :] if "tool_end" in result.types else []
    problems = []
    if "error" in result.types:
        problems.append("the failing tool produced an `error` event")
    if len(ends) != 1 or not str(ends[0].get("tool_output", "")).strip():
        problems.append(f"expected one tool_end of {name} describing the failure, got {ends}")
    if "content" not in after:
        problems.append(f"the turn did not go on to the next generation after the tool failed: {after}")
    ctx.expect("TOOLCALL-008", not problems, "; ".join(problems), result.exchange)


@check("errors.in_stream")
async def in_stream(ctx: CheckContext) -> None:
    session = ctx.session_id()
    for script in ("cs-llm-error", "cs-mid-stream-error"):
        result = await ctx.stream({"message": ctx.message(script), "session_id": session})
        ok = result.status == 200 and result.types[-2:] == ["error", "done"] and result.types.count("error") == 1
        ctx.expect(
            "ERRSTREAM-001",
            ok,
            f"expected 200 and one `error` then `done`; got {result.status} {result.types[-4:]}",
            result.exchange,
        )
    after = await ctx.stream({"message": ctx.message("cs-plain"), "session_id": session})
    ok = after.status == 200 and after.completed and bool(after.events) and "error" not in after.types
    ctx.expect(
        "ERRSTREAM-002",
        ok,
        f"the next turn after an error did not complete: {after.status} {after.types[-4:]}",
        after.exchange,
    )


@check("heartbeat.sent", slow=True)
async def heartbeat(ctx: CheckContext) -> None:
    interval = ctx.target.heartbeat_interval
    result = await ctx.stream({"message": ctx.message("cs-slow")}, deadline=interval * 4 + 30)
    ctx.require_stream(result, "HEARTBEAT-001")
    beats = result.types.count("heartbeat")
    ctx.expect(
        "HEARTBEAT-001",
        beats >= 1,
        f"a silence of {ctx.env.scripts['cs-slow']['steps'][0]['delay_before_ms']}"
        f" ms at a declared interval of {interval} s brought no heartbeat",
        result.exchange,
    )
    gaps = [b - a for a, b in zip([0.0, *result.arrivals], result.arrivals, strict=False)]
    worst = max(gaps) if gaps else 0.0
    ctx.expect(
        "HEARTBEAT-003",
        worst <= interval + 1.0,
        f"a gap of {worst:.2f} s between frames (declared interval {interval} s)",
        result.exchange,
    )


@check("history.matches_stream")
async def matches_stream(ctx: CheckContext) -> None:
    text = 'Conformance: "quotes", ünïcode, tab\tand\nnew line'
    session = ctx.session_id()
    streamed, sent = [], []
    for script in ("cs-tool", "cs-plain", "cs-mid-stream-error"):
        sent.append(ctx.message(script, text))
        result = await ctx.stream({"message": sent[-1], "session_id": session})
        ctx.require(
            result.status == 200 and bool(result.events),
            "STREAM-CONTENT-001",
            f"the turn failed: {result.exchange.describe()}",
            result.exchange,
        )
        streamed.append(result)
    history = (await ctx.history(session, limit=1000))["messages"]
    users = [i for i, m in enumerate(history) if m.get("role") == "user"]
    ctx.require(len(users) == 3, "HISTORY-009", f"expected 3 user messages in the history, found {len(users)}")
    ctx.expect(
        "HISTORY-009",
        [history[i].get("content") for i in users] == sent,
        f"the user messages differ from what was sent: {[history[i].get('content') for i in users]!r}",
    )
    for n, result in enumerate(streamed):
        end = users[n + 1] if n + 1 < len(users) else len(history)
        stored = "".join(m.get("content") or "" for m in history[users[n] + 1 : end] if m.get("role") == "assistant")
        ctx.expect(
            "STREAM-CONTENT-001",
            stored == result.content,
            f"turn {n + 1}: streamed {result.content!r}, the history holds {stored!r}",
            result.exchange,
        )


@check("llm_requests.user_text")
async def user_text(ctx: CheckContext) -> None:
    text = "Exact text: «guillemets» & <angle> 'quotes'"
    sent = ctx.message("cs-tool", text)
    ctx.require_stream(await ctx.stream({"message": sent}), "TESTABILITY-002")
    requests = await ctx.llm_requests()
    main = [r for r in requests if r.get("step") is not None]
    ctx.require(len(main) >= 1, "TESTABILITY-002", "the fake LLM received no main request for this turn")
    lasts = [next((m["content"] for m in reversed(r["messages"]) if m["role"] == "user"), None) for r in main]
    ctx.expect(
        "TESTABILITY-002",
        all(last == sent for last in lasts),
        f"the LLM received {lasts!r} as the last user message; sent {sent!r}",
    )


@check("llm_requests.tools_bound")
async def tools_bound(ctx: CheckContext) -> None:
    ctx.require_stream(await ctx.stream({"message": ctx.message("cs-tool")}), "TESTABILITY-003")
    requests = await ctx.llm_requests()
    main = [r for r in requests if r.get("step") is not None]
    titles = [r for r in requests if r.get("step") is None]
    tool = ctx.target.tools["single"]["name"]
    ok = (
        len(main) == 2
        and all(tool in r["tools"] for r in main)
        and all(not r["tools"] for r in titles)
        and len(titles) <= 1
    )
    ctx.expect(
        "TESTABILITY-003",
        ok,
        f"main requests {[(r['step'], r['tools']) for r in main]}, title requests "
        f"{len(titles)}: main generations must bind the tools ({tool}), the title none",
    )


@check("setup.prefix")
async def prefix(ctx: CheckContext) -> None:
    exchange = await ctx.call("GET", "/sessions", operation="listSessions")
    ctx.expect(
        "PREFIX-001", exchange.status == 200, f"GET under the declared prefix answered {exchange.status}", exchange
    )


@check("setup.llm_config")
async def llm_config(ctx: CheckContext) -> None:
    result = await ctx.stream({"message": ctx.message("cs-plain")})
    requests = await ctx.llm_requests()
    ok = (
        result.completed
        and "error" not in result.types
        and result.content == "".join(ctx.env.scripts["cs-plain"]["steps"][0]["text_chunks"])
        and any(r.get("step") == 0 for r in requests)
    )
    ctx.expect(
        "TESTABILITY-001",
        ok,
        f"a turn against the fake LLM did not play its script: {result.types[-4:]}, "
        f"{len(requests)} request(s) reached the fake LLM",
        result.exchange,
    )


@check("target.declarations")
async def declarations(ctx: CheckContext) -> None:
    declared = ctx.target.declarations
    ctx.expect(
        "STATS-006",
        isinstance(declared.get("title_counts_in_stats"), bool),
        "the target does not declare title_counts_in_stats",
    )
    ctx.expect(
        "HEARTBEAT-002",
        float(declared.get("heartbeat_interval", 0)) > 0,
        "the target does not declare heartbeat_interval",
    )
