"""Testability (TESTABILITY-*): the target's LLM is the suite's fake LLM, which receives the user's exact text,
with the tools bound for the turn's generations and none for the title."""

from __future__ import annotations

from conformance.checks import check
from conformance.checks.blame import require_turn
from conformance.checks.context import CheckContext


@check("testability.llm_config")
async def llm_config(ctx: CheckContext) -> None:
    result = await ctx.client.stream({"message": ctx.message("cs-plain")})
    requests = await ctx.llm.requests()
    ok = (
        result.completed
        and "error" not in result.types
        and result.content == "".join(ctx.env.scripts["cs-plain"]["steps"][0]["text_chunks"])
        and any(r.get("step") == 0 for r in requests)
    )
    ctx.findings.expect(
        "TESTABILITY-001",
        ok,
        f"a turn against the fake LLM did not play its script: {result.types[-4:]}, "
        f"{len(requests)} request(s) reached the fake LLM",
        result.exchange,
    )


@check("testability.user_text")
async def user_text(ctx: CheckContext) -> None:
    text = "Exact text: «guillemets» & <angle> 'quotes'"
    sent = ctx.message("cs-tool", text)
    await require_turn(ctx, await ctx.client.stream({"message": sent}), "TESTABILITY-002")
    main = await ctx.llm.main_requests()
    ctx.findings.require(len(main) >= 1, "TESTABILITY-002", "the fake LLM received no main request for this turn")
    lasts = [next((m["content"] for m in reversed(r["messages"]) if m["role"] == "user"), None) for r in main]
    ctx.findings.expect(
        "TESTABILITY-002",
        all(last == sent for last in lasts),
        f"the LLM received {lasts!r} as the last user message; sent {sent!r}",
    )


@check("testability.tools_bound")
async def tools_bound(ctx: CheckContext) -> None:
    await require_turn(ctx, await ctx.client.stream({"message": ctx.message("cs-tool")}), "TESTABILITY-003")
    requests = await ctx.llm.requests()
    main = [r for r in requests if r.get("step") is not None]
    titles = [r for r in requests if r.get("step") is None]
    tool = ctx.target.tools["single"]["name"]
    ok = (
        len(main) == 2
        and all(tool in r["tools"] for r in main)
        and all(not r["tools"] for r in titles)
        and len(titles) <= 1
    )
    ctx.findings.expect(
        "TESTABILITY-003",
        ok,
        f"main requests {[(r['step'], r['tools']) for r in main]}, title requests "
        f"{len(titles)}: main generations must bind the tools ({tool}), the title none",
    )
