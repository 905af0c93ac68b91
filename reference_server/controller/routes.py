"""The controller surface around the chat API, shaped like gns3-server's (see ../shared notes' runbook):
authentication, users, projects and per-user LLM model configurations."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

import gns3_copilot_spec as spec
from reference_server.agent.tools import write_default_topology
from reference_server.auth import Caller, authenticated, require_superadmin
from reference_server.errors import ApiError, from_pydantic, unauthorized

from .security import hash_password, verify_password
from .store import Conflict, Project

router = APIRouter(prefix="/v3")
Authenticated = Annotated[Caller, Depends(authenticated)]


def _services(request: Request):
    return request.app.state.services


# --- version and authentication ---------------------------------------------------------------------------


@router.get("/version")
async def version() -> dict[str, Any]:
    return {
        "version": spec.contract_version(),
        "local": True,
        "controller_host": None,
        "implementation": "gns3-copilot-chat reference server",
    }


class Credentials(BaseModel):
    username: str
    password: str


@router.post("/access/users/authenticate")
async def authenticate(body: Credentials, request: Request) -> dict[str, Any]:
    services = _services(request)
    user = await services.store.user_by_name(body.username)
    if user is None or not verify_password(user.password_hash, body.password):
        raise unauthorized("Authentication was unsuccessful.")
    return {
        "access_token": services.tokens.issue(user.user_id),
        "token_type": "bearer",
        "expires_in": services.tokens.ttl_seconds,
    }


# --- users ------------------------------------------------------------------------------------------------


class NewUser(BaseModel):
    username: Annotated[str, Field(min_length=3, max_length=100, pattern=r"^[a-zA-Z0-9_-]+$")]
    password: Annotated[str, Field(min_length=8, max_length=100)]
    full_name: str | None = None
    email: str | None = None
    is_superadmin: bool = False


@router.get("/access/users/me")
async def me(caller: Authenticated) -> dict[str, Any]:
    return caller.user.public()


@router.get("/access/users")
async def list_users(caller: Authenticated, request: Request) -> list[dict[str, Any]]:
    require_superadmin(caller)
    return [user.public() for user in await _services(request).store.list_users()]


@router.post("/access/users", status_code=201)
async def create_user(body: NewUser, caller: Authenticated, request: Request) -> dict[str, Any]:
    require_superadmin(caller)
    try:
        user = await _services(request).store.add_user(
            body.username,
            hash_password(body.password),
            is_superadmin=body.is_superadmin,
            full_name=body.full_name,
            email=body.email,
        )
    except Conflict as exc:
        raise ApiError(400, "bad_request", str(exc)) from exc
    return user.public()


@router.delete("/access/users/{user_id}", status_code=204)
async def delete_user(user_id: str, caller: Authenticated, request: Request) -> Response:
    """gns3-server's user deletion (superadmin only; a superadmin cannot delete itself)."""
    require_superadmin(caller)
    if user_id == caller.user.user_id:
        raise ApiError(403, "forbidden", "Permission denied: a superadmin cannot delete itself")
    if not await _services(request).store.remove_user(user_id):
        raise ApiError(404, "user_not_found", f"User ID {user_id} doesn't exist")
    return Response(status_code=204)


# --- projects ---------------------------------------------------------------------------------------------


class NewProject(BaseModel):
    name: Annotated[str, Field(min_length=1, max_length=255)]


def _project_json(project: Project, request: Request) -> dict[str, Any]:
    return {
        "project_id": project.project_id,
        "name": project.name,
        "status": project.status,
        "path": str(_services(request).project_dir(project.project_id)),
        "created_at": project.created_at,
    }


async def _project(project_id: str, request: Request) -> Project:
    project = await _services(request).store.project(project_id)
    if project is None:
        raise ApiError(404, "project_not_found", f"Project ID {project_id} doesn't exist")
    return project


@router.post("/projects", status_code=201)
async def create_project(body: NewProject, _: Authenticated, request: Request) -> dict[str, Any]:
    services = _services(request)
    try:
        project = await services.store.add_project(body.name)
    except Conflict as exc:
        raise ApiError(409, "conflict", str(exc)) from exc
    directory = services.project_dir(project.project_id)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "project.gns3").write_text(
        json.dumps({"project_id": project.project_id, "name": project.name, "type": "topology"}, indent=2)
    )
    write_default_topology(directory)
    await services.manager.open_project(project.project_id, directory)
    return _project_json(project, request)


@router.get("/projects")
async def list_projects(_: Authenticated, request: Request) -> list[dict[str, Any]]:
    return [_project_json(p, request) for p in await _services(request).store.list_projects()]


@router.get("/projects/{project_id}")
async def get_project(project_id: str, _: Authenticated, request: Request) -> dict[str, Any]:
    return _project_json(await _project(project_id, request), request)


@router.post("/projects/{project_id}/open")
async def open_project(project_id: str, _: Authenticated, request: Request) -> dict[str, Any]:
    services = _services(request)
    await _project(project_id, request)
    await services.manager.open_project(project_id, services.project_dir(project_id))  # migrates (MIGRATION-001)
    await services.store.set_project_status(project_id, "opened")
    return _project_json(await _project(project_id, request), request)


