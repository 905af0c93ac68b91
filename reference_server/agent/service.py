"""AgentService: the chat data and the agent of one project, over the store that keeps it (stores/)."""

from __future__ import annotations

import asyncio
import logging
import weakref
from dataclasses import dataclass
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from gns3_copilot_generated.api.chat_session import ChatSession
from gns3_copilot_generated.api.conversation_history import ConversationHistory
from reference_server.storage_faults import project_database

from .context import set_project_tools
from .converters import history_to_openai
from .graph import TITLE_NODE, build_graph, stamp
from .llm_factory import ChatModelFactory
from .sessions_repo import NEW_TITLE
from .stores.base import ChatStore, TurnTotals
from .stores.sqlite import database_path
from .stream_translator import GraphEvents, StreamTranslator
from .tools import make_tools
from .turn import CANCELLED_TOOL_OUTPUT, Turn

log = logging.getLogger(__name__)

# What answers the user message of a turn cut by a crash, so that the history never holds `user, user`.
INTERRUPTED_ANSWER = "(No answer: the server stopped before this turn finished.)"


@dataclass(frozen=True)
class NewSession:
    """A session that its first turn creates (SESSION-002): its row is written with the turn's in-flight mark."""

    thread_id: str
    user_id: str
    title: str = NEW_TITLE  # as its row is made
    pinned: bool = False


class SessionExists(Exception):
    """A NewSession's id names a session made since the caller looked (another worker, or a finished turn)."""


