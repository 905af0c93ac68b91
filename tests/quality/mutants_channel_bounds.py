"""Mutants of the channels' request bounds (CHANNEL-011, spec/channels/request-bounds.json): each lets one bound go,
or counts it the way an implementer could get wrong, on the channels that carry it. Judged by channels.bounds.
Registered in MUTANTS by tests/quality/mutants.py."""

from __future__ import annotations

from .mutant_kit import mutant

SHARED = ("channels",)


def _unbounded_instructions(parts: list[str], _param: str) -> str | None:
    return "\n\n".join(part for part in parts if part) or None


def _message_arrays(most: int | None) -> None:
    """Every channel's message array bounded at `most` messages (None: not at all), in place of the contract's."""
    from typing import Annotated

    from pydantic import Field

    from reference_server.channels import ag_ui, openai_common, ui_stream

    openai_common.CHANNEL_MESSAGES_MAX_ITEMS = most if most is not None else 10**9

    class UiChatRequest(ui_stream.UiChatRequest):
        messages: Annotated[list[ui_stream.UiMessageIn], Field(min_length=1, max_length=most)]

    class RunAgentInput(ag_ui.RunAgentInput):
        messages: Annotated[list[ag_ui.AgUiMessage], Field(max_length=most)]

    ui_stream.UiChatRequest, ag_ui.RunAgentInput = UiChatRequest, RunAgentInput  # the routes read them by name


@mutant(
    "channel-messages-unbounded",
    "a channel request may carry any number of messages: 1001 are served on every channel",
    {"CHANNEL-011"},
    only=SHARED,
)
def _channel_messages_unbounded() -> None:
    _message_arrays(None)


@mutant(
    "channel-instructions-unbounded",
    "the OpenAI channel adds instructions of any size to the turn's system prompt",
    {"CHANNEL-011"},
    only=SHARED,
)
def _channel_instructions_unbounded() -> None:
    from reference_server.channels import openai_chat, openai_responses

    openai_chat.joined_instructions = _unbounded_instructions
    openai_responses.joined_instructions = _unbounded_instructions


@mutant(
    "channel-instructions-bounded-one-by-one",
    "the OpenAI channel bounds each instruction alone: two system messages that together pass the bound are served",
    {"CHANNEL-011"},
    only=SHARED,
)
def _channel_instructions_one_by_one() -> None:
    from reference_server.channels import openai_chat, openai_common, openai_responses

    def each_alone(parts: list[str], param: str) -> str | None:
        for part in parts:
            openai_common.joined_instructions([part], param)
        return _unbounded_instructions(parts, param)

    openai_chat.joined_instructions = each_alone
    openai_responses.joined_instructions = each_alone


@mutant(
    "ag-ui-run-id-unbounded",
    "an AG-UI run id of any length is taken and echoed in RUN_STARTED and RUN_FINISHED",
    {"CHANNEL-011"},
    only=SHARED,
)
def _ag_ui_run_id_unbounded() -> None:
    from typing import Annotated

    from pydantic import Field

    from reference_server.channels import ag_ui

    class RunAgentInput(ag_ui.RunAgentInput):
        run_id: Annotated[str, Field(alias="runId")]
        parent_run_id: Annotated[str | None, Field(alias="parentRunId")] = None

    ag_ui.RunAgentInput = RunAgentInput


@mutant(
    "channel-bound-off-by-one",
    "the message arrays' bound is exclusive: a request of exactly 1000 messages is refused",
    {"CHANNEL-011"},
    only=SHARED,
)
def _channel_bound_off_by_one() -> None:
    from gns3_copilot_generated.constants import CHANNEL_MESSAGES_MAX_ITEMS

    _message_arrays(CHANNEL_MESSAGES_MAX_ITEMS - 1)


@mutant(
    "developer-messages-not-counted",
    "the OpenAI channel bounds only the system messages' text: developer messages go to the model beside them, "
    "uncounted, so instructions over the bound are served",
    {"CHANNEL-011"},
    only=SHARED,
)
def _developer_messages_not_counted() -> None:
    from reference_server.channels import openai_chat, openai_common, openai_responses

    def split_conversation(messages, param, part_types):
        developer = [m for m in messages if isinstance(m, dict) and m.get("role") == "developer"]
        rest = [m for m in messages if m not in developer]
        message, parts, earlier = openai_common.split_conversation(rest, param, part_types)
        openai_common.joined_instructions(parts, param)  # the system messages are bounded, alone
        return message, [*parts, *(m["content"] for m in developer if isinstance(m.get("content"), str))], earlier

    def joined(parts, _param):
        return "\n\n".join(part for part in parts if part) or None

    for module in (openai_chat, openai_responses):
        module.split_conversation = split_conversation
        module.joined_instructions = joined
