"""Deliberately broken variants of the reference server, each breaking one rule of the contract.

A mutant is applied by monkeypatching `reference_server` in the process that serves it
(`python -m tests.quality.mutant_server NAME ...`); the conformance suite then judges it over HTTP like any
other implementation. `targets` are the requirements the break is about; `consequences` are the others that
fail because of it (a missing `done` also breaks the error-stream rule, for example). The mutant test asserts
that exactly `targets | consequences` fail, and that every target does.
"""

from __future__ import annotations

import json
import uuid

from gns3_copilot_generated.constants import INITIAL_TITLE

from .mutant_kit import MUTANTS, Mutant, _transform_stream, mutant

# --- the stream ----------------------------------------------------------------------------------------------


@mutant(
    "missing-done", "the stream ends without a `done` event", {"STREAM-ORDER-003"}, {"ERRSTREAM-001", "ABORT-002"}
)  # both say the stream ends with `done`
def _missing_done() -> None:
    _transform_stream(lambda batch, _: [e for e in batch if e["type"] != "done"])


@mutant(
    "event-after-done", "a `heartbeat` follows the `done` event", {"STREAM-ORDER-003"}, {"ERRSTREAM-001"}
)  # after `error`, only `done` may follow
def _event_after_done() -> None:
    def change(batch, _):
        out = []
        for event in batch:
            out.append(event)
            if event["type"] == "done":
                out.append({"type": "heartbeat", "session_id": event["session_id"]})
        return out

    _transform_stream(change)


@mutant(
    "arguments-not-prefix-growing",
    "each `tool_call` event carries only the newest fragment of the arguments",
    {"TOOLCALL-002"},
)
def _arguments_fragments() -> None:
    def change(batch, state):
        for event in batch:
            if event["type"] == "tool_call" and not event["tool_call"]["function"].get("complete"):
                call_id, arguments = event["tool_call"]["id"], event["tool_call"]["function"]["arguments"]
                previous = state.get(call_id, "")
                state[call_id] = arguments
                event["tool_call"]["function"]["arguments"] = arguments[len(previous) :]
        return batch

    _transform_stream(change)


@mutant(
    "tool-start-without-id",
    "`tool_start` has no `tool_call_id`",
    {"TOOLCALL-004", "EVENT-001"},
    {"TOOLCALL-005", "TOOLCALL-006"},
)  # calls never started cannot end, nor be started and ended
def _tool_start_without_id() -> None:
    def change(batch, _):
        for event in batch:
            if event["type"] == "tool_start":
                event.pop("tool_call_id", None)
        return batch

    _transform_stream(change)


@mutant(
    "aborted-tool-never-ends",
    "a tool call cut short by an abort gets no `tool_end`: the stream goes from `tool_start` to `done`",
    {"TOOLCALL-005"},
    seen_in=("abort",),  # only an abort during a tool cuts a call short
)
def _aborted_tool_never_ends() -> None:
    from reference_server.agent.turn import Turn

    Turn._end_running_tools = lambda self: self._running_tools.clear()


@mutant("no-heartbeat", "no heartbeat while the LLM is silent", {"HEARTBEAT-001", "HEARTBEAT-003"})
def _no_heartbeat() -> None:
    _transform_stream(lambda batch, _: [e for e in batch if e["type"] != "heartbeat"])


@mutant("no-error-event", "an LLM failure ends the stream with `done` only, no `error`", {"ERRSTREAM-001"})
def _no_error_event() -> None:
    _transform_stream(lambda batch, _: [e for e in batch if e["type"] != "error"])


@mutant("no-cache-control", "the stream has no `Cache-Control: no-cache`", {"FRAME-004"})
def _no_cache_control() -> None:
    import reference_server.chat.routes as routes

    routes.SSE_HEADERS = {}


# --- statistics --------------------------------------------------------------------------------------------


@mutant(
    "tokens-from-last-call",
    "token counts are the last generation's usage instead of the sum",
    {"STATS-003"},
    {"STATS-005", "ABORT-004"},  # the statistics rules after cut-short turns
)
def _tokens_from_last_call() -> None:
    from reference_server.agent.stream_translator import TurnStatistics

    def add_usage(self, usage):
        if usage:
            self.input_tokens = int(usage.get("input_tokens") or 0)
            self.output_tokens = int(usage.get("output_tokens") or 0)

    TurnStatistics.add_usage = add_usage


