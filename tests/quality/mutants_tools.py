"""Mutants of what happens while, and after, a tool runs: the states of conformance/coverage.yaml that need a tool
of a kind (one that raises, one that is slow, one the server does not have). Each breaks the reference server in
that state only. Registered in tests/quality/mutants.py's MUTANTS by importing this module.
"""

from __future__ import annotations

from .mutant_kit import _transform_stream, mutant


@mutant(
    "raising-tool-never-ends",
    "a tool that raises (not one that returns an error) gets a `tool_start` and no `tool_end`, as on gns3-server, "
    "whose event converter knows on_tool_start and on_tool_end but not on_tool_error",
    {"TOOLCALL-008"},
    {"TOOLCALL-005"},  # a started call that never ends, in every stream that holds one
)
def _raising_tool_never_ends() -> None:
    _transform_stream(
        lambda batch, _: [e for e in batch if not (e["type"] == "tool_end" and e["tool_name"] == "raising_tool")]
    )


@mutant(
    "no-stats-after-disconnect-in-tool",
    "a turn whose client disconnects while a tool runs counts none of its generations and tokens",
    {"STATS-005"},
)
def _no_stats_after_disconnect_in_tool() -> None:
    from reference_server.agent.service import AgentService
    from reference_server.agent.turn import Turn

    stop, finish = Turn.stop, AgentService._finish_turn

    def stopped(self, reason):
        if reason == "client disconnected" and self._running_tools:
            self.cut_in_tool = True
        stop(self, reason)

    async def finishing(self, turn):
        if getattr(turn, "cut_in_tool", False):
            turn.stats.llm_calls = turn.stats.input_tokens = turn.stats.output_tokens = 0
        await finish(self, turn)

    Turn.stop, AgentService._finish_turn = stopped, finishing


@mutant(
    "no-heartbeat-while-a-tool-runs",
    "no heartbeat between a tool's `tool_start` and its `tool_end`, however long the tool runs",
    {"HEARTBEAT-001"},
)
def _no_heartbeat_while_a_tool_runs() -> None:
    def change(batch, state):
        kept = []
        for event in batch:
            if event["type"] == "tool_start":
                state[event["tool_call_id"]] = True
            elif event["type"] == "tool_end":
                state.pop(event.get("tool_call_id"), None)
            elif event["type"] == "heartbeat" and state:
                continue
            kept.append(event)
        return kept

    _transform_stream(change)


@mutant(
    "llm-calls-after-unknown-tool",
    "after the model names a tool the server does not have, the generation that follows the failed call is not "
    "counted in llm_calls_count",
    {"STATS-002"},
)
def _llm_calls_after_unknown_tool() -> None:
    from reference_server.agent.stream_translator import StreamTranslator

    translate = StreamTranslator.translate

    def translating(self, raw):
        events = translate(self, raw)
        for event in events:
            if event["type"] == "tool_end" and "unknown tool" in event["tool_output"]:
                self.stats.llm_calls -= 1  # the next generation's count, taken back
        return events

    StreamTranslator.translate = translating
