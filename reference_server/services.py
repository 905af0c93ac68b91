"""Everything the routes share, built once per application from the settings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fake_llm.request_log import RequestLog
from fake_llm.scripts import ScriptLibrary

from .agent.llm_factory import ChatModelFactory
from .agent.manager import ProjectAgentManager
from .controller.security import SecretBox, TokenIssuer, hash_password
from .controller.store import ControllerStore
from .settings import Settings

DEFAULT_LLM_CONFIG = {
    "name": "built-in fake LLM",
    "model_type": "text",
    "provider": "fake",
    "base_url": None,
    "model": "fake-model",
    "temperature": 0.7,
    "max_tokens": None,
    "api_key_sealed": None,
    "context_limit": 128,
    "copilot_mode": "teaching_assistant",
    "is_default": True,
}


@dataclass
class Services:
    settings: Settings
    store: ControllerStore
    tokens: TokenIssuer
    secrets: SecretBox
    manager: ProjectAgentManager
    fake_llm_log: RequestLog

    def project_dir(self, project_id: str) -> Path:
        return self.settings.projects_dir / project_id

    @classmethod
    async def start(cls, settings: Settings) -> Services:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        secrets_dir = settings.data_dir / "secrets"
        store = ControllerStore(settings.data_dir / "controller.db")
        await store.open()
        log = RequestLog()
        models = ChatModelFactory(ScriptLibrary.from_folders(settings.fake_llm_scripts), log)
        manager = ProjectAgentManager(
            models, heartbeat_interval=settings.heartbeat_interval, title_counts_in_stats=settings.title_counts_in_stats
        )
        services = cls(
            settings, store, TokenIssuer(secrets_dir, settings.token_ttl_seconds), SecretBox(secrets_dir), manager, log
        )
        await services._seed()
        for project in await store.list_projects():  # projects left opened are opened again, as GNS3 does
            if project.status == "opened":
                await manager.open_project(project.project_id, services.project_dir(project.project_id))
        return services

    async def _seed(self) -> None:
        """A new controller database gets the admin account, whose LLM is the in-process fake LLM."""
        if await self.store.count_users() == 0:
            admin = await self.store.add_user(
                self.settings.admin_username,
                hash_password(self.settings.admin_password),
                is_superadmin=True,
                full_name="Super Administrator",
            )
            await self.store.add_llm_config(admin.user_id, DEFAULT_LLM_CONFIG)

    async def stop(self) -> None:
        await self.manager.close_all()
        await self.store.close()
