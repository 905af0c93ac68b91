"""Per-user LLM model configurations, shaped like gns3-server's; API keys are sealed at rest (SECRET-001)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Request, Response
from pydantic import ConfigDict, Field, ValidationError, model_validator

from gns3_copilot_generated.constants import LLM_CONFIG_INTEGER_MAX
from reference_server.errors import ApiError, from_pydantic, invalid_field

from .auth import Authenticated, Caller, require_superadmin
from .bodies import JsonInt, StrictBody
from .common import services_of

router = APIRouter(prefix="/v3")


# --- LLM model configurations -------------------------------------------------------------------------------

Provider = Literal["fake", "openai"]


class OpenAiNeedsBaseUrl(ValueError):
    """The one rule across fields: a configuration with `provider: openai` has a `base_url`."""

    def __init__(self) -> None:
        super().__init__("provider 'openai' needs a base_url (an OpenAI-compatible server)")


class LlmConfigFields(StrictBody):
    model_config = ConfigDict(extra="ignore")  # GNS3 clients may send members beyond these

    name: Annotated[str, Field(min_length=1, max_length=100)]
    model_type: Literal["text", "vision", "stt", "tts", "multimodal", "embedding", "reranking", "other"] = "text"
    provider: Provider
    base_url: Annotated[str | None, Field(min_length=1)] = None
    model: Annotated[str, Field(min_length=1)]
    temperature: Annotated[float, Field(ge=0, le=2)] = 0.7
    max_tokens: Annotated[JsonInt | None, Field(gt=0, le=LLM_CONFIG_INTEGER_MAX)] = None
    api_key: str | None = None
    context_limit: Annotated[JsonInt | None, Field(gt=0, le=LLM_CONFIG_INTEGER_MAX)] = None  # a 64-bit column
    copilot_mode: str | None = "teaching_assistant"
    is_default: bool = False
    # Validated as the contract's schema says, not kept: the reference server does not trim the context.
    context_strategy: Literal["conservative", "balanced", "aggressive"] = "balanced"

    @model_validator(mode="after")
    def _openai_needs_base_url(self) -> LlmConfigFields:
        if self.provider == "openai" and not self.base_url:
            raise OpenAiNeedsBaseUrl
        return self


# The members gns3-server 3.1 nests under `config` in its answers (the request takes them flat).
CONFIG_VALUES = ("provider", "base_url", "model", "temperature", "max_tokens", "context_limit", "copilot_mode")


def _public_config(row: dict[str, Any]) -> dict[str, Any]:
    """A configuration as gns3-server shows it (the contract's LlmModelConfig, CONTROLLER-001): the values under
    `config`, the API key never returned (`api_key: null`), and, beyond gns3-server, whether one is set."""
    return {
        "config_id": row["config_id"],
        "name": row["name"],
        "model_type": row["model_type"],
        "config": {
            **{key: row[key] for key in CONFIG_VALUES},
            "api_key": None,
            "context_strategy": "balanced",  # gns3-server's default; the reference server does not trim the context
        },
        "user_id": row["user_id"],
        "group_id": None,
        "is_default": bool(row["is_default"]),
        "source": "user",
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
        "has_api_key": bool(row["api_key_sealed"]),
    }


async def _config_owner(user_id: str, caller: Caller, request: Request) -> None:
    if caller.user.user_id != user_id:
        require_superadmin(caller)
    if await services_of(request).store.user_by_id(user_id) is None:
        raise ApiError(404, "user_not_found", f"User ID {user_id} doesn't exist")


def _allowed_base_url(request: Request, base_url: str | None) -> None:
    """An operator's allow-list (--llm-base-url-allow): the server calls a configuration's base_url for its user,
    so a base_url outside every allowed prefix is refused 422 naming it."""
    if not services_of(request).settings.allows_llm_base_url(base_url):
        raise invalid_field(["body", "base_url"], "this server calls only LLM providers its operator allows")


@router.post("/access/users/{user_id}/llm-model-configs", status_code=201)
async def create_llm_config(
    user_id: str, body: LlmConfigFields, caller: Authenticated, request: Request
) -> dict[str, Any]:
    await _config_owner(user_id, caller, request)
    _allowed_base_url(request, body.base_url)
    services = services_of(request)
    values = body.model_dump(exclude={"api_key", "context_strategy"})
    values["api_key_sealed"] = services.secrets.seal(body.api_key) if body.api_key else None
    return _public_config(await services.store.add_llm_config(user_id, values))


@router.get("/access/users/{user_id}/llm-model-configs")
async def list_llm_configs(user_id: str, caller: Authenticated, request: Request) -> dict[str, Any]:
    await _config_owner(user_id, caller, request)
    configs = [_public_config(row) for row in await services_of(request).store.llm_configs(user_id)]
    default = next((c for c in configs if c["is_default"]), configs[0] if configs else None)
    return {"configs": configs, "default_config": default, "total": len(configs)}


@router.put("/access/users/{user_id}/llm-model-configs/{config_id}")
async def update_llm_config(
    user_id: str, config_id: str, body: Annotated[dict[str, Any], Body()], caller: Authenticated, request: Request
) -> dict[str, Any]:
    """A partial update, validated as a whole: the merged configuration must be one POST would accept."""
    await _config_owner(user_id, caller, request)
    services = services_of(request)
    current = await services.store.llm_config(user_id, config_id)
    if current is None:
        raise ApiError(404, "not_found", f"LLM model configuration {config_id} doesn't exist")
    merged = {key: current[key] for key in LlmConfigFields.model_fields if key in current}
    merged["is_default"] = bool(current["is_default"])  # SQLite gives 0 or 1; the strict model takes booleans only
    try:
        validated = LlmConfigFields.model_validate({**merged, **body})
    except ValidationError as exc:
        errors = exc.errors()
        if len(errors) == 1 and isinstance(errors[0].get("ctx", {}).get("error"), OpenAiNeedsBaseUrl):
            # every field sent is valid, the whole is not: the change conflicts with the stored values
            message = f"The change conflicts with the configuration: {errors[0]['ctx']['error']}"
            raise ApiError(409, "conflict", message) from exc
        raise from_pydantic(exc, ("body",)) from exc
    _allowed_base_url(request, validated.base_url)
    values = validated.model_dump(exclude={"api_key", "context_strategy"})
    if "api_key" in body:
        values["api_key_sealed"] = services.secrets.seal(validated.api_key) if validated.api_key else None
    return _public_config(await services.store.update_llm_config(user_id, config_id, values))


@router.delete("/access/users/{user_id}/llm-model-configs/{config_id}", status_code=204)
async def delete_llm_config(user_id: str, config_id: str, caller: Authenticated, request: Request) -> Response:
    await _config_owner(user_id, caller, request)
    if not await services_of(request).store.remove_llm_config(user_id, config_id):
        raise ApiError(404, "not_found", f"LLM model configuration {config_id} doesn't exist")
    return Response(status_code=204)
