"""Everything the routes share, built once per application from the settings."""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path

from fake_llm.request_log import RequestLog
from fake_llm.scripts import ScriptLibrary

from .agent.llm_factory import ChatModelFactory
from .agent.manager import ProjectAgentManager
from .agent.stores.base import ChatStore
from .agent.stores.sqlite import SqliteChatStore
from .controller.security import SecretBox, TokenIssuer, hash_password
from .controller.store import ControllerStore
from .private_files import private_dir
from .settings import Settings
from .storage_faults import ProjectUnavailable

log = logging.getLogger(__name__)

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


async def _chat_store(settings: Settings, *, prepare: bool) -> ChatStore:
    if settings.database_url is None:
        return SqliteChatStore()
    from .agent.stores.postgres import PostgresChatStore, prepare_database  # psycopg only where it is used

    if prepare:
        await prepare_database(settings.database_url)
    return PostgresChatStore(settings.database_url, settings.workers)


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
    async def start(cls, settings: Settings, *, prepare: bool = True) -> Services:
        """Fails, closing what it opened, when the server cannot serve at all; a project that cannot be opened
        only makes that project answer 503 project_unavailable. Without `prepare`, the databases were prepared
        before the workers started (workers.py)."""
        try:
            private_dir(settings.data_dir)
            with tempfile.TemporaryFile(dir=settings.data_dir):  # fail now, clearly, rather than on every write
                pass
            secrets_dir = private_dir(settings.data_dir / "secrets")
            private_dir(settings.projects_dir)
        except OSError as exc:
            log.critical("start-up failed: the data directory %s is not writable: %s", settings.data_dir, exc)
            raise
        store = ControllerStore(settings.data_dir / "controller.db")
        try:
            await store.open()
        except BaseException as exc:
            log.critical("start-up failed: the controller database %s cannot be used: %s", store.path, exc)
            raise
        chat_store: ChatStore | None = None
        try:
            request_log = RequestLog()
            chat_store = await _chat_store(settings, prepare=prepare)
            models = ChatModelFactory(ScriptLibrary.from_folders(settings.fake_llm_scripts), request_log)
            manager = ProjectAgentManager(
                models,
                chat_store,
                heartbeat_interval=settings.heartbeat_interval,
                title_counts_in_stats=settings.title_counts_in_stats,
            )
            await chat_store.open(manager.on_worker_message)
            tokens = TokenIssuer(secrets_dir, settings.token_ttl_seconds)
            services = cls(settings, store, tokens, SecretBox(secrets_dir), manager, request_log)
            await services._seed()
            projects = await store.list_projects()
        except BaseException as exc:
            # An open connection is a non-daemon thread: left behind, the process would never exit.
            log.critical("start-up failed: %s", exc)
            if chat_store is not None:
                await chat_store.close()
            await store.close()
            raise
        for project in projects:  # projects left opened are opened again, as GNS3 does
            if project.status == "opened":
                await services._reopen(project.project_id)
        return services

    async def _reopen(self, project_id: str) -> None:
        try:
            await self.manager.open_project(project_id, self.project_dir(project_id))
        except Exception as exc:
            reason = exc.reason if isinstance(exc, ProjectUnavailable) else str(exc)
            log.error("project %s cannot be opened; it answers 503 project_unavailable: %s", project_id, reason)
            self.manager.mark_unavailable(project_id, reason)

    async def _seed(self) -> None:
        """A new controller database gets the admin account, whose LLM is the in-process fake LLM."""
        if await self.store.count_users() == 0:
            admin = await self.store.add_user(
                self.settings.admin_username,
                hash_password(self.settings.admin_password, self.settings.password_hash_profile),
                is_superadmin=True,
                full_name="Super Administrator",
            )
            await self.store.add_llm_config(admin.user_id, DEFAULT_LLM_CONFIG)

    async def stop(self) -> None:
        await self.manager.close_all()
        await self.store.close()
