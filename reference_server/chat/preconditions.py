"""Every check of a chat request, in order, before any stream begins (PRECHECK-001).

Routes take raw path and query strings and call these in a fixed order, so that authentication comes first
(AUTH-001) and FastAPI never answers a malformed parameter before the caller is known.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal, get_args, get_origin

from fastapi import Request
from pydantic import BaseModel, ValidationError

from gns3_copilot_generated.api.chat_session import ChatSession
from gns3_copilot_generated.api.session_id import SessionId
from gns3_copilot_generated.constants import HISTORY_LIMIT_DEFAULT, HISTORY_LIMIT_MAX, HISTORY_LIMIT_MIN
from reference_server.agent.context import LlmSettings
from reference_server.agent.service import AgentService
from reference_server.auth import Caller
from reference_server.controller.common import require_project_privilege
from reference_server.controller.roles import CHAT_PRIVILEGE
from reference_server.errors import ApiError, from_pydantic, invalid_json, validation_failed
from reference_server.json_input import json_problem

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


def _booleans_not_sent_as_booleans(model: type[BaseModel], data: dict[str, Any]) -> list[dict[str, Any]]:
    """A field whose only values are booleans (`stream: true`) must be a JSON boolean: pydantic, even strict, takes
    1 or 1.0 for `Literal[True]`, because 1 == True in Python (INPUT-004)."""
    problems = []
    for name, info in model.model_fields.items():
        allowed = get_args(info.annotation) if get_origin(info.annotation) is Literal else ()
        if allowed and all(isinstance(a, bool) for a in allowed) and name in data and not isinstance(data[name], bool):
            problems.append({"loc": ["body", name], "msg": f"{name} must be a JSON boolean", "type": "bool_type"})
    return problems


async def json_value(request: Request) -> Any:
    """The body as JSON: 400 for a body that is not JSON (INPUT-009), or not JSON this server can take
    (json_input.py). Reading the body may also raise 413 (body_limit.py)."""
    raw = await request.body()
    try:
        data = json.loads(raw.decode("utf-8"))  # UTF-8 only (RFC 8259); json.loads(bytes) would guess UTF-16 or -32
    except UnicodeDecodeError as exc:
        raise invalid_json("it is not UTF-8 text") from exc
    except RecursionError as exc:
        raise invalid_json("arrays and objects are nested too deeply") from exc
    except ValueError as exc:  # JSONDecodeError, and integers of more than 4300 digits
        raise invalid_json(str(exc)) from exc
    if (problem := json_problem(data)) is not None:
        raise invalid_json(problem)
    return data


async def json_body(request: Request, model: type[BaseModel]) -> Any:
    """The body as JSON (json_value), then 422 for one that does not fit the model (INPUT-006, -007), JSON types
    taken as they are: no string for a number, no number for a boolean (INPUT-003, INPUT-004)."""
    data = await json_value(request)
    raw = await request.body()  # Starlette keeps it: read once
    if not isinstance(data, dict):
        raise validation_failed([{"loc": ["body"], "msg": "The body must be a JSON object", "type": "model_type"}])
    booleans = _booleans_not_sent_as_booleans(model, data)
    try:
        value = model.model_validate_json(raw, strict=True)
    except ValidationError as exc:
        found = [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
        named = {tuple(e["loc"][:2]) for e in found}
        raise validation_failed(found + [b for b in booleans if tuple(b["loc"]) not in named]) from exc
    if booleans:
        raise validation_failed(booleans)
    return value


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
        raise validation_failed(
            [
                {
                    "loc": ["query", "limit"],
                    "msg": f"limit must be an integer from {low} to {high}",
                    "type": "value_error",
                }
            ]
        )
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
    api_key = services.secrets.open(chosen["api_key_sealed"]) if chosen["api_key_sealed"] else None
    return LlmSettings(
        provider=chosen["provider"],
        model=chosen["model"],
        base_url=chosen["base_url"],
        api_key=api_key,
        max_tokens=chosen["max_tokens"],
        temperature=chosen["temperature"] if temperature is None else temperature,
    )  # INPUT-005
