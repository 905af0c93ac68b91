"""The OpenAI channel in the states issue 31 named (a part of the area channel_openai, conformance.checks.PARTS).

The ending of an aborted turn: a chat completion whose turn was aborted during the slow tool, or while a call's
arguments still streamed, ends as any other, one finish chunk with `finish_reason: "stop"` (OPENAI-002, ours: openai
3.57.0's finish reasons have none for a turn the server stopped), and the choice is finished once (OPENAI-PROTO-003,
the protocol's); a Response ends with `response.completed`, the turn having not failed (OPENAI-006, ours). The model
list asked by a user without access to the project: refused 403 `project_access_denied` (OPENAI-007 lists the models
for a caller with project access). Both need the GNS3 chat API (its abort, its projects): a server of the protocol
alone has neither state."""

from __future__ import annotations

from conformance.channels.aborts import judge_endings
from conformance.channels.client import ChannelClient
from conformance.channels.endpoints import STREAMING
from conformance.checks import check
from conformance.checks.context import CheckContext
from conformance.checks.support_channels import endpoint
from conformance.errors import NotTestable

RACED = ("OPENAI-002", "OPENAI-006")  # a turn the abort did not reach running: judged again with the server alone


@check("channel_openai.aborted", slow=True, raced=RACED, needs=("channel_gns3", "abort"), slow_tool=True)
async def aborted(ctx: CheckContext) -> None:
    await judge_endings(ctx, endpoint(ctx, "openai_chat"))
    try:
        responses = endpoint(ctx, "openai_responses")
    except NotTestable:
        return  # a target without Responses: OPENAI-006 is N/A there (its capability)
    await judge_endings(ctx, responses)


@check("channel_openai.models_access", needs=("channel_gns3",))
async def models_access(ctx: CheckContext) -> None:
    if "stranger" not in ctx.env.users or ctx.env.controller is None:
        raise NotTestable("no access_control declared: no user without access to the project")
    if "models" not in ctx.target.openai_endpoints:
        raise NotTestable("the target's OpenAI channel serves no model list")  # OPENAI-007 is N/A there
    got = await ChannelClient(ctx).get("openai", "/models", user="stranger")
    ok = (got.status, STREAMING["openai_chat"].refusal_code(got.body)) == (403, "project_access_denied")
    ctx.findings.expect("OPENAI-007", ok, f"GET /models by a user without project access: {got.describe()}", got)