class AgentService:
    def __init__(
        self,
        project_id: str,
        project_dir: Path,
        models: ChatModelFactory,
        store: ChatStore,
        *,
        heartbeat_interval: float,
        title_counts_in_stats: bool,
    ) -> None:
        self.project_id = project_id
        self.project_dir = project_dir
        self.models = models
        self.store = store
        self.heartbeat_interval = heartbeat_interval
        self.title_counts_in_stats = title_counts_in_stats
        self.running: dict[str, Turn | None] = {}  # None: reserved, the turn is starting
        self._aborted_while_starting: set[str] = set()

    async def open(self) -> None:
        self.storage = await self.store.open_project(self.project_id, self.project_dir)
        self.repo, self.saver, self.leases = self.storage.repo, self.storage.saver, self.storage.leases
        try:
            self.tools = {item.name: item for item in make_tools(self.project_dir)}
            self.graph = _graph(self.models, self.saver, list(self.tools.values()), shared=self.store.shared)
            for session_id, _ in await self.repo.turns_in_flight():  # turns cut by a crash
                # Only a turn no other worker is running: a shared store's turns in flight include live ones.
                if not await self.claim(session_id):
                    continue
                try:
                    # Read again under the lease: the worker that ran the turn may have finished and counted it
                    # between the first read and the claim (counted twice, seen by bench/ at 4 workers).
                    for _, user_message_id in await self.repo.turns_in_flight(session_id):
                        await self.recover(session_id, user_message_id)
                except Exception:  # e.g. a full disk: tried again at the session's next turn or start-up
                    log.exception("project %s, session %s: recovering a cut turn failed", self.project_id, session_id)
                finally:
                    await self.release(session_id)
        except BaseException:
            await self.storage.close()
            raise

    async def close(self) -> None:
        turns = self._turns()
        for turn in turns:
            turn.stop("project closed")
        await asyncio.gather(*(turn.finished.wait() for turn in turns))
        await self.storage.close()

    # --- turns ------------------------------------------------------------------------------------------

    def is_busy(self, session_id: str) -> bool:
        """A turn of the session runs in this process (CONCURRENCY-002); busy() also asks the other workers."""
        return session_id in self.running

    async def busy(self, session_id: str) -> bool:
        return self.is_busy(session_id) or await self.leases.held_elsewhere(session_id)

    async def claim(self, session_id: str) -> bool:
        """Make the session busy, or say it is busy already (CONCURRENCY-001). This process's mark is set in the
        event-loop step that checked it, before any await; then the lease tells whether another worker runs it."""
        if self.is_busy(session_id):
            return False
        self.running[session_id] = None  # reserved; start_turn replaces it with the turn
        try:
            if await self.leases.acquire(session_id):
                return True
        except BaseException:
            self._unreserve(session_id)
            raise
        self._unreserve(session_id)
        return False

    def _unreserve(self, session_id: str) -> None:
        if self.running.get(session_id) is None:
            self.running.pop(session_id, None)
            self._aborted_while_starting.discard(session_id)

    async def release(self, session_id: str) -> None:
        """Give up a claim whose turn did not start."""
        if session_id in self.running and self.running[session_id] is None:
            self._unreserve(session_id)
            await self.leases.release(session_id)

    def _turns(self) -> list[Turn]:
        return [turn for turn in self.running.values() if turn is not None]

    async def start_turn(self, session: ChatSession | NewSession, message: str) -> Turn:
        """Start a turn; the caller checked ownership and reserved the session. Its in-flight mark is written
        before any stream begins, so that storage that cannot be written is a 503, not an in-stream error.
        A NewSession is created with that mark, or SessionExists is raised when its id was taken meanwhile."""
        session_id = session.thread_id  # the one session_id of every event of the turn (EVENT-004)
        config = self.storage.thread_config(session_id)
        config["configurable"]["project_id"] = self.project_id
        config["metadata"] = {"user_id": session.user_id}
        user_message = stamp(HumanMessage(message))  # the exact text sent, as the history shows it (HISTORY-009)
        graph_input: dict = {"messages": [user_message]}
        if session.title != NEW_TITLE:  # titled already (renamed, or a legacy row): no title generation
            graph_input["title_attempted"] = True

        if isinstance(session, NewSession):  # no earlier turn to recover: the row and the mark in one write
            if await self.repo.create(session_id, session.user_id, turn=user_message.id) is None:
                raise SessionExists(session_id)
        else:
            await self._begin_turn(session_id, user_message.id)

        async def events():
            # The graph's callbacks go to the turn as they happen (GraphEvents): astream_events' machinery per token
            # cost more CPU than the rest of the turn (issue 33). This iterator only runs the graph: it yields nothing.
            config["callbacks"] = [GraphEvents(turn.take)]
            turn.final_values = await self.graph.ainvoke(graph_input, config)
            return
            yield

        turn = Turn(
            session_id=session_id,
            user_message_id=user_message.id,
            events=events,
            translator=StreamTranslator(session_id, self.title_counts_in_stats),
            finish=self._finish_turn,
            heartbeat_interval=self.heartbeat_interval,
        )
        turn.user_message = user_message
        set_project_tools(self.tools)  # the tools the graph's tool node runs, copied into the turn's tasks
        self.running[session_id] = turn
        if session_id in self._aborted_while_starting:
            self._aborted_while_starting.discard(session_id)
            turn.stop("aborted")
        turn.start()
        return turn

    async def _begin_turn(self, session_id: str, user_message_id: str) -> None:
        """Mark the turn in flight before the graph checkpoints anything of it, after counting a turn of the
        session that could not finish (its statistics could not be written, e.g. on a full disk)."""
        for _, left_over in await self.repo.turns_in_flight(session_id):
            await self.recover(session_id, left_over)
        await self.repo.begin_turn(session_id, user_message_id)

    async def recover(self, session_id: str, user_message_id: str) -> None:
        """Finish a turn that a crash cut, as a cut-short turn is finished: repaired, then counted from what the
        checkpoint kept (its LLM generations and their usage; a generation cut by the crash left nothing to count).
        record_turn ends the turn's in-flight mark in the transaction of its statistics: counted once."""
        config = self.storage.thread_config(session_id)
        state = await self.graph.aget_state(config)
        messages = list(state.values.get("messages", []))
        start = next((i for i, m in enumerate(messages) if m.id == user_message_id), len(messages))
        # Not the answer a previous recovery added (a crash between its two writes): no generation made it.
        generations = [
            m for m in messages[start + 1 :] if isinstance(m, AIMessage) and not m.response_metadata.get("interrupted")
        ]
        repair = _repairs(messages, user_message_id, "", crashed=True)
        if repair:
            await self.graph.aupdate_state(config, {"messages": repair}, as_node=TITLE_NODE)
            messages += repair
        usage = [m.usage_metadata or {} for m in generations]
        totals = TurnTotals(
            message_count=len(messages),  # STATS-001
            llm_calls=len(generations),
            input_tokens=sum(u.get("input_tokens", 0) for u in usage),
            output_tokens=sum(u.get("output_tokens", 0) for u in usage),
            generated_title=state.values.get("conversation_title"),
        )
        await self.repo.record_turn(session_id, totals)
        log.warning("project %s, session %s: a turn cut short by a crash was recovered", self.project_id, session_id)

    async def _finish_turn(self, turn: Turn) -> None:
        try:
            config = self.storage.thread_config(turn.session_id)
            # A graph that ran to its end answered its final state, the checkpoint's values; read them otherwise.
            values = turn.final_values
            if values is None:
                values = (await self.graph.aget_state(config)).values
            messages = list(values.get("messages", []))
            repair = _repairs(messages, turn.user_message_id, turn.translator.streamed_text)
            if turn.user_message is not None and all(m.id != turn.user_message_id for m in messages):
                # Stopped before the graph stored its input (a client gone at the first bytes): the message was
                # accepted with a 200, so it is kept, as a turn stopped a moment later keeps it.
                repair = [turn.user_message]
            if repair:
                # Written as the title node's update, whose only edge leads to END, so that no node is left
                # pending in the checkpoint (the next turn starts from START with its new input).
                await self.graph.aupdate_state(config, {"messages": repair}, as_node=TITLE_NODE)
                messages += repair
            totals = TurnTotals(
                message_count=len(messages),  # STATS-001
                llm_calls=turn.stats.llm_calls,
                input_tokens=turn.stats.input_tokens,
                output_tokens=turn.stats.output_tokens,
                generated_title=values.get("conversation_title"),
            )
            await self.repo.record_turn(turn.session_id, totals)  # however it ended (STATS-005, ABORT-004)
        finally:  # a failed or aborted turn too frees the session for the next (ERRSTREAM-002, ABORT-004)
            self.running.pop(turn.session_id, None)
            await self.leases.release(turn.session_id)  # after every write of the turn: the next may start

    async def abort(self, session_id: str) -> bool:
        """Whether a running turn was stopped (ABORT-005), in this process or in the worker that runs it."""
        if session_id not in self.running:
            return await self.leases.stop_elsewhere(session_id, "aborted")
        return self.abort_here(session_id)

    def abort_here(self, session_id: str, reason: str = "aborted") -> bool:
        """Stop this process's turn of the session, if it runs one."""
        if session_id not in self.running:
            return False
        turn = self.running[session_id]
        if turn is None:  # reserved, still starting (writing its in-flight mark): stopped as soon as it exists
            self._aborted_while_starting.add(session_id)
            return True
        turn.stop(reason)
        return True

    # --- sessions ---------------------------------------------------------------------------------------

    async def history(self, session: ChatSession, limit: int) -> ConversationHistory:
        with project_database(self.project_id):
            state = await self.graph.aget_state(self.storage.thread_config(session.thread_id))
        messages = history_to_openai(session.thread_id, list(state.values.get("messages", [])))
        # Oldest first, with the session's id and title (HISTORY-001).
        return ConversationHistory(
            thread_id=session.thread_id,
            title=session.title,
            messages=messages[-limit:],
            created_at=session.created_at,
            updated_at=session.updated_at,
            llm_calls=session.llm_calls_count,  # HISTORY-008
        )

    async def delete_session(self, session_id: str) -> bool:
        turn = self.running.get(session_id)
        if turn is not None:
            turn.stop("session deleted")
            await turn.finished.wait()
        elif session_id not in self.running:
            await self.leases.stop_elsewhere(session_id, "session deleted", wait=True)
        deleted = await self.repo.delete(session_id)  # the row (SESSION-006)
        with project_database(self.project_id):
            # checkpoints and writes (SESSION-006, DB-006)
            await self.saver.adelete_thread(self.storage.thread_config(session_id)["configurable"]["thread_id"])
        return deleted


