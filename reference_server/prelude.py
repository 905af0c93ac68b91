"""The route prelude: every check a chat or channel request passes, in the contract's order, before any stream begins
(PRECHECK-001): the authenticated caller (AUTH-001), the opened project (ACCESS-001, PROJECT-001, PROJECT-002), the
request's input (INPUT-*, the route's own), the caller's LLM configuration (LLM-001, the turn core's), the owned
session (ISOLATION-001) and the busy lock (CONCURRENCY-001, the turn core's).

Routes ask for them as the annotated parameters at the end of this module (`caller: Authenticated`, the
controller's own from controller/auth.py; `service: OpenedProject`; `session: OwnedSession`), declared in that
order: FastAPI solves a route's dependencies in the order of its parameters, each once per request, and a path or
query string is read here rather than by FastAPI, so that no malformed parameter is answered before the caller is
known.
"""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import Depends, Request
from pydantic import ValidationError

from gns3_copilot_generated.api.chat_session import ChatSession
from gns3_copilot_generated.api.session_id import SessionId
from gns3_copilot_generated.constants import HISTORY_LIMIT_DEFAULT, HISTORY_LIMIT_MAX, HISTORY_LIMIT_MIN
from reference_server.agent.context import LlmSettings
from reference_server.agent.service import AgentService
from reference_server.controller.auth import Authenticated, Caller
from reference_server.controller.common import require_project_privilege
from reference_server.controller.roles import CHAT_PRIVILEGE
from reference_server.errors import ApiError, from_pydantic, invalid_field

HISTORY_LIMIT_RANGE = (HISTORY_LIMIT_MIN, HISTORY_LIMIT_MAX)  # HISTORY-006
_CANONICAL_LIMIT = re.compile(r"[1-9][0-9]{0,3}")  # at most 4 digits: no int() of an arbitrarily long string


async def opened_project(project_id: str, request: Request, caller: Caller) -> AgentService:
    """403 for a caller without access, whether or not the project exists (ACCESS-001, ACCESS-002), then 404 for an
    unknown project (PROJECT-001) and 403 for one that is not opened (PROJECT-002). Checked once per request: a
    channel checks it before reading its body, and its turn's start asks again."""
    checked = getattr(request.state, "opened_project", None)
    if checked is not None and checked[0] == project_id:
        return checked[1]
    await require_project_privilege(request, caller, project_id, CHAT_PRIVILEGE)
    services = request.app.state.services
    project = await services.store.project(project_id)
    if project is None:
        raise ApiError(404, "project_not_found", f"Project {project_id} does not exist")
    service = services.manager.get(project_id)
    if service is None and project.status == "opened" and services.manager.store.shared:
        # Opened through another worker: the data is shared, so this worker opens it too.
        service = await services.manager.open_project(project_id, services.project_dir(project_id))
    if project.status != "opened" or service is None:
        raise ApiError(
            403, "project_not_opened", f"Project must be opened to use chat. Current status: {project.status}"
        )
    request.state.opened_project = (project_id, service)
    return service


def valid_session_id(session_id: str) -> str:
    """SESSION-003, for ids in the path."""
    try:
        return SessionId.model_validate(session_id).root
    except ValidationError as exc:
        raise from_pydantic(exc, ("path", "session_id")) from exc


def history_limit(request: Request) -> int:
    """HISTORY-006, HISTORY-007."""
    raw = request.query_params.get("limit")
    if raw is None:
        return HISTORY_LIMIT_DEFAULT
    low, high = HISTORY_LIMIT_RANGE
    # A canonical decimal integer: int() and pydantic would also take "1_000", " 5", "5 ", "+5" and "05", and a
    # value given twice is ambiguous (HISTORY-007).
    values = request.query_params.getlist("limit")
    value = int(raw) if len(values) == 1 and _CANONICAL_LIMIT.fullmatch(raw) else None
    if value is None or not low <= value <= high:
        raise invalid_field(["query", "limit"], f"limit must be an integer from {low} to {high}")
    return value


async def owned_session(service: AgentService, session_id: str, caller: Caller) -> ChatSession:
    """404 for a session never created (SESSION-008) or deleted (SESSION-007), and another user's (ISOLATION-001)."""
    session = await service.repo.get(session_id)
    if session is None or session.user_id != caller.user.user_id:
        raise ApiError(404, "session_not_found", f"Session {session_id} not found")
    return session


async def llm_settings(request: Request, caller: Caller, temperature: float | None) -> LlmSettings:
    """The caller's LLM configuration with its key decrypted, in memory only (LLM-001, SECRET-001)."""
    services = request.app.state.services
    configs = await services.store.llm_configs(caller.user.user_id)
    if not configs:
        raise ApiError(
            400, "llm_not_configured", "LLM configuration not found. Please configure your LLM settings first."
        )
    chosen = configs[0]  # the default one when there is one (ordered by is_default)
    if not services.settings.allows_llm_base_url(chosen["base_url"]):  # made before the operator restricted them
        raise ApiError(
            400,
            "llm_not_configured",
            "The LLM configuration points at a provider this server's operator does not allow.",
        )
    api_key = services.secrets.open(chosen["api_key_sealed"]) if chosen["api_key_sealed"] else None
    return LlmSettings(
        provider=chosen["provider"],
        model=chosen["model"],
        base_url=chosen["base_url"],
        api_key=api_key,
        max_tokens=chosen["max_tokens"],
        temperature=chosen["temperature"] if temperature is None else temperature,
    )  # INPUT-005


# --- the annotated dependencies, in the contract's order ---------------------------------------------------------

# First the authenticated caller, or 401 before any other check: `Authenticated`, imported above from the controller
# (controller/auth.py), whose routes ask for it too; the chat API and the channels take it from here.


async def _opened_project(project_id: str, request: Request, caller: Authenticated) -> AgentService:
    return await opened_project(project_id, request, caller)


# The project's service, once the caller is known: 403 without access, 404 unknown, 403 not opened.
OpenedProject = Annotated[AgentService, Depends(_opened_project)]


def _session_id_in_path(session_id: str) -> str:
    return valid_session_id(session_id)


# The path's session id, valid (SESSION-003): an input check, after the project's.
SessionIdInPath = Annotated[str, Depends(_session_id_in_path)]


def _history_limit(request: Request) -> int:
    return history_limit(request)


# The history's `limit` query parameter (HISTORY-006, HISTORY-007): an input check.
HistoryLimit = Annotated[int, Depends(_history_limit)]


async def _owned_session(caller: Authenticated, service: OpenedProject, session_id: SessionIdInPath) -> ChatSession:
    return await owned_session(service, session_id, caller)


# The caller's session named in the path (ISOLATION-001): declared after the route's input checks, which come first.
OwnedSession = Annotated[ChatSession, Depends(_owned_session)]