@mutant(
    "message-count-two-per-turn",
    "message_count grows by 2 per turn (user + one assistant message)",
    {"STATS-001"},
    {"STATS-005", "ABORT-004"},  # the statistics rules after cut-short turns
)
def _message_count_two_per_turn() -> None:
    from dataclasses import replace

    from reference_server.agent.sessions_repo import ChatSessionsRepository

    original = ChatSessionsRepository.record_turn

    async def record_turn(self, thread_id, totals):
        current = await self.get(thread_id)
        return await original(self, thread_id, replace(totals, message_count=current.message_count + 2))

    ChatSessionsRepository.record_turn = record_turn


# --- sessions, titles, listing ---------------------------------------------------------------------------


@mutant("unpin-keeps-updated-at", "unpinning does not advance updated_at", {"LIST-003"})
def _unpin_keeps_updated_at() -> None:
    from reference_server.agent.sessions_repo import ChatSessionsRepository

    original = ChatSessionsRepository.set_pinned

    async def set_pinned(self, thread_id, pinned):
        if pinned:
            return await original(self, thread_id, pinned)
        await self.db.execute("UPDATE chat_sessions SET pinned = FALSE WHERE thread_id = ?", (thread_id,))
        await self.db.commit()
        return await self.get(thread_id)

    ChatSessionsRepository.set_pinned = set_pinned


@mutant("no-tie-break", "sessions with the same pinned and updated_at are listed by ascending id", {"LIST-002"})
def _no_tie_break() -> None:
    import reference_server.agent.sessions_repo as repo

    repo.LISTING_QUERY = repo.LISTING_QUERY.replace("id DESC", "id ASC")


@mutant("rename-overwritten-by-title", "the generated title replaces a title set by the user", {"TITLE-003"})
def _rename_overwritten() -> None:
    from reference_server.agent.sessions_repo import ChatSessionsRepository

    original = ChatSessionsRepository.record_turn

    async def record_turn(self, thread_id, totals):
        await original(self, thread_id, totals)
        if totals.generated_title:
            await self.db.execute(
                "UPDATE chat_sessions SET title = ? WHERE thread_id = ?", (totals.generated_title, thread_id)
            )
            await self.db.commit()
        return await self.get(thread_id)

    ChatSessionsRepository.record_turn = record_turn


@mutant("title-not-cleaned", "the title reply is stored as it came, quotes and line breaks included", {"TITLE-002"})
def _title_not_cleaned() -> None:
    import reference_server.agent.graph as graph

    graph.clean_title = lambda text: text


@mutant("history-ids-change", "history message ids are new on every call", {"HISTORY-003"})
def _history_ids_change() -> None:
    import reference_server.agent.service as service

    original = service.history_to_openai

    def history_to_openai(thread_id, messages):
        return [m.model_copy(update={"id": str(uuid.uuid4())}) for m in original(thread_id, messages)]

    service.history_to_openai = history_to_openai


@mutant("limit-zero-accepted", "the history accepts limit=0 (and answers no messages)", {"HISTORY-007"})
def _limit_zero_accepted() -> None:
    import reference_server.prelude as routes

    original = routes.history_limit

    def history_limit(request):
        return 0 if request.query_params.get("limit") == "0" else original(request)

    routes.history_limit = history_limit


@mutant(
    "lax-limit",
    "the history's limit is read by int(): 1_000, ' 5' and '5 ' are taken as numbers",
    {"HISTORY-007"},
)
def _lax_limit() -> None:
    import reference_server.prelude as routes

    original = routes.history_limit

    def history_limit(request):
        raw = request.query_params.get("limit")
        try:
            value = int(raw) if raw is not None else None
        except ValueError:
            value = None
        return value if value is not None and 1 <= value <= 1000 else original(request)

    routes.history_limit = history_limit


@mutant(
    "coercing-json-types",
    'request members are coerced: "temperature": "0.5" or true, and "stream": 1, are accepted',
    {"INPUT-003", "INPUT-004"},
)
def _coercing_json_types() -> None:
    import json

    from pydantic import ValidationError

    import reference_server.chat.routes as routes
    from reference_server.errors import ApiError, from_pydantic, validation_failed

    async def json_body(request, model):  # the body parsed as before, then validated in pydantic's lax mode
        try:
            data = json.loads(await request.body())
        except (ValueError, UnicodeDecodeError) as exc:
            raise ApiError(400, "invalid_json", "The request body is not valid JSON") from exc
        if not isinstance(data, dict):
            raise validation_failed([{"loc": ["body"], "msg": "The body must be a JSON object", "type": "model_type"}])
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise from_pydantic(exc, ("body",)) from exc

    routes.json_body = json_body


