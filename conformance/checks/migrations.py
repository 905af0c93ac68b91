"""Migrations (MIGRATION-*, capability db_access): a legacy database is upgraded in place when its project opens,
keeping every row; legacy sessions read unpinned and can be pinned; reopening changes nothing."""

from __future__ import annotations

import asyncio
import shutil
from typing import Any

from conformance.checks import check
from conformance.checks.context import CheckContext
from conformance.checks.support import controller_call, listing, require_controller, require_db_access
from conformance.errors import NotTestable
from conformance.harness import project_db
from conformance.rules.timestamps import parse_time
from conformance.transport.exchanges import json_or_none
from gns3_copilot_spec.db.legacy_fixture import build_legacy_database

TIMESTAMPS = ("last_message_at", "created_at", "updated_at")
COUNTERS = ("title", "message_count", "llm_calls_count", "input_tokens", "output_tokens", "total_tokens")


def _instant(value: Any) -> Any:
    """A timestamp as an instant, to compare two spellings of one time; other values (None included) as they are."""
    parsed = parse_time(value)
    return value if parsed is None else parsed


def _same_row(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """How an upgraded raw row differs from its legacy row (timestamps compared as instants)."""
    differences = []
    for name, value in before.items():
        now = after.get(name, "(no such column)")
        same = _instant(value) == _instant(now) if name in TIMESTAMPS else value == now
        if not same:
            differences.append(f"{name} {value!r} -> {now!r}")
    return differences


def _diff(before: list[dict[str, Any]], after: list[dict[str, Any]], key: str) -> str:
    """What changed between two lists of records: order, records added or removed, fields changed."""
    old, new = {r.get(key): r for r in before}, {r.get(key): r for r in after}
    changes = [f"{key} {k} disappeared" for k in old if k not in new]
    changes += [f"{key} {k} appeared" for k in new if k not in old]
    for k in old.keys() & new.keys():
        fields = [
            f"{f} {old[k].get(f)!r} -> {new[k].get(f)!r}" for f in old[k] | new[k] if old[k].get(f) != new[k].get(f)
        ]
        if fields:
            changes.append(f"{key} {k}: " + ", ".join(fields))
    if not changes and list(old) != list(new):
        changes.append(f"the order changed: {list(old)} -> {list(new)}")
    return "; ".join(changes[:6]) or "(a difference in duplicates)"


def _object(body: str) -> dict[str, Any]:
    """A JSON object answer, or an empty one (its shape is CONTRACT-001's, judged on every exchange)."""
    value = json_or_none(body)
    return value if isinstance(value, dict) else {}


@check("migrations.legacy_upgrade")
async def migration(ctx: CheckContext) -> None:
    require_db_access(ctx)
    require_controller(ctx)
    main, other = ctx.user("main"), ctx.user("other")
    if not main.user_id or not other.user_id:
        raise NotTestable("the suite does not know the user ids of main and other, which the legacy rows need")
    project_id = await ctx.env.controller.create_project(f"cs-{ctx.run}")
    await ctx.env.controller.close_project(project_id)
    path = ctx.env.database_path(project_id)

    def install() -> list[dict[str, Any]]:
        shutil.rmtree(path.parent, ignore_errors=True)
        return build_legacy_database(path, user_id=main.user_id, project_id=project_id, other_user_id=other.user_id)

    inserted = await asyncio.to_thread(install)
    legacy = await project_db.rows(path, "chat_sessions")
    mine = {r["thread_id"]: r for r in inserted if r["user_id"] == main.user_id}
    others = [r["thread_id"] for r in inserted if r["user_id"] != main.user_id]

    # MIGRATION-001: opening upgrades the file in place, keeping every row.
    admin = {"Authorization": f"Bearer {ctx.env.controller.admin_token}"}
    opened = await ctx.client.call("POST", f"/v3/projects/{project_id}/open", user=None, absolute=True, headers=admin)
    first = await ctx.client.call("GET", "/sessions", operation="listSessions", project_id=project_id)
    if opened.status not in (200, 201) or first.status != 200:
        # The legacy rows cannot be read, pinned or reopened: every migration rule fails.
        message = (
            f"with the legacy database of spec/db/legacy_fixture.py installed, {opened.describe()} (expected 200 "
            f"or 201), then {first.describe()} (expected 200): {(opened.body or first.body)[:300]}"
        )
        for requirement in ("MIGRATION-001", "MIGRATION-002", "MIGRATION-003"):
            ctx.findings.expect(requirement, False, message, opened, first)
        return
    by_id = {s.get("thread_id"): s for s in await listing(ctx, "MIGRATION-001", project_id=project_id)}
    problems = []
    if sorted(by_id) != sorted(mine):
        problems.append(f"main's listing holds {sorted(by_id)}, expected the legacy sessions {sorted(mine)}")
    for thread_id, row in mine.items():
        session = by_id.get(thread_id)
        if session is None:
            continue
        differing = [f"{k} {session.get(k)!r} (legacy {row[k]!r})" for k in COUNTERS if session.get(k) != row[k]]
        differing += [
            f"{k} {session.get(k)!r} (legacy {row[k]!r})"
            for k in TIMESTAMPS
            if _instant(session.get(k)) != _instant(row[k])
        ]
        if differing:
            problems.append(f"{thread_id}: " + ", ".join(differing))
    other_listed = {
        s.get("thread_id") for s in await listing(ctx, "MIGRATION-001", user="other", project_id=project_id)
    }
    if other_listed != set(others):
        problems.append(f"other's listing holds {sorted(other_listed)}, expected its legacy session {others}")
    upgraded = await project_db.rows(path, "chat_sessions")
    if len(upgraded) != len(legacy):
        problems.append(f"chat_sessions had {len(legacy)} rows before the upgrade, {len(upgraded)} after")
    for before, after in zip(legacy, upgraded, strict=False):
        differences = _same_row(before, after)
        if differences:
            problems.append(f"raw row id {before['id']} changed: " + "; ".join(differences))
        if after.get("pinned") not in (0, False):
            problems.append(f"raw row id {before['id']} has pinned = {after.get('pinned')!r} after the upgrade")
    problems += [
        f"after the upgrade: {p}"
        for p in await project_db.column_problems(path) + await project_db.index_problems(path)
    ]
    ctx.findings.expect(
        "MIGRATION-001",
        not problems,
        f"opening project {project_id} with the legacy database of spec/db/legacy_fixture.py: " + "; ".join(problems),
    )

    # MIGRATION-002: legacy rows read as pinned false, and can be pinned and unpinned.
    unpinned = {t: s.get("pinned") for t, s in by_id.items() if s.get("pinned") is not False}
    ctx.findings.expect("MIGRATION-002", not unpinned, f"legacy sessions do not read as pinned false: {unpinned}")
    target = "legacy-0002" if "legacy-0002" in mine else next(iter(mine))
    for method, pinned, operation in (("PUT", True, "pinSession"), ("DELETE", False, "unpinSession")):
        answer = await ctx.client.call(method, f"/sessions/{target}/pin", operation=operation, project_id=project_id)
        ctx.findings.require_status(answer, 200, "MIGRATION-002")
        body = _object(answer.body)
        shown = {s.get("thread_id"): s for s in await listing(ctx, "MIGRATION-002", project_id=project_id)}
        ctx.findings.expect(
            "MIGRATION-002",
            body.get("pinned") is pinned and shown.get(target, {}).get("pinned") is pinned,
            f"{method} /sessions/{target}/pin on a legacy session answered pinned {body.get('pinned')!r} and the "
            f"listing shows pinned {shown.get(target, {}).get('pinned')!r}, expected {pinned}",
            answer,
        )
    # One legacy session stays pinned, so that a reopening that re-runs the upgrade and resets `pinned` shows.
    kept = "legacy-0001" if "legacy-0001" in mine else target
    answer = await ctx.client.call("PUT", f"/sessions/{kept}/pin", operation="pinSession", project_id=project_id)
    ctx.findings.require_status(answer, 200, "MIGRATION-002")
    ctx.findings.expect(
        "MIGRATION-002",
        _object(answer.body).get("pinned") is True,
        f"PUT /sessions/{kept}/pin on a legacy session answered {answer.body[:300]}, expected pinned true",
        answer,
    )

    # MIGRATION-003: closing and reopening neither fails nor changes the rows.
    reference_listing = await listing(ctx, "MIGRATION-003", project_id=project_id)
    reference_rows = await project_db.rows(path, "chat_sessions")
    problems = []
    for attempt in (1, 2):
        await controller_call(ctx, "POST", f"/v3/projects/{project_id}/close", (200, 204), "MIGRATION-003")
        await controller_call(ctx, "POST", f"/v3/projects/{project_id}/open", (200, 201), "MIGRATION-003")
        now_listing = await listing(ctx, "MIGRATION-003", project_id=project_id)
        now_rows = await project_db.rows(path, "chat_sessions")
        if now_listing != reference_listing:
            problems.append(
                f"reopening #{attempt} changed main's listing: " + _diff(reference_listing, now_listing, "thread_id")
            )
        if now_rows != reference_rows:
            problems.append(
                f"reopening #{attempt} changed the raw chat_sessions rows: " + _diff(reference_rows, now_rows, "id")
            )
        problems += [f"after reopening #{attempt}: {p}" for p in await project_db.column_problems(path)]
    ctx.findings.expect("MIGRATION-003", not problems, f"project {project_id}: " + "; ".join(problems))
