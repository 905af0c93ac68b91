"""Tool calls (TOOLCALL-*): arguments that accumulate to one complete JSON object, each call started and ended
once with its id, parallel calls all run, and a failing tool that does not end the turn."""

from __future__ import annotations

from conformance.checks import check
from conformance.checks.blame import raise_if_blocked, require_served, require_turn
from conformance.checks.context import CheckContext
from conformance.checks.support import judge_stream_rules, rule_problems, scenario_streams
from conformance.checks.turns import completed_turn
from conformance.rules.scenarios import PARALLEL_SHAPES, TOOL_SHAPES, UNKNOWN_TOOL


@check("tool_calls.accumulation")
async def accumulation(ctx: CheckContext) -> None:
    # Every cut of a call's deltas a provider sends (whole, several calls in one chunk, interleaved, after text).
    results = await scenario_streams(ctx, ["cs-tool", "cs-parallel", "cs-failing-tool", *TOOL_SHAPES, *PARALLEL_SHAPES])
    for result in results:
        await require_served(
            ctx,
            "tool_call" in result.types,
            result,
            "TOOLCALL-001",
            f"the scripted tool call produced no tool_call event: {result.types}",
        )
    # A rule is judged only where its scenario happened: completion where a turn did not end in `error` (a
    # failed generation may stop mid-arguments), starts and ends where some tool ran.
    requirements = ["TOOLCALL-001", "TOOLCALL-002"]
    if any("error" not in r.types for r in results):
        requirements.append("TOOLCALL-003")
    else:
        ctx.findings.not_testable(
            "TOOLCALL-003", f"every tool turn ended in `error`: {[r.types[-3:] for r in results]}"
        )
    if any("tool_start" in r.types for r in results):
        requirements += ["TOOLCALL-004", "TOOLCALL-005", "TOOLCALL-007"]
    else:
        for requirement in ("TOOLCALL-004", "TOOLCALL-005", "TOOLCALL-007"):
            ctx.findings.not_testable(requirement, "no tool ran: no stream had a `tool_start` event")
    judge_stream_rules(ctx, results, requirements)


def _completed_calls(events: list[dict]) -> list[dict]:
    """The `tool_call` objects of the events that complete a call (a malformed one is EVENT-001's to report)."""
    calls = [e.get("tool_call") for e in events if e.get("type") == "tool_call"]
    return [
        c
        for c in calls
        if isinstance(c, dict) and isinstance(c.get("function"), dict) and c["function"].get("complete")
    ]


@check("tool_calls.parallel")
async def parallel(ctx: CheckContext) -> None:
    """Parallel calls as providers cut them: one after the other, both in one chunk, their fragments interleaved."""
    for script in ["cs-parallel", *(s for s in PARALLEL_SHAPES if s in ctx.env.scripts)]:
        result = await ctx.client.stream({"message": ctx.message(script)})
        await require_turn(ctx, result, "TOOLCALL-006")
        ids = sorted(call["id"] for call in ctx.env.scripts[script]["steps"][0]["tool_calls"])
        completed = [call.get("id") for call in _completed_calls(result.events)]
        started = [e.get("tool_call_id") for e in result.events if e.get("type") == "tool_start"]
        ends = [e for e in result.events if e.get("type") == "tool_end"]
        problems = rule_problems([result], "TOOLCALL-006")
        if sorted(completed) != ids:
            problems.append(f"{script}: completed calls {completed}, expected {' and '.join(ids)}, each once")
        if len(ends) != len(ids) or (None not in started and sorted(started) != ids):
            problems.append(
                f"{script}: started {started} and {len(ends)} tool_end events, expected every call started and ended"
            )
        ctx.findings.expect("TOOLCALL-006", not problems, "; ".join(problems), result.exchange)


def _failed_tool_problems(result, name: str, how: str) -> list[str]:
    """What a turn whose tool `name` failed (`how`: returned an error, raised, is unknown) did otherwise than
    TOOLCALL-008 says: no `error` event, each tool_start of the call ended by one tool_end describing the failure,
    and the turn going on to the next generation's content after the call's last event."""
    types = result.types
    mine = [i for i, e in enumerate(result.events) if e.get("tool_name") == name and e.get("type") == "tool_start"]
    ends = [e for e in result.events if e.get("type") == "tool_end" and e.get("tool_name") == name]
    problems = []
    if "error" in types:
        problems.append(f"the tool {name} that {how} produced an `error` event (event {types.index('error')})")
    if not ends:
        started = f"its tool_start (event {mine[0]}) was never ended" if mine else "it was neither started nor ended"
        problems.append(f"no tool_end of the tool {name} that {how}: {started}")
    elif len(ends) != 1 or not str(ends[0].get("tool_output", "")).strip():
        problems.append(f"expected one tool_end of {name} describing the failure, got {ends}")
    # The turn goes on after the call's last event: its tool_end, else its tool_start, else the calls' last
    # tool_call (so that a missing tool_end is not also reported as a turn that stopped when content followed).
    last = next(
        (
            (i, kind)
            for kind in ("tool_end", "tool_start", "tool_call")
            for i in range(len(types) - 1, -1, -1)
            if types[i] == kind and (kind == "tool_call" or result.events[i].get("tool_name") == name)
        ),
        None,
    )
    after = types[last[0] + 1 :] if last else types
    if "content" not in after:
        where = f"its {last[1]} (event {last[0]})" if last else "the start of the stream"
        problems.append(f"no content after {where}: the turn did not go on to the next generation ({after})")
    return problems


@check("tool_calls.failing_tool")
async def failing_tool(ctx: CheckContext) -> None:
    # A declared tool that returns an error, a tool the LLM asks for that the server does not have, and a declared
    # tool that raises inside (last: without its declaration the check stops there, and that case is not judged).
    cases = [("cs-unknown-tool", UNKNOWN_TOOL, "is not one the server has")]
    if "cs-failing-tool" in ctx.env.scripts:
        cases.insert(0, ("cs-failing-tool", ctx.target.tools["failing"]["name"], "returns an error"))
    raising = ctx.target.tools.get("raising", {}).get("name", "")
    cases.append(("cs-raising-tool", raising, "raises an exception"))
    for script, name, how in cases:
        result = await ctx.client.stream({"message": ctx.message(script)})
        problems = _failed_tool_problems(result, name, how)
        if not completed_turn(result):  # judged whatever it holds, unless the server serves no basic turn either
            why = f"the turn did not complete: {result.exchange.describe()}, events {result.types[-5:]}"
            await raise_if_blocked(ctx, None, [script], "TOOLCALL-008", why)
            if result.status != 200 or not result.completed:
                problems.insert(0, why)
        ctx.findings.expect("TOOLCALL-008", not problems, "; ".join(problems), result.exchange)
