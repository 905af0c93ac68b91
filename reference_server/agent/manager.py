"""ProjectAgentManager: one AgentService per opened project, following the project's lifecycle."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from .llm_factory import ChatModelFactory
from .service import AgentService


class ProjectAgentManager:
    def __init__(self, models: ChatModelFactory, *, heartbeat_interval: float, title_counts_in_stats: bool) -> None:
        self.models = models
        self.heartbeat_interval = heartbeat_interval
        self.title_counts_in_stats = title_counts_in_stats
        self._services: dict[str, AgentService] = {}
        self._lock = asyncio.Lock()

    def get(self, project_id: str) -> AgentService | None:
        return self._services.get(project_id)

    async def open_project(self, project_id: str, project_dir: Path) -> AgentService:
        """When a project opens: open its database, migrating it in place (MIGRATION-001)."""
        async with self._lock:
            service = self._services.get(project_id)
            if service is None:
                service = AgentService(
                    project_id,
                    project_dir,
                    self.models,
                    heartbeat_interval=self.heartbeat_interval,
                    title_counts_in_stats=self.title_counts_in_stats,
                )
                await service.open()
                self._services[project_id] = service
            return service

    async def close_project(self, project_id: str) -> None:
        async with self._lock:
            service = self._services.pop(project_id, None)
        if service is not None:
            await service.close()

    async def delete_project(self, project_id: str, project_dir: Path) -> None:
        """When a project is deleted: its sessions, checkpoints and database go with its directory (DB-007)."""
        await self.close_project(project_id)
        shutil.rmtree(project_dir, ignore_errors=True)

    async def close_all(self) -> None:
        for project_id in list(self._services):
            await self.close_project(project_id)
