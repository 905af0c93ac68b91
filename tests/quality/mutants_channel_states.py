"""Mutants of the channels in the states issue 31 named beyond the first scenarios (spec/behaviour.md: OPENAI-*,
CHANNEL-004, -005, -010, UI-004): a stream without `include_usage`, `stream_options` without `stream`, the error
`type` of each status, a deleted or another user's conversation named again, messages after the user's, a turn
answered whole whose text precedes a tool call, an in-stream error's message, and a conversation read back past the
history's default limit. Each is a break an implementer could make, patches reference_server.channels
(or what a channel turn reaches) in the mutant's process only, names the conformance areas its run needs (`only`),
and fails exactly its targets and consequences (tests/quality/test_channel_mutants.py). Registered in
tests/quality/mutants.py's MUTANTS by importing this module.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .mutant_kit import mutant

OPENAI, SHARED = "channel_openai", "channels"


def _channel_modules() -> list[Any]:
    from reference_server.channels import ag_ui, openai_chat, openai_responses, ui_stream

    return [openai_chat, openai_responses, ui_stream, ag_ui]


# --- OpenAI Chat Completions -----------------------------------------------------------------------------------


@mutant(
    "openai-usage-chunk-unasked",
    "a streamed chat completion ends with the usage chunk (and `usage: null` on every chunk) although the request "
    "did not ask for `stream_options.include_usage`",
    {"OPENAI-PROTO-004"},  # "will only be present when you set include_usage" (ChatCompletionChunk.usage)
    only=(OPENAI,),
)
def _openai_usage_chunk_unasked() -> None:
    import reference_server.channels.openai_chat as openai_chat

    original = openai_chat.chat_request

    def chat_request(body: Any):
        wanted, options = original(body)
        return wanted, dataclasses.replace(options, include_usage=options.stream)

    openai_chat.chat_request = chat_request


@mutant(
    "openai-stream-options-without-stream-refused",
    "a chat completion request with `stream_options` and no `stream` is refused 400, as OpenAI's API refuses it, "
    "where the contract takes both members and answers the turn whole",
    {"OPENAI-001"},  # ours: the API's own 400 is a rule for its clients ("Only set this when you set stream: true")
    only=(OPENAI,),
)
def _openai_stream_options_without_stream_refused() -> None:
    import reference_server.channels.openai_chat as openai_chat
    from reference_server.errors import ApiError

    original = openai_chat.chat_request

    def chat_request(body: Any):
        if isinstance(body, dict) and body.get("stream_options") is not None and not body.get("stream"):
            message = "The 'stream_options' parameter is only allowed when 'stream' is enabled."
            raise ApiError(400, "invalid_value", message, details={"param": "stream_options"})
        return original(body)

    openai_chat.chat_request = chat_request


@mutant(
    "openai-error-types-flattened",
    "the OpenAI channel types every refusal but a 401 `invalid_request_error`: a 403 is no `permission_error`, a "
    "409 no `conflict_error`, a 502 no `server_error`",
    {"OPENAI-004", "CHANNEL-005"},  # the type its status gives; CHANNEL-005: every refusal in OPENAI-004's shape
    only=(OPENAI, SHARED),
)
def _openai_error_types_flattened() -> None:
    import reference_server.channels.openai_common as openai_common

    openai_common.error_type = lambda status: "authentication_error" if status == 401 else "invalid_request_error"


@mutant(
    "openai-whole-text-before-tool-lost",
    "a chat completion answered without `stream` holds only the text after the turn's last tool call: the text the "
    "model wrote before calling a tool is lost",
    {"OPENAI-003"},  # the message's content is the turn's whole text
    only=(OPENAI,),
)
def _openai_whole_text_before_tool_lost() -> None:
    import reference_server.channels.openai_chat as openai_chat

    original = openai_chat.run_to_end

    async def run_to_end(channel_turn, request):
        events = await original(channel_turn, request)
        if events is None:  # the client left
            return None
        tools = [i for i, event in enumerate(events) if event["type"] in ("tool_call", "tool_start", "tool_end")]
        last = tools[-1] if tools else -1
        return [e for i, e in enumerate(events) if e["type"] != "content" or i > last]

    openai_chat.run_to_end = run_to_end


@mutant(
    "openai-whole-answer-stops-at-a-call",
    "a chat completion answered without `stream` is the model's first message: when it calls a tool, the text "
    "before the call is answered and the call never runs",
    {"OPENAI-003"},  # the message's content is the turn's whole text, the turn run to its end
    only=(OPENAI,),
)
def _openai_whole_answer_stops_at_a_call() -> None:
    import reference_server.channels.openai_chat as openai_chat
    from reference_server.turns.core import contract_events

    async def run_to_end(channel_turn, _request):
        events = []
        async for batch in contract_events(channel_turn):  # leaving it stops the turn, as a client gone away
            for event in batch:
                if event["type"] == "tool_call":
                    return events
                if event["type"] != "heartbeat":
                    events.append(event)
        return events

    openai_chat.run_to_end = run_to_end


# --- OpenAI Responses ----------------------------------------------------------------------------------------


@mutant(
    "responses-previous-response-of-another-user",
    "the Responses endpoint looks a `previous_response_id`'s session up by its id alone: another user's response id "
    "continues its owner's session",
    {"OPENAI-005"},  # previous_response_id: an earlier response of the caller, anything else 404
    only=(OPENAI,),
)
def _responses_previous_response_of_another_user() -> None:
    import reference_server.channels.openai_responses as openai_responses
    from reference_server.prelude import opened_project

    original = openai_responses.start_channel_turn

    async def start_channel_turn(project_id, request, caller, wanted):
        if wanted.must_exist:
            service = await opened_project(project_id, request, caller)
            session = await service.repo.get(wanted.session_id)
            if session is not None and session.user_id != caller.user.user_id:  # taken as the owner's request
                caller = dataclasses.replace(caller, user=dataclasses.replace(caller.user, user_id=session.user_id))
        return await original(project_id, request, caller, wanted)

    openai_responses.start_channel_turn = start_channel_turn


# --- Every channel (CHANNEL-004) ----------------------------------------------------------------------------


@mutant(
    "channel-deleted-conversation-continued",
    "the channels remember every session id they served: a deleted session named with the client's copy of the "
    "conversation is taken as a conversation the server has (a new turn runs), not refused `unknown_conversation`",
    {"CHANNEL-004"},
    only=(SHARED,),
)
def _channel_deleted_conversation_continued() -> None:
    from reference_server.turns import core

    original = core.start_channel_turn
    served: set[str] = set()

    async def start_channel_turn(project_id, request, caller, wanted):
        if wanted.carries_history and wanted.session_id in served:
            wanted = dataclasses.replace(wanted, carries_history=False)
        channel_turn = await original(project_id, request, caller, wanted)
        served.add(channel_turn.session_id)
        return channel_turn

    for module in _channel_modules():
        module.start_channel_turn = start_channel_turn


@mutant(
    "channel-messages-after-user-dropped",
    "the turn's message is the request's last user message: messages after it (an assistant's) are dropped, not "
    "refused `validation_error`",
    {"CHANNEL-004"},  # the turn's message is the text of the request's last message, which is a user message
    only=(SHARED,),
)
def _channel_messages_after_user_dropped() -> None:
    from reference_server.channels import ag_ui, openai_chat, openai_responses, ui_stream

    def upto_last_user(messages: list[Any], role_of) -> list[Any]:
        users = [i for i, message in enumerate(messages) if role_of(message) == "user"]
        return messages[: users[-1] + 1] if users else messages

    for module in (openai_chat, openai_responses):
        original_split = module.split_conversation

        def split_conversation(messages, param, part_types, _original=original_split):
            role = lambda m: m.get("role") if isinstance(m, dict) else None  # noqa: E731
            return _original(upto_last_user(messages, role), param, part_types)

        module.split_conversation = split_conversation
    for module in (ui_stream, ag_ui):
        original_request = module.turn_request

        def turn_request(body, _original=original_request):
            kept = upto_last_user(list(body.messages), lambda m: m.role)
            return _original(body.model_copy(update={"messages": kept}))

        module.turn_request = turn_request


@mutant(
    "channel-error-message-own",
    "the channels word a turn's in-stream error themselves (`The model failed`), not with the contract error's message",
    {"CHANNEL-010"},  # as each mapping says: response.failed's message, the error chunk's errorText, RUN_ERROR's
    only=(SHARED,),
)
def _channel_error_message_own() -> None:
    from reference_server.turns import sse

    original = sse.stream_response

    def stream_response(channel_turn, translator, headers):
        feed = translator.feed

        def worded(batch):
            return feed([{**e, "error": "The model failed"} if e["type"] == "error" else e for e in batch])

        translator.feed = worded
        return original(channel_turn, translator, headers)

    for module in _channel_modules():
        module.stream_response = stream_response


@mutant(
    "ui-messages-default-limit",
    "the UI messages endpoint reads the session's history with the history endpoint's default limit (100 messages), "
    "not its newest 1000: a longer conversation reads back cut",
    {"UI-004"},
    only=(SHARED,),  # channels.conversation reads a turn of 103 history messages back
)
def _ui_messages_default_limit() -> None:
    import reference_server.channels.ui_stream as ui_stream

    ui_stream.HISTORY_LIMIT_RANGE = (ui_stream.HISTORY_LIMIT_RANGE[0], 100)
