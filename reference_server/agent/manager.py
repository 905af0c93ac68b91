"""ProjectAgentManager: one AgentService per opened project, following the project's lifecycle."""

from __future__ import annotations

import asyncio
from pathlib import Path

from reference_server.storage_faults import ProjectUnavailable, storage_fault

from .llm_factory import ChatModelFactory
from .service import AgentService
from .stores.base import ChatStore


class ProjectAgentManager:
    def __init__(
        self, models: ChatModelFactory, store: ChatStore, *, heartbeat_interval: float, title_counts_in_stats: bool
    ) -> None:
        self.models = models
        self.store = store
        self.heartbeat_interval = heartbeat_interval
        self.title_counts_in_stats = title_counts_in_stats
        self._services: dict[str, AgentService] = {}
        self._unavailable: dict[str, str] = {}  # project_id -> why its database could not be opened
        self._lock = asyncio.Lock()

    def get(self, project_id: str) -> AgentService | None:
        """The opened project's service; one whose database could not be opened answers 503 project_unavailable."""
        if project_id in self._unavailable:
            raise ProjectUnavailable(project_id, self._unavailable[project_id])
        return self._services.get(project_id)

    def mark_unavailable(self, project_id: str, reason: str) -> None:
        """A project left opened whose database cannot be opened at start-up: it answers 503, the server serves."""
        self._unavailable[project_id] = reason

    async def open_project(self, project_id: str, project_dir: Path) -> AgentService:
        """When a project opens: open its database, migrating it in place (MIGRATION-001)."""
        async with self._lock:
            service = self._services.get(project_id)
            if service is None:
                service = AgentService(
                    project_id,
                    project_dir,
                    self.models,
                    self.store,
                    heartbeat_interval=self.heartbeat_interval,
                    title_counts_in_stats=self.title_counts_in_stats,
                )
                try:
                    await service.open()
                except ProjectUnavailable as exc:  # corrupt, or not SQLite: this project only
                    self._unavailable[project_id] = exc.reason
                    raise
                except Exception as exc:
                    if storage_fault(exc) is not None:  # the disk, not the project: 503 storage_unavailable
                        raise
                    self._unavailable[project_id] = f"{type(exc).__name__}: {exc}"
                    raise ProjectUnavailable(project_id, self._unavailable[project_id]) from exc
                self._unavailable.pop(project_id, None)
                self._services[project_id] = service
            return service

    async def close_project(self, project_id: str, *, announce: bool = True) -> None:
        async with self._lock:
            self._unavailable.pop(project_id, None)
            service = self._services.pop(project_id, None)
        if service is not None:
            await service.close()
        if announce:
            await self.store.announce_closed(project_id)

    async def on_worker_message(self, kind: str, project_id: str, session_id: str | None, reason: str) -> bool | None:
        """Another worker closed or deleted a project, or asks to stop a turn: None when it is not this worker's."""
        if kind == "close":
            await self.close_project(project_id, announce=False)
            return None
        service = self._services.get(project_id)
        if kind != "stop" or service is None or session_id not in service.running:
            return None
        return service.abort_here(session_id, reason)

    async def delete_project(self, project_id: str, project_dir: Path) -> None:
        """When a project is deleted: its sessions, checkpoints and database go, and its directory (DB-007)."""
        await self.close_project(project_id)
        await self.store.delete_project(project_id, project_dir)

    async def close_all(self) -> None:
        for project_id in list(self._services):
            await self.close_project(project_id, announce=False)  # this worker stops; the project stays opened
        await self.store.close()