@router.post("/projects/{project_id}/close", status_code=204)
async def close_project(project_id: str, _: Authenticated, request: Request) -> Response:
    services = _services(request)
    await _project(project_id, request)
    await services.store.set_project_status(project_id, "closed")
    await services.manager.close_project(project_id)
    return Response(status_code=204)


@router.delete("/projects/{project_id}", status_code=204)
async def delete_project(project_id: str, _: Authenticated, request: Request) -> Response:
    services = _services(request)
    await _project(project_id, request)
    await services.store.remove_project(project_id)
    await services.manager.delete_project(project_id, services.project_dir(project_id))  # DB-007
    return Response(status_code=204)


# --- LLM model configurations -------------------------------------------------------------------------------

Provider = Literal["fake", "openai"]


class LlmConfigFields(BaseModel):
    model_config = ConfigDict(extra="ignore")  # GNS3 clients send more (context_strategy, ...)

    name: Annotated[str, Field(min_length=1, max_length=100)]
    model_type: Literal["text", "vision", "stt", "tts", "multimodal", "embedding", "reranking", "other"] = "text"
    provider: Provider
    base_url: Annotated[str | None, Field(min_length=1)] = None
    model: Annotated[str, Field(min_length=1)]
    temperature: Annotated[float, Field(ge=0, le=2)] = 0.7
    max_tokens: Annotated[int | None, Field(gt=0)] = None
    api_key: str | None = None
    context_limit: Annotated[int | None, Field(gt=0)] = None
    copilot_mode: str | None = "teaching_assistant"
    is_default: bool = False

    @model_validator(mode="after")
    def _openai_needs_base_url(self) -> LlmConfigFields:
        if self.provider == "openai" and not self.base_url:
            raise ValueError("provider 'openai' needs a base_url (an OpenAI-compatible server)")
        return self


def _public_config(row: dict[str, Any]) -> dict[str, Any]:
    """A configuration as the API shows it: the API key is never returned, only whether one is set."""
    shown = {k: v for k, v in row.items() if k != "api_key_sealed"}
    return {**shown, "is_default": bool(row["is_default"]), "api_key": None, "has_api_key": bool(row["api_key_sealed"])}


async def _config_owner(user_id: str, caller: Caller, request: Request) -> None:
    if caller.user.user_id != user_id:
        require_superadmin(caller)
    if await _services(request).store.user_by_id(user_id) is None:
        raise ApiError(404, "user_not_found", f"User ID {user_id} doesn't exist")


@router.post("/access/users/{user_id}/llm-model-configs", status_code=201)
async def create_llm_config(
    user_id: str, body: LlmConfigFields, caller: Authenticated, request: Request
) -> dict[str, Any]:
    await _config_owner(user_id, caller, request)
    services = _services(request)
    values = body.model_dump(exclude={"api_key"})
    values["api_key_sealed"] = services.secrets.seal(body.api_key) if body.api_key else None
    return _public_config(await services.store.add_llm_config(user_id, values))


@router.get("/access/users/{user_id}/llm-model-configs")
async def list_llm_configs(user_id: str, caller: Authenticated, request: Request) -> dict[str, Any]:
    await _config_owner(user_id, caller, request)
    configs = [_public_config(row) for row in await _services(request).store.llm_configs(user_id)]
    default = next((c for c in configs if c["is_default"]), configs[0] if configs else None)
    return {"configs": configs, "default_config": default, "total": len(configs)}


@router.put("/access/users/{user_id}/llm-model-configs/{config_id}")
async def update_llm_config(
    user_id: str, config_id: str, body: Annotated[dict[str, Any], Body()], caller: Authenticated, request: Request
) -> dict[str, Any]:
    """A partial update, validated as a whole: the merged configuration must be one POST would accept."""
    await _config_owner(user_id, caller, request)
    services = _services(request)
    current = await services.store.llm_config(user_id, config_id)
    if current is None:
        raise ApiError(404, "not_found", f"LLM model configuration {config_id} doesn't exist")
    merged = {key: current[key] for key in LlmConfigFields.model_fields if key in current}
    try:
        validated = LlmConfigFields.model_validate({**merged, **body})
    except ValidationError as exc:
        raise from_pydantic(exc, ("body",)) from exc
    values = validated.model_dump(exclude={"api_key"})
    if "api_key" in body:
        values["api_key_sealed"] = services.secrets.seal(validated.api_key) if validated.api_key else None
    return _public_config(await services.store.update_llm_config(user_id, config_id, values))


@router.delete("/access/users/{user_id}/llm-model-configs/{config_id}", status_code=204)
async def delete_llm_config(user_id: str, config_id: str, caller: Authenticated, request: Request) -> Response:
    await _config_owner(user_id, caller, request)
    if not await _services(request).store.remove_llm_config(user_id, config_id):
        raise ApiError(404, "not_found", f"LLM model configuration {config_id} doesn't exist")
    return Response(status_code=204)
