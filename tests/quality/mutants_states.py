"""Mutants of the session operations in the states of conformance/rules/session_states.py (judged by
sessions.states and sessions.states_running), of the listing when `pinned` and `updated_at` disagree (listing.order)
and of a blank title (sessions.rename): one per state the coverage map listed as a gap, each the way an
implementer who reads the rules one operation at a time gets it wrong. Registered in MUTANTS by
tests/quality/mutants.py."""

from __future__ import annotations

import asyncio

from gns3_copilot_generated.constants import INITIAL_TITLE

from .mutant_kit import mutant

# The session as each running turn read it when it began (thread_id -> ChatSession): what a turn that saves "its"
# session at its end writes back.
_AT_START: dict[str, object] = {}


def _snapshot_at_start() -> None:
    from reference_server.agent.service import AgentService

    original = AgentService.start_turn

    async def start_turn(self, session, message):
        _AT_START[session.thread_id] = session
        return await original(self, session, message)

    AgentService.start_turn = start_turn


def _write_back_at_end(column: str) -> None:
    """At a turn's end, `column` goes back to what the turn read when it began, when something else changed it
    meanwhile (not the turn's own generated title)."""
    from reference_server.agent.sessions_repo import ChatSessionsRepository

    _snapshot_at_start()
    original = ChatSessionsRepository.record_turn

    async def record_turn(self, thread_id, totals):
        session = await original(self, thread_id, totals)
        began = _AT_START.pop(thread_id, None)
        if session is None or began is None:
            return session
        old, now = getattr(began, column), getattr(session, column)
        if now != old and now != totals.generated_title:
            await self.db.execute(f"UPDATE chat_sessions SET {column} = ? WHERE thread_id = ?", (old, thread_id))
            await self.db.commit()
            return await self.get(thread_id)
        return session

    ChatSessionsRepository.record_turn = record_turn


@mutant(
    "rename-lost-when-the-turn-ends",
    "a rename during a running turn is undone when the turn ends: the turn writes back the title it read when it began",
    {"TITLE-003"},
)
def _rename_lost_when_the_turn_ends() -> None:
    _write_back_at_end("title")


@mutant(
    "pin-lost-when-the-turn-ends",
    "a pin or unpin during a running turn is undone when the turn ends: the turn writes back the pin it read first",
    {"PIN-001"},
)
def _pin_lost_when_the_turn_ends() -> None:
    _write_back_at_end("pinned")


@mutant(
    "pin-resets-a-renamed-title",
    "pinning a renamed session gives it back the initial title",
    {"PIN-001"},  # the pin's answer has the wrong title, and the pin changed the listed one
)
def _pin_resets_a_renamed_title() -> None:
    from reference_server.agent.sessions_repo import MANUAL_TITLE, ChatSessionsRepository

    original = ChatSessionsRepository.set_pinned

    async def set_pinned(self, thread_id, pinned):
        session = await original(self, thread_id, pinned)
        if pinned and session is not None and (session.metadata or {}).get("title_source") == MANUAL_TITLE:
            await self.db.execute("UPDATE chat_sessions SET title = ? WHERE thread_id = ?", (INITIAL_TITLE, thread_id))
            await self.db.commit()
            return await self.get(thread_id)
        return session

    ChatSessionsRepository.set_pinned = set_pinned


@mutant(
    "rename-unpins",
    "renaming a pinned session unpins it (the rename writes the row with `pinned` at its default)",
    {"SESSION-004", "PIN-001"},  # the rename's answer is not the session; its pin is lost
)
def _rename_unpins() -> None:
    from reference_server.agent.sessions_repo import ChatSessionsRepository

    original = ChatSessionsRepository.rename

    async def rename(self, thread_id, title):
        await original(self, thread_id, title)
        await self.db.execute("UPDATE chat_sessions SET pinned = FALSE WHERE thread_id = ?", (thread_id,))
        await self.db.commit()
        return await self.get(thread_id)

    ChatSessionsRepository.rename = rename


@mutant(
    "delete-keeps-pinned",
    "deleting a pinned session answers 204 but keeps it: pinned sessions are protected",
    {"SESSION-006", "SESSION-007"},  # still listed; its history still answers
)
def _delete_keeps_pinned() -> None:
    from reference_server.agent.service import AgentService

    original = AgentService.delete_session

    async def delete_session(self, session_id):
        session = await self.repo.get(session_id)
        if session is not None and session.pinned:
            return True
        return await original(self, session_id)

    AgentService.delete_session = delete_session


@mutant(
    "delete-of-a-running-session-comes-back",
    "deleting a session whose turn runs answers 204, but the turn goes on and saves the session back when it ends",
    {"SESSION-006", "SESSION-007"},  # listed again; its history answers
)
def _delete_of_a_running_session_comes_back() -> None:
    from reference_server.agent.service import AgentService

    original = AgentService.delete_session
    kept: set[asyncio.Task] = set()

    async def delete_session(self, session_id):
        turn = self.running.get(session_id)
        if turn is None:
            return await original(self, session_id)
        session = await self.repo.get(session_id)
        deleted = await self.repo.delete(session_id)  # the row only: the turn runs on, its checkpoints stay

        async def save_back() -> None:
            await turn.finished.wait()
            if await self.repo.get(session_id) is None:
                await self.repo.create(session_id, session.user_id)

        task = asyncio.create_task(save_back())
        kept.add(task)
        task.add_done_callback(kept.discard)
        return deleted

    AgentService.delete_session = delete_session


@mutant(
    "listing-by-updated-at-only",
    "the listing is ordered by updated_at alone: an older pinned session comes after a newer unpinned one",
    {"LIST-002"},
)
def _listing_by_updated_at_only() -> None:
    import reference_server.agent.sessions_repo as repo

    repo.LISTING_QUERY = repo.LISTING_QUERY.replace("pinned DESC, ", "")


@mutant(
    "blank-title-refused",
    "a title of only spaces (and tabs) is refused 422, as if the schema asked for a non-blank title",
    {"SESSION-004"},
)
def _blank_title_refused() -> None:
    import reference_server.chat.routes as routes
    from gns3_copilot_generated.api.rename_request import RenameSessionRequest
    from reference_server.errors import validation_failed

    original = routes.json_body

    async def json_body(request, model):
        value = await original(request, model)
        if model is RenameSessionRequest and not value.title.strip():
            raise validation_failed([{"loc": ["body", "title"], "msg": "The title is blank", "type": "string_blank"}])
        return value

    routes.json_body = json_body
