"""The access entries beyond a grant on the project (ACCESS-003, ACCESS-004), written for a user of the check's own:
grants on parent paths with and without propagation, denying entries (of the granted role, propagating or not,
of the role that forbids all, on the project and on /projects) and a grant on the project under a deny on /projects,
judged on the chat endpoints, the controller's
project endpoints and every channel endpoint the target declares: one cheap turn each per state, with the access
the chat endpoints give (CHANNEL-002) and a refusal in the channel's error body (CHANNEL-005). The shared steps
(a user of the check's own, entries written and removed, refusals everywhere) are access.py's."""

from __future__ import annotations

import asyncio
import secrets

from conformance.channels.client import ChannelClient
from conformance.channels.endpoints import ChannelAnswer, Endpoint, declared
from conformance.checks import check
from conformance.checks.access import (
    judge_controller_refusals,
    own_user,
    refused_everywhere,
    remove_entries,
    require_stranger,
    role_named,
    uses_every_endpoint,
    write_entry,
)
from conformance.checks.context import CheckContext
from conformance.checks.support import setup_turn
from conformance.checks.support_channels import judge_refusal, new_session, refused_before_stream
from conformance.checks.turns import missed, post_turn, run_tag


@check("access.entries")
async def entries_on_parent_paths_and_denying_entries(ctx: CheckContext) -> None:
    """ACCESS-003 and ACCESS-004 for the entries beyond a grant on the project, written for a user of the check's
    own: a grant on the parent path /projects reaches the project only when it propagates, and a denying entry on
    the project (of the granted role, propagating or not, or of the role that forbids all,
    access_control.no_access_role, denying or allowing) overrides the parent's grant on the chat and the controller
    alike; a deny on /projects that does not propagate refuses the project under a grant on / (as gns3-server), and
    a grant on the project stands under it. Each state is judged on the channel endpoints too, one turn each: the
    same access as the chat's (CHANNEL-002), a refusal in the channel's error body (CHANNEL-005)."""
    require_stranger(ctx)
    access = ctx.target.data.get("access_control") or {}
    role_name, no_access_name = access.get("role", "User"), access.get("no_access_role")
    role = await ctx.env.controller.role_id(role_name)
    no_access = await role_named(ctx, no_access_name) if no_access_name else None
    await setup_turn(ctx, ctx.session_id("owned"))  # the project is in use: its owner has a session there
    user = await own_user(ctx, "entries", with_llm=True)
    project = f"/projects/{ctx.env.project_id}"
    # Refused before any entry: whatever the server remembers of the user's entries, it saw them none first.
    await refused_everywhere(ctx, "ACCESS-003", user, ctx.session_id("before"), "no entry yet")
    parent = ("/projects", role, True, True)  # (path, role, propagate, allowed)
    states = [
        (f"{role_name} on /projects, propagating", [parent], True),
        (f"{role_name} on /projects, not propagating", [("/projects", role, False, True)], False),
        (
            f"{role_name} on /projects and a deny of {role_name} on the project",
            [parent, (project, role, True, False)],
            False,
        ),
        (
            f"{role_name} on /projects and a deny of {role_name} on the project, not propagating",
            [parent, (project, role, False, False)],
            False,
        ),
        (
            f"{role_name} on /, propagating, and a deny of {role_name} on /projects, not propagating",
            [("/", role, True, True), ("/projects", role, False, False)],
            False,
        ),
        (  # the most specific level decides: the project's own grant stands under the parent's deny
            f"{role_name} on the project and a deny of {role_name} on /projects, not propagating",
            [(project, role, True, True), ("/projects", role, False, False)],
            True,
        ),
    ]
    if no_access is not None:
        states += [
            (
                f"{role_name} on /projects and a deny of {no_access_name} on the project",
                [parent, (project, no_access, True, False)],
                False,
            ),
            (
                f"{role_name} on /projects and {no_access_name} allowed on the project",
                [parent, (project, no_access, True, True)],
                False,
            ),
        ]
    for index, (what, entries, granted) in enumerate(states):
        made = [
            await write_entry(ctx, "ACCESS-003", user, *entry[:2], propagate=entry[2], allowed=entry[3])
            for entry in entries
        ]
        try:
            label = ctx.session_id(f"state-{index}")
            judge = uses_every_endpoint if granted else refused_everywhere
            await judge(ctx, "ACCESS-003", user, label, what)
            await judge_channels(ctx, user, f"s{index}", what, granted=granted)
        finally:
            await remove_entries(ctx, made)
    # ACCESS-004: the controller's project endpoints obey the deny too, on an opened and a closed project.
    closed = await ctx.env.controller.create_project(f"conformance-access-denied-{secrets.token_hex(3)}")
    await ctx.env.controller.close_project(closed)
    denials = [(role_name, role)] + ([(no_access_name, no_access)] if no_access is not None else [])
    for name, denying in denials:
        made = [await write_entry(ctx, "ACCESS-004", user, *parent[:2], propagate=True, allowed=True)]
        for project_id in (ctx.env.project_id, closed):
            made.append(
                await write_entry(
                    ctx, "ACCESS-004", user, f"/projects/{project_id}", denying, propagate=True, allowed=False
                )
            )
        try:
            who = f"a user with {role_name} on /projects and a deny of {name} on the project"
            await judge_controller_refusals(ctx, user, ctx.env.project_id, closed, who)
        finally:
            await remove_entries(ctx, made)
    if no_access is None:
        why = (
            f"the target lists no role named {no_access_name!r}"
            if no_access_name
            else "the target file declares no access_control.no_access_role"
        )
        for requirement in ("ACCESS-003", "ACCESS-004"):
            ctx.findings.not_testable(requirement, f"{why}: entries of the role that forbids all were not written")


async def judge_channels(ctx: CheckContext, user: str, label: str, what: str, *, granted: bool) -> None:
    """One cheap turn (cs-plain) of `user` on each streaming endpoint of the channels the target declares (none
    declared: nothing is judged, the channels' rules being N/A), with the access the chat endpoints were just judged
    to give (CHANNEL-002): served when `granted`, else refused before any stream with 403 `project_access_denied` in
    the channel's error body (CHANNEL-005: OpenAI's, typed `permission_error`, on the OpenAI channel)."""
    chosen = declared(ctx.target.channels)
    if granted:
        turns = await asyncio.gather(
            *(
                post_turn(ctx, e, "cs-plain", label=f"{label}-{e.name}", session_id=new_session(e), user=user)
                for e in chosen
            )
        )
        for turn in turns:
            why = await missed(ctx, turn)
            where = f"{turn.answer.endpoint.name}, a user with {what} (served on the chat endpoints)"
            ctx.findings.expect("CHANNEL-002", why is None, f"{where}: {why}", turn.answer.exchange)
        return
    answers = await asyncio.gather(*(_refused_turn(ctx, e, user, f"{label}-{e.name}") for e in chosen))
    for answer in answers:
        ctx.findings.expect(
            "CHANNEL-002",
            refused_before_stream(answer) and answer.status == 403,
            f"{answer.endpoint.name}, a user with {what}: refused 403 on every chat endpoint, expected the same "
            f"before any stream; {answer.describe()}",
            answer.exchange,
        )
        judge_refusal(ctx, "CHANNEL-005", answer, 403, "project_access_denied", f"a user with {what}")


async def _refused_turn(ctx: CheckContext, chosen: Endpoint, user: str, label: str) -> ChannelAnswer:
    channel = ChannelClient(ctx)
    body = channel.request(chosen, "cs-plain", session_id=chosen.new_session_id(), run=run_tag(ctx, label))
    return await channel.post(chosen, body, user=user)
