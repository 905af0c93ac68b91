"""The OpenAI channel's endings of an aborted turn (a part of the area channel_openai, conformance.checks.PARTS): a
chat completion whose turn was aborted during the slow tool, or while a call's arguments still streamed, ends as any
other, one finish chunk with `finish_reason: "stop"` (OPENAI-002, ours: openai 3.57.0's finish reasons have none for
a turn the server stopped), and the choice is finished once (OPENAI-PROTO-003, the protocol's); a Response ends with
`response.completed`, the turn having not failed (OPENAI-006, ours)."""

from __future__ import annotations

from conformance.channels.aborts import judge_endings
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
