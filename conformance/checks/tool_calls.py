"""Tool calls (TOOLCALL-*): arguments that accumulate to one complete JSON object, each call started and ended
once with its id, parallel calls all run, and a failing tool that does not end the turn."""

from __future__ import annotations

from conformance.checks import check
from conformance.checks.blame import require_served, require_turn
from conformance.checks.context import CheckContext
from conformance.checks.support import judge_stream_rules, rule_problems, scenario_streams
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


@check("tool_calls.failing_tool")
async def failing_tool(ctx: CheckContext) -> None:
    # A declared tool that fails, and a tool the LLM asks for that the server does not have: both fail as tools.
    cases = [("cs-unknown-tool", UNKNOWN_TOOL)]
    if "cs-failing-tool" in ctx.env.scripts:
        cases.insert(0, ("cs-failing-tool", ctx.target.tools["failing"]["name"]))
    for script, name in cases:
        result = await ctx.client.stream({"message": ctx.message(script)})
        await require_turn(ctx, result, "TOOLCALL-008")
        ends = [e for e in result.events if e.get("type") == "tool_end" and e.get("tool_name") == name]
        after = result.types[result.types.index("tool_end") + 1 :] if "tool_end" in result.types else []
        problems = []
        if "error" in result.types:
            problems.append(f"the failing tool {name} produced an `error` event")
        if len(ends) != 1 or not str(ends[0].get("tool_output", "")).strip():
            problems.append(f"expected one tool_end of {name} describing the failure, got {ends}")
        if "content" not in after:
            problems.append(f"the turn did not go on to the next generation after {name} failed: {after}")
        ctx.findings.expect("TOOLCALL-008", not problems, "; ".join(problems), result.exchange)