def _empty_session(service, session_id: str, caller):
    """A session row that does not exist, as a server that invents one would answer it."""
    from gns3_copilot_generated.api.chat_session import ChatSession

    now = "2026-01-01T00:00:00.000000Z"
    return ChatSession(
        id=1,
        thread_id=session_id,
        user_id=caller.user.user_id,
        project_id=service.project_id,
        title=INITIAL_TITLE,
        message_count=0,
        llm_calls_count=0,
        input_tokens=0,
        output_tokens=0,
        total_tokens=0,
        last_message_at=None,
        created_at=now,
        updated_at=now,
        pinned=False,
    )


@mutant(
    "unknown-session-history-200",
    "the history of an unknown or deleted session is an empty 200",
    {"SESSION-007", "SESSION-008"},
    {"CONTRACT-001"},  # renaming or pinning such a session then fails with a 500
)
def _unknown_history_200() -> None:
    import reference_server.prelude as routes

    original = routes.owned_session

    async def owned_session(service, session_id, caller):
        if await service.repo.get(session_id) is None:
            return _empty_session(service, session_id, caller)
        return await original(service, session_id, caller)

    routes.owned_session = owned_session


@mutant(
    "never-created-session-answers",
    "a session id that was never created is answered as an empty session (a deleted one is still 404)",
    {"SESSION-008"},
    {"CONTRACT-001"},  # renaming or pinning such a session then fails with a 500
)
def _never_created_session_answers() -> None:
    import reference_server.prelude as routes
    from reference_server.agent.service import AgentService

    original_owned, original_delete = routes.owned_session, AgentService.delete_session
    deleted: set[str] = set()

    async def delete_session(self, session_id, *args, **kwargs):
        deleted.add(session_id)
        return await original_delete(self, session_id, *args, **kwargs)

    async def owned_session(service, session_id, caller):
        if session_id not in deleted and await service.repo.get(session_id) is None:
            return _empty_session(service, session_id, caller)
        return await original_owned(service, session_id, caller)

    AgentService.delete_session = delete_session
    routes.owned_session = owned_session


# --- isolation, projects, preconditions -------------------------------------------------------------------


@mutant(
    "other-user-reads-and-pins", "any user can read, rename, pin or delete another user's session", {"ISOLATION-001"}
)
def _other_user_reads() -> None:
    import reference_server.prelude as routes
    from reference_server.errors import ApiError

    async def owned_session(service, session_id, caller):
        session = await service.repo.get(session_id)
        if session is None:
            raise ApiError(404, "session_not_found", f"Session {session_id} not found")
        return session

    routes.owned_session = owned_session


@mutant("closed-project-answers", "a closed project's chat endpoints answer as if it were opened", {"PROJECT-002"})
def _closed_project_answers() -> None:
    import reference_server.prelude as preconditions
    import reference_server.prelude as routes
    from reference_server.controller.roles import CHAT_PRIVILEGE
    from reference_server.errors import ApiError

    async def opened_project(project_id, request, caller):
        await preconditions.require_project_privilege(request, caller, project_id, CHAT_PRIVILEGE)  # access as ever
        services = request.app.state.services
        project = await services.store.project(project_id)
        if project is None:
            raise ApiError(404, "project_not_found", f"Project {project_id} does not exist")
        return await services.manager.open_project(project_id, services.project_dir(project_id))

    routes.opened_project = opened_project


@mutant("401-without-www-authenticate", "401 answers have no WWW-Authenticate header", {"AUTH-002"})
def _no_www_authenticate() -> None:
    import reference_server.controller.auth as auth
    from reference_server.errors import ApiError

    auth.unauthorized = lambda message: ApiError(401, "unauthorized", message)


@mutant(
    "second-stream-accepted",
    "a second stream on a busy session is accepted",
    {"CONCURRENCY-001"},
    # no request is refused, so the refusal of a busy new session never happens (PRECHECK-001 NOT TESTABLE)
    {"CONCURRENCY-002", "PRECHECK-001"},
)
def _second_stream_accepted() -> None:
    from reference_server.agent.service import AgentService

    # Two racing first turns of one new session then both start it: the server itself makes the row once and
    # continues the session for the other (SessionExists), so the mutant breaks the busy rule alone.
    AgentService.is_busy = lambda self, session_id: False


