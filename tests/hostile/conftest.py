"""One in-process reference server per module, with the real ids of everything its routes name, and the table of its
endpoints: the chat operations of spec/openapi.yaml and the controller routes of the app."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute, iter_route_contexts
from pydantic import BaseModel
from starlette.routing import compile_path

import gns3_copilot_spec as spec
from gns3_copilot_generated.constants import CHANNEL_PATHS
from reference_server.app import create_app
from reference_server.controller.auth import authenticated
from reference_server.controller.llm_configs import LlmConfigFields
from reference_server.settings import Settings
from tests.reference_server.conftest import (  # noqa: F401 - `lab`: an in-process server
    Lab,
    ServerProcess,
    lab,
    make_settings,
    start_server_process,
)

HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
FAKE_LLM_TURN = "[[fake-llm:plain]]"

# A valid body per endpoint that reads one, which each test spoils in one way; `{ids}` fields are filled in.
CHAT_BODIES = {"streamChat": {"message": f"hostile {FAKE_LLM_TURN}"}, "renameSession": {"title": "renamed"}}
ACE = {"ace_type": "user", "path": "/projects", "user_id": "{user_id}", "role_id": "{role_id}"}
LLM_CONFIG = {"name": "hostile", "provider": "fake", "model": "fake-model"}
CONTROLLER_BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/v3/access/users/authenticate"): {"username": "admin", "password": "admin"},
    ("POST", "/v3/access/users"): {"username": "hostile-user", "password": "password-1"},
    ("PUT", "/v3/access/users/{user_id}"): {"full_name": "Hostile"},
    ("POST", "/v3/access/acl"): ACE,
    ("PUT", "/v3/access/acl/{ace_id}"): ACE,
    ("POST", "/v3/projects"): {"name": "hostile-project"},
    ("POST", "/v3/access/users/{user_id}/llm-model-configs"): LLM_CONFIG,
    ("PUT", "/v3/access/users/{user_id}/llm-model-configs/{config_id}"): LLM_CONFIG,
}
# The route's body is a plain dict, validated in the handler against this model.
BODY_MODELS = {("PUT", "/v3/access/users/{user_id}/llm-model-configs/{config_id}"): LlmConfigFields}


@dataclass
class Endpoint:
    method: str
    template: str  # the path, with {parameters}
    authenticated: bool
    body: dict[str, Any] | None  # a valid body, None when the endpoint reads none
    fields: dict[str, set[str]] = field(default_factory=dict)  # body member -> the JSON types it takes

    def __str__(self) -> str:
        return f"{self.method} {self.template}"


@dataclass
class World:
    client: httpx.AsyncClient
    token: dict[str, str]
    login: Callable[[], Awaitable[dict[str, str]]]
    ids: dict[str, str]  # path parameter -> a real id
    endpoints: list[Endpoint]
    routes: list[tuple[str, set[str]]]  # every path template the app serves, with its methods
    matchers: list[tuple[re.Pattern, set[str]]]  # every route's path, matched as the app does (convertors too)

    def path(self, endpoint: Endpoint, **ids: str) -> str:
        return endpoint.template.format(**{**self.ids, **ids})

    async def token_for(self, endpoint: Endpoint) -> dict[str, str]:
        """The world's token, but a token of its own for an endpoint that changes something and names nothing
        (logout): the caller itself is what it acts on."""
        acts_on_caller = endpoint.body is None and endpoint.method != "GET" and "{" not in endpoint.template
        return await self.login() if acts_on_caller else self.token

    def unknown_ids(self, endpoint: Endpoint) -> dict[str, str]:
        """Ids of nothing, for an endpoint that reads no body: with real ones it would act (delete, close...)."""
        return {name: str(uuid.uuid4()) for name in self.ids if "{" + name + "}" in endpoint.template}

    def allowed(self, path: str) -> set[str]:
        """The methods some route serves at this concrete path."""
        return {m for regex, methods in self.matchers if regex.match(path) for m in methods}

    def body(self, endpoint: Endpoint, **changes: Any) -> dict[str, Any]:
        filled = {k: v.format(**self.ids) if isinstance(v, str) else v for k, v in (endpoint.body or {}).items()}
        return {**filled, **changes}


# --- the JSON types each body member takes, from its JSON Schema --------------------------------------------------


def json_type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return {int: "integer", float: "number", str: "string", list: "array", dict: "object"}[type(value)]


def json_types(schema: dict[str, Any], resolve) -> set[str]:
    schema = resolve(schema)
    if "type" in schema:
        return set(schema["type"]) if isinstance(schema["type"], list) else {schema["type"]}
    if "const" in schema:
        return {json_type_of(schema["const"])}
    if "enum" in schema:
        return {json_type_of(v) for v in schema["enum"]}
    branches = schema.get("anyOf") or schema.get("oneOf")
    if branches:
        return set().union(*(json_types(b, resolve) for b in branches))
    return {"null", "boolean", "integer", "number", "string", "array", "object"}


def _file_resolver(base: Path):
    def resolve(schema: dict[str, Any]) -> dict[str, Any]:
        if "$ref" not in schema:
            return schema
        file_part, _, fragment = schema["$ref"].partition("#")
        target = spec.load_document((base.parent / file_part).resolve())
        for part in filter(None, fragment.split("/")):
            target = target[part]
        return target

    return resolve


def _fields(schema: dict[str, Any], resolve) -> dict[str, set[str]]:
    return {name: json_types(member, resolve) for name, member in schema.get("properties", {}).items()}


# --- the endpoints ------------------------------------------------------------------------------------------------


def chat_endpoints() -> list[Endpoint]:
    """Every operation of the contract; all of them need a bearer token (the document's global security)."""
    found = []
    for template, item in spec.chat_api_only(spec.load_openapi())["paths"].items():
        for method, operation in item.items():
            if method.upper() not in HTTP_METHODS:
                continue
            fields: dict[str, set[str]] = {}
            if "requestBody" in operation:
                ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
                path = (spec.OPENAPI_PATH.parent / ref).resolve()
                fields = _fields(spec.load_document(path), _file_resolver(path))
            body = CHAT_BODIES.get(operation["operationId"]) if "requestBody" in operation else None
            found.append(Endpoint(method.upper(), template, True, body, fields))
    return found


def _api_routes(app) -> list[tuple[APIRoute | Any, str, set[str], re.Pattern]]:
    """(route, path, methods, regex) of every route of the app (FastAPI nests included routers: iter_route_contexts):
    the path as the API documents it (`{user_id}`, not the route's `{user_id:user_id}` with its convertor), and the
    regex that matches a concrete path as the app does (its convertors too)."""
    return [
        (c.route, re.sub(r"\{(\w+):\w+\}", r"{\1}", c.path), set(c.methods or ()), compile_path(c.path)[0])
        for c in iter_route_contexts(app.routes)
        if c.path
    ]


CHANNEL_TEMPLATES = {
    path
    for path, item in spec.load_openapi()["paths"].items()
    if any(isinstance(op, dict) and spec.is_channel_operation(op) for op in item.values())
}


def controller_endpoints(app, chat_templates: set[str]) -> list[Endpoint]:
    found = []
    for route, path, methods, _regex in _api_routes(app):
        if not isinstance(route, APIRoute) or path in chat_templates or path in CHANNEL_TEMPLATES:
            continue  # the channels answer in their protocols' own shapes (tests/channels)
        for method in sorted(methods):
            key = (method, path)
            needs_token = any(d.call is authenticated for d in route.dependant.dependencies)
            fields: dict[str, set[str]] = {}
            if route.body_field is not None:
                assert key in CONTROLLER_BODIES, f"{key}: a new route with a body needs its valid body in the table"
                model = BODY_MODELS.get(key, route.body_field.field_info.annotation)
                assert isinstance(model, type) and issubclass(model, BaseModel), key
                schema = model.model_json_schema()
                fields = _fields(schema, lambda s, root=schema: _local_ref(s, root))
            found.append(Endpoint(method, path, needs_token, CONTROLLER_BODIES.get(key), fields))
    return found


def _local_ref(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    if "$ref" not in schema:
        return schema
    target = root
    for part in filter(None, schema["$ref"].partition("#")[2].split("/")):
        target = target[part]
    return target


# --- the world ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def world(tmp_path_factory) -> AsyncIterator[World]:
    app = create_app(Settings(data_dir=tmp_path_factory.mktemp("hostile") / "data", heartbeat_interval=15.0))
    async with app.router.lifespan_context(app):
        # raise_app_exceptions=False: a crash must show as the 500 it answers, to be judged with the rest
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://reference", timeout=30) as client:
            lab = await Lab(client).setup()
            other_id, _ = await lab.add_user("hostile-other", llm=False, access=None)
            ace_id = await lab.grant(other_id, "/projects", role="Auditor")
            me = (await client.get("/v3/access/users/me", headers=lab.headers)).json()
            configs = await client.get(f"/v3/access/users/{me['user_id']}/llm-model-configs", headers=lab.headers)
            stream = await lab.stream(f"start {FAKE_LLM_TURN}")
            assert stream.status == 200 and stream.types[-1] == "done", stream.text
            ids = {
                "project_id": lab.project_id,
                "session_id": stream.session_id,
                "user_id": me["user_id"],
                "config_id": configs.json()["configs"][0]["config_id"],
                "ace_id": ace_id,
                "role_id": await lab.role_id("Auditor"),
            }
            chat = chat_endpoints()
            served = {(e.method, e.template) for e in chat}
            api_routes = _api_routes(app)
            routes = [(path, methods) for _, path, methods, _ in api_routes]
            app_chat = {(m, p) for p, methods in routes for m in methods if p in {e.template for e in chat}}
            assert served == app_chat, "the app serves exactly the contract's chat operations"
            endpoints = chat + controller_endpoints(app, {e.template for e in chat})
            matchers = [(regex, methods) for _, _, methods, regex in api_routes]
            yield World(client, lab.headers, lab.login, ids, endpoints, routes, matchers)


# --- judging one answer -------------------------------------------------------------------------------------------


def problems_of(response: httpx.Response, *, want_401: bool) -> list[str]:
    """What is wrong with an answer to hostile input: a 5xx, an error without the error body, a caller without a
    valid token let past authentication (a size refusal excepted, INPUT-010)."""
    status, found = response.status_code, []
    if status >= 500:
        found.append(f"answered {status}")
    if want_401 and status not in (401, 413):
        found.append(f"answered {status} to a caller without a valid token, not 401")
    if status >= 400 and response.request.method != "HEAD":  # an answer to HEAD has no body
        try:
            body = json.loads(response.content)
        except ValueError:
            body = None
        openai_path = CHANNEL_PATHS["openai"] + "/" in response.request.url.path
        if openai_path and isinstance(body, dict) and set(body) == {"error"}:
            body = body["error"]  # the OpenAI channel's error body (OPENAI-004), with the contract's code
        if not response.headers.get("content-type", "").startswith("application/json"):
            found.append(f"{status} is {response.headers.get('content-type')!r}, not application/json")
        if not (isinstance(body, dict) and isinstance(body.get("message"), str) and isinstance(body.get("code"), str)):
            found.append(f"{status} body is not {{message, code}}: {response.content[:200]!r}")
        elif status == 401 and not response.headers.get("www-authenticate", "").startswith("Bearer"):
            found.append("401 without WWW-Authenticate: Bearer")
        elif (
            status == 422
            and not openai_path
            and not all(
                isinstance(e, dict) and isinstance(e.get("loc"), list) and {"msg", "type"} <= set(e)
                for e in (body.get("details") or {}).get("errors", [None])
            )
        ):
            found.append(f"422 without details.errors of (loc, msg, type): {body}")
    return [f"{response.request.method} {response.request.url.raw_path.decode()[:160]}: {p}" for p in found]


def scripted_server(tmp_path_factory: pytest.TempPathFactory, script: dict[str, Any]) -> Iterator[ServerProcess]:
    """A reference server process that also plays `script` (the fake LLM's format), stopped when done. Written as
    JSON, which YAML reads: its \\u escapes keep characters a YAML plain text would take for line breaks (U+0085)."""
    scripts = tmp_path_factory.mktemp("scripts")
    (scripts / f"{script['name']}.yaml").write_text(json.dumps(script), encoding="utf-8")
    process = start_server_process(tmp_path_factory.mktemp("server") / "data", "--fake-llm-scripts", str(scripts))
    try:
        yield process
    finally:
        process.stop()
