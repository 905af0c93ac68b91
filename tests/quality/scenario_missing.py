"""For every check: a variant of the reference server on which the check's scenario does not happen
(tests/quality/scenario_preventers.py), and what the check must then conclude. Read by test_scenario_missing.py.

A check whose scenario is made of requests the suite sends and judges by their answers alone (an unknown
project, a missing token, a declaration) cannot be kept from happening by a server; it runs with the model
down, every turn failing, and must still judge exactly as on a sound server: `always_happens` says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LLM_DOWN = "llm-down-after-preflight"
TOOL_TURNS_FAIL = "tool-turns-fail-after-preflight"
ONE_PIECE = "stream-in-one-piece-after-preflight"


@dataclass(frozen=True)
class Missing:
    preventer: str
    blocked_by: str | None = None  # the NOT TESTABLE reason names this rule ("blocked by ID")
    reason_has: str | tuple[str, ...] = ""  # else: a phrase the NOT TESTABLE reason holds (or one of several)
    fails: frozenset[str] = field(default_factory=frozenset)  # the check's rules the preventer really breaks
    always_happens: str = ""  # the check's scenario cannot be prevented: why


def _blocked(preventer: str = LLM_DOWN, rule: str = "TESTABILITY-001") -> Missing:
    return Missing(preventer, blocked_by=rule)


def _always(why: str) -> Missing:
    return Missing(LLM_DOWN, always_happens=why)


SCENARIO_MISSING: dict[str, Missing] = {
    # The abort must reach a running turn: the stream arrives whole when the turn has ended, so every abort comes
    # after it. (A quick slow tool did not prevent it: under load an abort could land between the tool's end and the
    # next generation, in a turn still running, and ABORT-002 then rightly passed.)
    "abort.running_turn": Missing(ONE_PIECE, reason_has="the turn had ended before the abort was sent"),
    "abort.idle_session": _blocked(),
    # As abort.running_turn, for each of its turns.
    "abort.other_connection": Missing(ONE_PIECE, reason_has="the turn had ended before the abort was sent"),
    # Each needs a session of the project's owner first (a served turn), whose refusal to others it then judges.
    "access.chat_endpoints": _blocked(),
    "access.grant": _blocked(),
    "access.controller": _blocked(),
    "access.entries": _blocked(),
    "access.project_creation": _always("its scenario is projects created by a user of the check's, no model needed"),
    "access.entry_paths": _always("its scenario is entries the administrator writes, and a project read; no model"),
    # Its busy session is the owner's slow turn running: with the model down no turn runs (a user without an LLM
    # configuration is still refused for access, which needs no model).
    "access.precedence": Missing(LLM_DOWN, reason_has="the session was not busy"),
    "controller_api.answers": _always("the controller's answers are the subject; no turn is involved"),
    "controller_api.password_change": _always("its scenario is a user's password changes and log-ins; no turn"),
    # The race needs a turn running in its silence; no turn runs with the model down.
    "concurrency.busy": _blocked(),
    "concurrency.busy_new_session": _blocked(),
    "concurrency.busy_across_connections": _blocked(),
    "concurrency.parallel_sessions": _blocked(),
    "content.matches_history": _blocked(),
    "database.contract": _blocked(),
    "database.session_delete": _blocked(),
    "database.project_delete": _blocked(),
    "errors.codes": _always("each provoked error (an unknown project, a missing token, a bad body) is one request"),
    "errors.body": _blocked(),
    "errors.contract_operations": _blocked(),
    # The per-event rules are judged on the scenario streams, which need served turns.
    "events.schema": _blocked(),
    "events.session_ids": _blocked(),
    "framing.frames": _blocked(),
    "framing.headers": _always("the headers of any stream answer, an error turn's included, are the subject"),
    "grammar.order": _blocked(),
    # The heartbeat needs the fake LLM's silence inside a turn: with the model down, no turn reaches it.
    "heartbeat.sent": _blocked(),
    "heartbeat.during_tool": _blocked(TOOL_TURNS_FAIL, "TESTABILITY-003"),
    "heartbeat.declared_interval": _always("it judges the target's declaration against the contract's bounds"),
    "history.format": _blocked(),
    "history.ids": _blocked(),
    "history.limit": _blocked(),
    "inputs.validation": _blocked(),
    "inputs.boundaries": _blocked(),
    "inputs.malformed_json": _blocked(),
    "inputs.unknown_members": _blocked(),
    "inputs.temperature_override": _blocked(),
    "isolation.endpoints": _blocked(),
    "isolation.stream": _blocked(),
    "listing.per_user_and_project": _blocked(),
    "listing.order": _blocked(),
    "listing.pin": _blocked(),
    "listing.timestamps": _blocked(),
    "listing.updated_at_advances": _blocked(),
    "migrations.legacy_upgrade": _always("it opens a legacy database the suite wrote itself; no turn is involved"),
    "preconditions.token_required": _blocked(),
    "preconditions.unknown_project": _always("a request for a project that does not exist is one request"),
    "preconditions.closed_project": _always("a request for the closed project is one request"),
    "preconditions.llm_not_configured": _always("a turn of a user with no LLM configuration is refused before it"),
    "prefix.served": _always("the chat prefix answers or it does not"),
    "secrets_at_rest.scan": _blocked(),
    "sessions.create": _blocked(),
    "sessions.create_with_id": _blocked(),
    "sessions.id_validation": _blocked(),
    "sessions.rename": _blocked(),
    "sessions.never_created": _always("a session id that was never used is one request per endpoint"),
    "sessions.delete": _blocked(),
    # Each cell's session needs a served turn first (and the running cells a slow turn).
    "sessions.states": _blocked(),
    "sessions.states_running": _blocked(),
    "stats.single_turn": _blocked(),
    # With the tools failing, no tool turn is counted.
    "stats.tool_turn": _blocked(TOOL_TURNS_FAIL, "TESTABILITY-003"),
    "stats.multi_turn": _blocked(),
    "stats.usage_shapes": _blocked(),
    "stats.concurrent_sessions": _blocked(),
    "stats.error_turn": _blocked(),
    # The disconnect must cut a running turn: a turn sent whole leaves nothing to cut.
    "stats.disconnect": Missing(ONE_PIECE, reason_has="no disconnect cut it"),
    "stats.disconnect_during_tool": Missing(ONE_PIECE, reason_has="no disconnect cut it"),
    "stats.unknown_tool": _blocked(),
    "stats.declared_title_counting": _always("it judges the target's declaration"),
    "stream_errors.error_then_done": _blocked(),
    "testability.llm_config": Missing(
        LLM_DOWN,
        fails=frozenset({"TESTABILITY-001"}),
        always_happens="its scenario is the plain turn itself: a turn the model does not serve is its failure",
    ),
    "testability.user_text": _blocked(TOOL_TURNS_FAIL, "TESTABILITY-003"),
    "testability.tools_bound": Missing(
        TOOL_TURNS_FAIL,
        fails=frozenset({"TESTABILITY-003"}),
        always_happens="its scenario is the tool turn itself: a tool turn that fails is its failure",
    ),
    "titles.initial": _always("its scenario is a session whose first turn failed, which the model being down makes"),
    "titles.generated": _blocked(),
    "titles.once": _blocked(),
    "titles.sticky_after_rename": _blocked(),
    "titles.generation_fails": _blocked(),
    # The tool never starts: the turn ends in an error at the LLM's first tool call.
    "tool_calls.accumulation": _blocked(TOOL_TURNS_FAIL, "TESTABILITY-003"),
    "tool_calls.parallel": _blocked(TOOL_TURNS_FAIL, "TESTABILITY-003"),
    "tool_calls.failing_tool": _blocked(TOOL_TURNS_FAIL, "TESTABILITY-003"),
    # The channels: a channel turn the model does not serve is no scenario; its control turn is not served either.
    "channels.paths": _blocked(),
    "across_channels.one_session": _blocked(),
    "across_channels.busy": _blocked(),
    "across_channels.managed_as_sessions": _blocked(),
    "across_channels.statistics": _blocked(),
    "channels.usage": _blocked(),
    "channels.conversation": _blocked(),
    "channels.refusals": _blocked(),  # the other user's session is made by a turn first
    "channels.client_tools": _always("its scenario is requests refused before any turn, which no model is needed for"),
    "channels.heartbeat": _blocked(),
    "channels.disconnect": Missing(ONE_PIECE, reason_has="nothing was cut"),
    # With the model down, the request not streamed is answered (502) before any generation: nothing is left.
    "channels.disconnect_unstreamed": Missing(LLM_DOWN, reason_has="answered before the suite could leave"),
    # Its requests over a bound are refused without a model; those at a bound are turns, which the model's being down
    # keeps from being served (as every plain turn then).
    "channels.bounds": _blocked(),
    "channels.abort": Missing(LLM_DOWN, reason_has="never reached the fake LLM"),
    "channels.in_stream_errors": _blocked(),
    "channel_openai.chat_stream": _blocked(),
    "channel_openai.responses_stream": _blocked(),
    "channel_openai.chat_whole": _blocked(),
    "channel_openai.requests": _blocked(),
    "channel_openai.responses": _blocked(),
    "channel_openai.errors": _always("its scenario is requests refused before any turn, which no model is needed for"),
    "channel_openai.models": _always("its scenario is the model list, which no model is needed for"),
    # UI and AG-UI: every scenario turn, and its plain control on the channel, needs the model.
    "channel_ui.request": _blocked(),
    "channel_ui.stream": _blocked(),
    # The history read back is a tool turn's: with the tools failing (the plain control served), no tool turn runs.
    "channel_ui.messages": _blocked(TOOL_TURNS_FAIL, "TESTABILITY-003"),
    "channel_ag_ui.input": _blocked(),
    "channel_ag_ui.run": _blocked(),
    # An aborted turn's ending needs a turn that reached the model and was stopped: with the model down, none does.
    "channel_ui.aborted": Missing(LLM_DOWN, reason_has="never reached the fake LLM"),
    "channel_ag_ui.aborted": Missing(LLM_DOWN, reason_has="never reached the fake LLM"),
    "channel_openai.aborted": Missing(LLM_DOWN, reason_has="never reached the fake LLM"),
    "channel_openai.models_access": _always("its scenario is the model list asked by a user without project access"),
}