# --- several worker processes, pretended in one ------------------------------------------------------------
# A server of several processes behind one port gets each connection in whichever process the kernel gives it. These
# mutants pretend to be PRETENDED_WORKERS such processes: each request's is drawn from its connection's client port
# (the suite opens a new connection per request), and what a real server would keep in one process's memory is kept
# per pretended worker. Each fails the check that sends many requests on connections of their own at once.

PRETENDED_WORKERS = 4


def _pretended_worker():
    """The ContextVar of the pretended worker serving the current request (None outside a request)."""
    import contextvars
    import zlib

    from .asgi_rewrite import on_each_request

    current: contextvars.ContextVar[int | None] = contextvars.ContextVar("pretended_worker", default=None)

    def note(scope) -> None:
        client = scope.get("client")
        if client:
            current.set(zlib.crc32(str(client[1]).encode()) % PRETENDED_WORKERS)

    on_each_request(note)
    return current


@mutant(
    "busy-lock-per-worker",
    "the busy lock is kept in each of 4 pretended workers' memory (PRETENDED_WORKERS): a request that reaches "
    "another worker than the running turn's starts a second turn of the session (a new session's first turns still "
    "refuse one another, as its row is created once)",
    {"CONCURRENCY-001"},
    {"CONCURRENCY-002"},  # turns of one session run at once, and the history keeps one of them
)
def _busy_lock_per_worker() -> None:
    import contextvars

    from reference_server.agent.service import AgentService

    worker = _pretended_worker()
    anyone = object()  # is_busy asked outside a claim: any worker's turn counts
    # In a claim: the worker asking (None: a new session, which every worker sees) and whether it took the mark.
    asking: contextvars.ContextVar = contextvars.ContextVar("asking", default=(anyone, []))
    claimed: contextvars.ContextVar = contextvars.ContextVar("claimed", default=None)
    holders: dict[tuple[int, str], list] = {}  # (service, session) -> the workers whose turn holds the session
    claim, start_turn, finish_turn, release = (
        AgentService.claim,
        AgentService.start_turn,
        AgentService._finish_turn,
        AgentService.release,
    )

    def held(self, session_id) -> list:
        return holders.setdefault((id(self), session_id), [])

    def is_busy(self, session_id):
        who, taken = asking.get()
        marks = held(self, session_id)
        busy = bool(marks) and (who is anyone or who is None or None in marks or who in marks)
        if not busy and who is not anyone:  # the claim takes its mark in this same step, as the original does
            marks.append(who)
            taken.append(who)
        return busy

    async def claim_(self, session_id):
        who = worker.get() if await self.repo.get(session_id) is not None else None
        taken: list = []
        token = asking.set((who, taken))
        try:
            ok = await claim(self, session_id)
        finally:
            asking.reset(token)
        if taken and not ok:
            held(self, session_id).remove(who)
        if ok:
            claimed.set(who)
        return ok

    async def start_turn_(self, session, message):
        turn = await start_turn(self, session, message)
        turn.pretended_worker = claimed.get()
        return turn

    async def finish_turn_(self, turn):
        try:
            await finish_turn(self, turn)
        finally:
            marks = held(self, turn.session_id)
            if turn.pretended_worker in marks:
                marks.remove(turn.pretended_worker)

    async def release_(self, session_id):
        marks = held(self, session_id)
        if claimed.get() in marks and self.running.get(session_id, ()) is None:
            marks.remove(claimed.get())
        await release(self, session_id)

    AgentService.is_busy, AgentService.claim, AgentService.start_turn = is_busy, claim_, start_turn_
    AgentService._finish_turn, AgentService.release = finish_turn_, release_


@mutant(
    "abort-reaches-own-worker",
    "an abort stops only a turn that its own pretended worker (of 4, PRETENDED_WORKERS) runs: sent on another "
    "connection it often reaches another, which answers `aborted: false` and lets the turn run on",
    {"ABORT-001", "ABORT-005"},
)
def _abort_reaches_own_worker() -> None:
    from reference_server.agent.service import AgentService

    worker = _pretended_worker()
    start_turn, abort = AgentService.start_turn, AgentService.abort

    async def start_turn_(self, session, message):
        turn = await start_turn(self, session, message)
        turn.pretended_worker = worker.get()
        return turn

    async def abort_(self, session_id):
        turn = self.running.get(session_id)
        if turn is not None and turn.pretended_worker != worker.get():
            return False  # another worker's turn, which this one never hears of
        return await abort(self, session_id)

    AgentService.start_turn, AgentService.abort = start_turn_, abort_


