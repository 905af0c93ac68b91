"""Requests and answers: URLs under the controller or the chat prefix, the bearer token, answers parsed into the
operation's type and refusals into typed errors. Nothing here retries: a chat request may have run a turn, and
sending it again would run another one (the transports are httpx's defaults, which retry nothing)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, TypeAdapter

from .errors import error_for

# gns3-server 3.1.0a2 and later's chat prefix (one of the contract's KNOWN_CHAT_PREFIXES; a test holds it so).
GNS3_CHAT_PREFIX = "/v3/copilot/projects/{project_id}/chat"

T = TypeVar("T")


@dataclass(frozen=True)
class Request:
    """One call, as the generated operations describe it."""

    method: str
    path: str  # under the chat prefix when `chat`, else the controller's own path
    chat: bool
    path_params: dict[str, str] = field(default_factory=dict)
    query: dict[str, Any] = field(default_factory=dict)
    body: Any = None


def body_json(body: Any) -> Any:
    """A model as the JSON the contract describes (unset optional members left out), or a plain value as it is."""
    if isinstance(body, BaseModel):
        return body.model_dump(mode="json", exclude_unset=True, by_alias=True)
    return body


class Settings:
    """Where the server is, how to reach the chat API there, and the token."""

    def __init__(self, base_url: str, token: str | None, chat_prefix: str) -> None:
        if "{project_id}" not in chat_prefix:
            raise ValueError(f"chat_prefix {chat_prefix!r} must contain {{project_id}}")
        self.base_url, self.token, self.chat_prefix = base_url.rstrip("/"), token, chat_prefix.rstrip("/")

    def url(self, request: Request) -> str:
        # Each value is one path segment, whatever it holds (a session id may be any string the caller chose).
        params = {name: quote(str(value), safe="") for name, value in request.path_params.items()}
        path = request.path.format(**params)
        if request.chat:
            return self.base_url + self.chat_prefix.format(project_id=params["project_id"]) + path
        return self.base_url + path

    def headers(self, streaming: bool = False) -> dict[str, str]:
        headers = {"Accept": "text/event-stream" if streaming else "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def build(self, client: httpx.Client | httpx.AsyncClient, request: Request, streaming: bool) -> httpx.Request:
        query = {k: v for k, v in request.query.items() if v is not None}
        return client.build_request(
            request.method,
            self.url(request),
            params=query or None,
            json=body_json(request.body) if request.body is not None else None,
            headers=self.headers(streaming),
        )


def parsed(response: httpx.Response, adapter: TypeAdapter[T] | None) -> T | None:
    """The answer's body as the operation's type; a refusal as its typed error."""
    if response.is_error:
        raise error_for(response.status_code, response.text, response.headers)
    if adapter is None or response.status_code == 204:
        return None
    return adapter.validate_json(response.content)
