"""The interface both stores implement, so that nothing above them knows which one runs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from langgraph.checkpoint.base import BaseCheckpointSaver

from gns3_copilot_generated.api.chat_session import ChatSession


@dataclass(frozen=True)
class TurnTotals:
    """What one turn adds to a session (STATS-001..005); written in one UPDATE (STATS-007)."""

    message_count: int  # absolute: the history's length after the turn
    llm_calls: int
    input_tokens: int
    output_tokens: int
    generated_title: str | None


class SessionsRepository(Protocol):
    """The `chat_sessions` rows of one project, and the turns it started and has not counted yet."""

    async def get(self, thread_id: str) -> ChatSession | None: ...
    async def list_for(self, user_id: str) -> list[ChatSession]: ...
    async def create(self, thread_id: str, user_id: str, metadata: dict[str, Any] | None = None) -> ChatSession: ...
    async def rename(self, thread_id: str, title: str) -> ChatSession | None: ...
    async def set_pinned(self, thread_id: str, pinned: bool) -> ChatSession | None: ...
    async def begin_turn(self, thread_id: str, user_message_id: str) -> None: ...
    async def turns_in_flight(self, thread_id: str | None = None) -> list[tuple[str, str]]: ...
    async def record_turn(self, thread_id: str, totals: TurnTotals) -> ChatSession | None: ...
    async def delete(self, thread_id: str) -> bool: ...


class SessionLeases(Protocol):
    """The busy lock's part that other processes see (CONCURRENCY-001). A process first marks a session busy in
    its own memory, in the event-loop step that checked it; the lease then tells it whether another process runs
    a turn of that session."""

    async def acquire(self, session_id: str) -> bool: ...
    async def release(self, session_id: str) -> None: ...
    async def held_elsewhere(self, session_id: str) -> bool: ...
    async def stop_elsewhere(self, session_id: str, reason: str, *, wait: bool = False) -> bool:
        """Ask the process running the session's turn to stop it: whether a running turn was stopped; with `wait`,
        returns once that turn has ended and released its lease."""
        ...


class LocalLeases:
    """One process: its own memory is the whole lock, and no turn runs anywhere else."""

    async def acquire(self, session_id: str) -> bool:
        return True

    async def release(self, session_id: str) -> None:
        return None

    async def held_elsewhere(self, session_id: str) -> bool:
        return False

    async def stop_elsewhere(self, session_id: str, reason: str, *, wait: bool = False) -> bool:
        return False


@dataclass
class ProjectStorage:
    """One opened project's chat data, as its AgentService uses it."""

    repo: SessionsRepository
    saver: BaseCheckpointSaver
    leases: SessionLeases
    close: Callable[[], Awaitable[None]]
    # The checkpoints' thread_id is this prefix + the session id: "" where a project has its own file, the project
    # where projects share one database (a client may name its session, so ids can repeat across projects).
    checkpoint_prefix: str = ""

    def thread_config(self, session_id: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": self.checkpoint_prefix + session_id}}


class ChatStore(Protocol):
    """Every project's chat data, opened per project as projects open."""

    shared: bool  # True when other processes use the same data (several workers)

    async def open(self, on_message: Callable[[str, str, str | None, str], Awaitable[bool | None]]) -> None:
        """Start; `on_message(kind, project_id, session_id, reason)` handles other workers' stop requests."""
        ...

    async def announce_closed(self, project_id: str) -> None:
        """A project was closed here: other workers stop its turns too."""
        ...

    async def open_project(self, project_id: str, project_dir: Path) -> ProjectStorage: ...
    async def delete_project(self, project_id: str, project_dir: Path) -> None:
        """Remove exactly this project's chat data (DB-007); its directory is the manager's."""
        ...

    async def close(self) -> None: ...