@mutant(
    "turn-totals-in-one-slot",
    "a turn's statistics wait for the database in one slot per project, which the next turn to end overwrites: "
    "sessions whose turns end together are written one another's counts (total_tokens still their sum)",
    {"STATS-001", "STATS-002", "STATS-003"},
)
def _turn_totals_in_one_slot() -> None:
    import asyncio

    from reference_server.agent.sessions_repo import ChatSessionsRepository

    record_turn = ChatSessionsRepository.record_turn

    async def record_turn_(self, thread_id, totals):
        self.waiting_totals = totals
        await asyncio.sleep(0.3)  # a connection of the pool becomes free
        return await record_turn(self, thread_id, self.waiting_totals)

    ChatSessionsRepository.record_turn = record_turn_


# --- the database ----------------------------------------------------------------------------------------


@mutant(
    "no-migration",
    "a legacy chat_sessions table is not upgraded: the project fails to open",
    {"MIGRATION-001", "MIGRATION-002", "MIGRATION-003"},
)
def _no_migration() -> None:
    import gns3_copilot_spec as spec
    import reference_server.agent.stores.sqlite as service

    async def migrate(db):
        await db.executescript((spec.DB_DIR / "schema.sql").read_text(encoding="utf-8"))
        await db.commit()
        return []

    service.migrate = migrate


@mutant("delete-leaves-writes", "deleting a session leaves its pending writes in the database", {"DB-006"})
def _delete_leaves_writes() -> None:
    from reference_server.agent.service import AgentService

    async def delete_session(self, session_id):
        deleted = await self.repo.delete(session_id)
        await self.saver.conn.execute("DELETE FROM checkpoints WHERE thread_id = ?", (session_id,))
        await self.saver.conn.commit()
        return deleted

    AgentService.delete_session = delete_session


@mutant("api-key-in-database", "the session row keeps the LLM API key in its metadata", {"SECRET-001"})
def _api_key_in_database() -> None:
    from reference_server.agent.context import current_llm_settings
    from reference_server.agent.sessions_repo import ChatSessionsRepository

    original = ChatSessionsRepository.record_turn

    async def record_turn(self, thread_id, totals):  # runs in the turn's context, where the key is
        key = current_llm_settings().api_key or ""
        await self.db.execute(
            "UPDATE chat_sessions SET stats = ? WHERE thread_id = ?", (json.dumps({"api_key": key}), thread_id)
        )
        await self.db.commit()
        return await original(self, thread_id, totals)

    ChatSessionsRepository.record_turn = record_turn


@mutant(
    "turns-one-at-a-time",
    "one turn of the whole server generates at a time: a turn of another session waits until the running one has "
    "ended before its generation starts",
    {"CONCURRENCY-003"},
)
def _turns_one_at_a_time() -> None:
    import asyncio

    from reference_server.agent.turn import Turn

    original = Turn.__init__
    one_at_a_time = asyncio.Lock()  # bound to the server's loop when first used

    def __init__(self, *, events, **kwargs):
        async def serialized():
            async with one_at_a_time:
                async for event in events():
                    yield event

        original(self, events=serialized, **kwargs)

    Turn.__init__ = __init__


__all__ = ["MUTANTS", "Mutant"]


# The second generation, made by a method (see each module's docstring), registers itself in MUTANTS too.
from . import mutants_access, mutants_api, mutants_stream  # noqa: E402, F401, I001
from . import mutants_channels  # noqa: E402, F401, I001  (the channel mutants: each with its `only` areas)
from . import mutants_protocols  # noqa: E402, F401, I001  (the protocols' mutants: OPENAI-, UI-, AGUI-PROTO-*)
from . import mutants_shapes  # noqa: E402, F401, I001  (the stream shapes' mutants: a provider's other cuts)
from . import mutants_channel_aborts  # noqa: E402, F401, I001  (aborts, disconnects, project access on the channels)
from . import mutants_bounds  # noqa: E402, F401, I001  (values at their bounds, unknown members beyond the stream)
from . import mutants_channel_states  # noqa: E402, F401, I001  (the channels in the states of issue 31)
from . import mutants_states  # noqa: E402, F401, I001  (the session operations in each state: sessions.states)
from . import mutants_tools  # noqa: E402, F401, I001  (tools that raise, are slow, or are unknown)
from . import mutants_channel_bounds  # noqa: E402, F401, I001  (the channels' request bounds, CHANNEL-011)
from . import mutants_controller_writes  # noqa: E402, F401, I001  (access entries' paths, own password changes)