# The graphs of the checkpointers that every project of a worker shares (PostgreSQL's), one per model factory: a
# project then costs a worker no graph of its own. A checkpointer of one project's file (SQLite) gets its own graph.
_SHARED_GRAPHS: weakref.WeakKeyDictionary[BaseCheckpointSaver, dict[ChatModelFactory, CompiledStateGraph]] = (
    weakref.WeakKeyDictionary()
)


def _graph(
    models: ChatModelFactory, saver: BaseCheckpointSaver, tools: list[BaseTool], *, shared: bool
) -> CompiledStateGraph:
    if not shared:
        return build_graph(tools, models, saver, tools_of_each_turn=True)
    graphs = _SHARED_GRAPHS.setdefault(saver, {})
    if models not in graphs:
        graphs[models] = build_graph(tools, models, saver, tools_of_each_turn=True)
    return graphs[models]


def _repairs(messages: list, user_message_id: str, streamed_text: str, *, crashed: bool = False) -> list:
    """What a turn cut short (error, abort, disconnect) must add so that its history stays whole:
    a result for every tool call left unanswered (HISTORY-005), and the part of an answer that was streamed
    but never stored, so that the history shows what the user saw (STREAM-CONTENT-001). A turn cut by a crash
    with no assistant message at all gets INTERRUPTED_ANSWER: no `user, user` pair in the history."""
    start = next((i for i, m in enumerate(messages) if m.id == user_message_id), None)
    if start is None:
        return []
    turn_messages = messages[start + 1 :]
    repairs: list = []
    last_ai = next((m for m in reversed(turn_messages) if isinstance(m, AIMessage)), None)
    if last_ai is not None and last_ai.tool_calls:
        answered = {m.tool_call_id for m in turn_messages if isinstance(m, ToolMessage)}
        repairs += [
            stamp(ToolMessage(CANCELLED_TOOL_OUTPUT, tool_call_id=c["id"], name=c["name"], status="error"))
            for c in last_ai.tool_calls
            if c["id"] not in answered
        ]
    stored = "".join(m.content for m in turn_messages if isinstance(m, AIMessage) and isinstance(m.content, str))
    if len(streamed_text) > len(stored) and streamed_text.startswith(stored):
        repairs.append(stamp(AIMessage(streamed_text[len(stored) :])))
    if crashed and last_ai is None:
        repairs.append(stamp(AIMessage(INTERRUPTED_ANSWER, response_metadata={"interrupted": True})))
    return repairs


__all__ = ["AgentService", "TITLE_NODE", "database_path"]
