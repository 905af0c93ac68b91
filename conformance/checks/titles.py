"""Titles: initial, generated once after the first plain answer, sticky after a rename (TITLE-*)."""

from __future__ import annotations

import asyncio

from ..context import CheckContext
from ..scenarios import QUOTED_TITLE_EXPECTED, TITLE
from . import check

NEW = "New Conversation"


async def _title(ctx: CheckContext, session: str) -> str | None:
    listed = await ctx.session(session)
    return None if listed is None else listed["title"]


@check("titles.initial")
async def initial(ctx: CheckContext) -> None:
    session = ctx.session_id()
    result = await ctx.stream({"message": ctx.message("cs-llm-error"), "session_id": session})
    ctx.require(result.status == 200, "TITLE-001", f"the turn answered {result.status}", result.exchange)
    title = await _title(ctx, session)
    ctx.expect("TITLE-001", title == NEW, f"a new session, whose only turn failed, is titled {title!r}")


@check("titles.generated")
async def generated(ctx: CheckContext) -> None:
    session = ctx.session_id()
    ctx.require_stream(
        await ctx.stream({"message": ctx.message("cs-quoted-title"), "session_id": session}), "TITLE-002"
    )
    title = await _title(ctx, session)
    ctx.expect(
        "TITLE-002",
        title == QUOTED_TITLE_EXPECTED,
        f"title {title!r}; the title reply was {ctx.env.scripts['cs-quoted-title']['title']['text_chunks']!r}, "
        f"expected {QUOTED_TITLE_EXPECTED!r} (one line, stripped of whitespace and quotes)",
    )


@check("titles.once")
async def once(ctx: CheckContext) -> None:
    session = ctx.session_id()
    ctx.require_stream(
        await ctx.stream({"message": ctx.message("cs-quoted-title"), "session_id": session}), "TITLE-004"
    )
    first = await _title(ctx, session)
    ctx.require_stream(await ctx.stream({"message": ctx.message("cs-plain"), "session_id": session}), "TITLE-004")
    second = await _title(ctx, session)
    titles = [r for r in await ctx.llm_requests() if r.get("step") is None]
    ctx.expect(
        "TITLE-004",
        first == second and len(titles) <= 1,
        f"title {first!r} became {second!r} after a later turn; {len(titles)} title generations",
    )


@check("titles.sticky_after_rename", slow=True)
async def sticky(ctx: CheckContext) -> None:
    renamed_to = "Renamed by the conformance suite"
    # 1. Renamed before any title: a later plain turn keeps it.
    session = ctx.session_id("before")
    result = await ctx.stream({"message": ctx.message("cs-llm-error"), "session_id": session})
    ctx.require(result.status == 200, "TITLE-003", f"the turn answered {result.status}", result.exchange)
    renamed = await ctx.call(
        "PATCH", f"/sessions/{session}", operation="renameSession", json_body={"title": renamed_to}
    )
    ctx.require_status(renamed, 200, "TITLE-003")
    ctx.require_stream(await ctx.stream({"message": ctx.message("cs-plain"), "session_id": session}), "TITLE-003")
    title = await _title(ctx, session)
    ctx.expect(
        "TITLE-003",
        title == renamed_to,
        f"renamed after a failed first turn, then a plain turn: the title is {title!r} (generated: {TITLE!r})",
    )
    # 2. Renamed while the first turn runs, before its title is generated: the rename still wins.
    session = ctx.session_id("during")
    turn = asyncio.create_task(ctx.stream({"message": ctx.message("cs-slow"), "session_id": session}))
    listed = await ctx.wait_for(lambda: ctx.session(session), seconds=10, interval=0.1)
    ctx.require(listed is not None, "TITLE-003", "the session of a running first turn was not listed within 10 s")
    renamed = await ctx.call(
        "PATCH", f"/sessions/{session}", operation="renameSession", json_body={"title": renamed_to}
    )
    result = await turn
    ctx.require_status(renamed, 200, "TITLE-003")
    ctx.require_stream(result, "TITLE-003")
    title = await _title(ctx, session)
    ctx.expect(
        "TITLE-003",
        title == renamed_to,
        f"renamed while the first turn ran: after the turn the title is {title!r} (generated: {TITLE!r})",
        renamed,
    )


@check("titles.generation_fails")
async def generation_fails(ctx: CheckContext) -> None:
    session = ctx.session_id()
    result = await ctx.stream({"message": ctx.message("cs-title-fails"), "session_id": session})
    title = await _title(ctx, session)
    ok = result.status == 200 and result.completed and "error" not in result.types and title == NEW
    ctx.expect(
        "TITLE-006",
        ok,
        f"with the title generation failing: events {result.types[-3:]}, title {title!r}",
        result.exchange,
    )
