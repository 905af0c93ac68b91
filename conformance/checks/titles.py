"""Titles (TITLE-*): initial, generated once after the first plain answer and cleaned, sticky after a rename
(before or during the first turn), and a failing title generation that fails nothing else."""

from __future__ import annotations

import asyncio

from conformance.checks import check
from conformance.checks.blame import require_served, require_turn
from conformance.checks.context import CheckContext
from conformance.checks.support import RENAMED_TITLE, find_session, turn, wait_for
from conformance.rules.scenarios import QUOTED_TITLE_EXPECTED, TITLE
from gns3_copilot_generated.constants import INITIAL_TITLE

NEW = INITIAL_TITLE


async def _title(ctx: CheckContext, session: str) -> str | None:
    listed = await find_session(ctx, session, "LIST-001")
    return None if listed is None else listed.get("title")


async def _failed_first_turn(ctx: CheckContext, session: str, requirement: str) -> None:
    result = await ctx.client.stream({"message": ctx.message("cs-llm-error"), "session_id": session})
    ctx.findings.require(result.status == 200, requirement, f"the turn answered {result.status}", result.exchange)


@check("titles.initial")
async def initial(ctx: CheckContext) -> None:
    session = ctx.session_id()
    await _failed_first_turn(ctx, session, "TITLE-001")
    title = await _title(ctx, session)
    ctx.findings.expect("TITLE-001", title == NEW, f"a new session, whose only turn failed, is titled {title!r}")
    # A turn that fails after a tool call: where a server fails the turn whose model names a tool it does not have
    # (gns3-server: KeyError, then `error`), the session is still new. A server that goes on (TOOLCALL-008) titles
    # it as any answered turn, which titles.generated judges.
    session = ctx.session_id("unknown-tool")
    result = await ctx.client.stream({"message": ctx.message("cs-unknown-tool"), "session_id": session})
    ctx.findings.require(result.status == 200, "TITLE-001", f"the turn answered {result.status}", result.exchange)
    if "error" in result.types:
        title = await _title(ctx, session)
        ctx.findings.expect(
            "TITLE-001",
            title == NEW,
            f"a new session, whose only turn failed (`error`) after its model named an unknown tool, is titled "
            f"{title!r}",
            result.exchange,
        )


@check("titles.generated")
async def generated(ctx: CheckContext) -> None:
    session = ctx.session_id()
    await turn(ctx, "TITLE-002", session, "cs-quoted-title")
    title = await _title(ctx, session)
    ctx.findings.expect(
        "TITLE-002",
        title == QUOTED_TITLE_EXPECTED,
        f"title {title!r}; the title reply was {ctx.env.scripts['cs-quoted-title']['title']['text_chunks']!r}, "
        f"expected {QUOTED_TITLE_EXPECTED!r} (one line, stripped of whitespace and quotes)",
    )


@check("titles.once")
async def once(ctx: CheckContext) -> None:
    session = ctx.session_id()
    await turn(ctx, "TITLE-004", session, "cs-quoted-title")
    first = await _title(ctx, session)
    await turn(ctx, "TITLE-004", session, "cs-plain")
    second = await _title(ctx, session)
    titles = [r for r in await ctx.llm.requests() if r.get("step") is None]
    ctx.findings.expect(
        "TITLE-004",
        first == second and len(titles) <= 1,
        f"title {first!r} became {second!r} after a later turn; {len(titles)} title generations",
    )


async def _rename(ctx: CheckContext, session: str):
    return await ctx.client.call(
        "PATCH", f"/sessions/{session}", operation="renameSession", json_body={"title": RENAMED_TITLE}
    )


@check("titles.sticky_after_rename", slow=True)
async def sticky(ctx: CheckContext) -> None:
    # 1. Renamed before any title: a later plain turn keeps it.
    session = ctx.session_id("before")
    await _failed_first_turn(ctx, session, "TITLE-003")
    ctx.findings.require_status(await _rename(ctx, session), 200, "TITLE-003")
    await turn(ctx, "TITLE-003", session, "cs-plain")
    title = await _title(ctx, session)
    ctx.findings.expect(
        "TITLE-003",
        title == RENAMED_TITLE,
        f"renamed after a failed first turn, then a plain turn: the title is {title!r} (generated: {TITLE!r})",
    )
    # 2. Renamed while the first turn runs, before its title is generated: the rename still wins.
    session = ctx.session_id("during")
    running = asyncio.create_task(ctx.client.stream({"message": ctx.message("cs-slow"), "session_id": session}))
    listed = await wait_for(lambda: find_session(ctx, session, "LIST-001"), seconds=10, interval=0.1)
    ctx.findings.require(
        listed is not None, "TITLE-003", "the session of a running first turn was not listed within 10 s"
    )
    renamed = await _rename(ctx, session)
    result = await running
    ctx.findings.require_status(renamed, 200, "TITLE-003")
    await require_turn(ctx, result, "TITLE-003")
    title = await _title(ctx, session)
    ctx.findings.expect(
        "TITLE-003",
        title == RENAMED_TITLE,
        f"renamed while the first turn ran: after the turn the title is {title!r} (generated: {TITLE!r})",
        renamed,
    )


@check("titles.generation_fails")
async def generation_fails(ctx: CheckContext) -> None:
    session = ctx.session_id()
    result = await ctx.client.stream({"message": ctx.message("cs-title-fails"), "session_id": session})
    title = await _title(ctx, session)
    completed = result.status == 200 and result.completed and "error" not in result.types
    await require_served(
        ctx,
        completed,
        result,
        "TITLE-006",
        f"with the title generation failing, the turn failed: events {result.types[-3:]}",
        stop=False,
    )
    ctx.findings.expect(
        "TITLE-006",
        title == NEW,
        f"with the title generation failing: events {result.types[-3:]}, title {title!r}",
        result.exchange,
    )
