"""Mutants of the channels' aborts, disconnects and project access (issue 31): an abort or a disconnect (streamed or
not) that stops nothing, each protocol's aborted turn ended the wrong way (UI without `abort`, AG-UI without the
cancelled outcome, OpenAI with another finish reason), a call cut short left open (UI, AG-UI), and channel endpoints
that let in a user without access to the project. Each patches the reference server in the mutant's process only and
names the areas its run needs (`only`). Registered in tests/quality/mutants.py's MUTANTS by importing this module.
"""

from __future__ import annotations

from .mutant_kit import mutant

OPENAI, UI, AG_UI, SHARED = "channel_openai", "channel_ui", "channel_ag_ui", "channels"


@mutant(
    "channel-abort-stops-nothing",
    "the abort endpoint answers `aborted: false` and stops nothing: a channel turn runs on to its end",
    {"CHANNEL-009"},
    only=(SHARED,),
)
def _channel_abort_stops_nothing() -> None:
    from reference_server.agent.service import AgentService

    async def abort(self, session_id):
        return False

    AgentService.abort = abort


@mutant(
    "channel-disconnect-runs-on",
    "a channel turn whose client went away is not stopped: it runs its tools and generations to the end",
    {"CHANNEL-009"},
    only=(SHARED,),
)
def _channel_disconnect_runs_on() -> None:
    import reference_server.turns.core as core
    import reference_server.turns.sse as sse

    def contract_events(channel_turn):
        async def batches():
            async for batch in channel_turn.turn.stream():
                yield batch

        return batches()

    core.contract_events = sse.contract_events = contract_events


@mutant(
    "unstreamed-disconnect-runs-on",
    "an OpenAI turn asked not to stream runs to its end after its client went away (the stream's disconnect stops "
    "it): a client that times out and retries leaves whole turns running behind it",
    {"CHANNEL-009"},
    only=(SHARED,),
)
def _unstreamed_disconnect_runs_on() -> None:
    from reference_server.channels import openai_chat, openai_responses
    from reference_server.turns import core

    async def run_to_end(channel_turn, _request):
        return await core._collected(channel_turn)  # never watches the client

    openai_chat.run_to_end = openai_responses.run_to_end = run_to_end


@mutant(
    "ui-abort-without-abort-chunk",
    "an aborted UI message stream ends with `finish-step`, `finish` and `[DONE]` but sends no `abort` chunk",
    {"UI-003"},
    only=(UI,),
)
def _ui_abort_without_abort_chunk() -> None:
    from reference_server.channels.ui_stream import UiMessageStream

    original = UiMessageStream._done
    UiMessageStream._done = lambda self: [c for c in original(self) if c.get("type") != "abort"]


@mutant(
    "ui-cut-call-left-open",
    "a tool call whose arguments were still streaming when the turn stopped is never closed (no `tool-input-error`)",
    {"UI-003"},
    only=(UI,),
)
def _ui_cut_call_left_open() -> None:
    from reference_server.channels.ui_stream import UiMessageStream

    original = UiMessageStream._close_parts
    UiMessageStream._close_parts = lambda self: [c for c in original(self) if c.get("type") != "tool-input-error"]


@mutant(
    "agui-abort-outcome-absent",
    "an aborted AG-UI run ends with RUN_FINISHED without `outcome` (which reads as a success), not cancelled",
    {"AGUI-003"},
    # a run that says it completed, with a call cut short (arguments not JSON, no result): AGUI-002's call broken
    {"AGUI-002"},
    only=(AG_UI,),
)
def _agui_abort_outcome_absent() -> None:
    from reference_server.channels.ag_ui import AgUiStream

    original = AgUiStream._done

    def done(self):
        events = original(self)
        for event in events:
            event.pop("outcome", None)
        return events

    AgUiStream._done = done


@mutant(
    "agui-cut-call-left-open",
    "a tool call whose arguments were still streaming when the run was stopped is never ended: RUN_FINISHED comes "
    "with the call open",
    {"AGUI-PROTO-005"},  # verifyEvents: "Cannot send 'RUN_FINISHED' while tool calls are still active"
    only=(AG_UI,),
)
def _agui_cut_call_left_open() -> None:
    from reference_server.channels.ag_ui import AgUiStream

    original = AgUiStream._done
    AgUiStream._done = lambda self: [e for e in original(self) if e.get("type") != "TOOL_CALL_END"]


@mutant(
    "openai-abort-finish-length",
    'an aborted chat completion ends with `finish_reason: "length"`, not `stop`',
    {"OPENAI-002"},
    only=(OPENAI,),
)
def _openai_abort_finish_length() -> None:
    import reference_server.channels.openai_chat as openai_chat

    original = openai_chat.stream_response

    def stream_response(channel_turn, translator, headers):
        feed = translator.feed

        def fed(batch):
            text = feed(batch)
            if channel_turn.turn.stop_reason == "aborted":
                text = text.replace('"finish_reason":"stop"', '"finish_reason":"length"')
            return text

        translator.feed = fed
        return original(channel_turn, translator, headers)

    openai_chat.stream_response = stream_response


def _channel_path(path: str) -> bool:
    return any(f"/chat{part}" in path for part in ("/openai/", "/ui", "/ag-ui"))


@mutant(
    "channels-without-project-access",
    "the channel endpoints (turns, the model list, the UI messages) do not ask for access to the project",
    {"CHANNEL-005", "CHANNEL-002", "OPENAI-007", "UI-004"},
    only=(SHARED, UI, OPENAI),
)
def _channels_without_project_access() -> None:
    import reference_server.prelude as prelude

    original = prelude.require_project_privilege

    async def require_project_privilege(request, caller, project_id, privilege):
        if not _channel_path(request.url.path):
            await original(request, caller, project_id, privilege)

    prelude.require_project_privilege = require_project_privilege


@mutant(
    "openai-models-without-project-access",
    "GET .../openai/v1/models answers the model list to a user without access to the project",
    {"OPENAI-007"},
    only=(OPENAI,),
)
def _openai_models_without_project_access() -> None:
    import reference_server.prelude as prelude

    original = prelude.require_project_privilege

    async def require_project_privilege(request, caller, project_id, privilege):
        if not request.url.path.endswith("/openai/v1/models"):
            await original(request, caller, project_id, privilege)

    prelude.require_project_privilege = require_project_privilege
