"""The controller surface around the chat API (authentication, users, projects, LLM model configurations),
its effect on the chat endpoints, the settings and the command line of the reference server."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from click.testing import CliRunner
from pydantic import ValidationError

import gns3_copilot_spec as spec
from gns3_copilot_generated.constants import DB_LOCATION, LLM_CONFIG_INTEGER_MAX
from reference_server.app import create_app
from reference_server.cli import main as cli_main
from reference_server.settings import ENV_PREFIX, Settings, load_settings
from tests.reference_server.conftest import REPO_ROOT, Lab, in_process_lab

pytestmark = pytest.mark.anyio

PLAIN_REPLY = "The lab looks healthy."  # fake_llm/scripts/plain.yaml, its one step
SETTING_NAMES = [
    "host",
    "port",
    "data-dir",
    "chat-prefix",
    "heartbeat-interval",
    "title-counts-in-stats",
    "admin-username",
    "admin-password",
]


# --- helpers ------------------------------------------------------------------------------------------------


def chat_calls(prefix: str, session_id: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    """One request per chat endpoint: (method, path, json body)."""
    session = f"{prefix}/sessions/{session_id}"
    return [
        ("POST", f"{prefix}/stream", {"message": "hi [[fake-llm:plain]]", "session_id": session_id}),
        ("GET", f"{prefix}/sessions", None),
        ("GET", f"{session}/history", None),
        ("PATCH", session, {"title": "renamed"}),
        ("DELETE", session, None),
        ("PUT", f"{session}/pin", None),
        ("DELETE", f"{session}/pin", None),
        ("POST", f"{session}/abort", None),
    ]


async def answers(client: httpx.AsyncClient, calls, headers: dict[str, str]) -> list[tuple[str, str, int, Any]]:
    results = []
    for method, path, body in calls:
        response = await client.request(method, path, json=body, headers=headers)
        try:
            payload = response.json()
        except ValueError:
            payload = response.text
        results.append((method, path, response.status_code, payload))
    return results


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code, body
    assert isinstance(body["message"], str) and body["message"], body
    assert set(body) <= {"message", "code", "details"}, body
    return body


def assert_matches_contract(body: Any, schema_file: str) -> None:
    """The answer is what the contract's controller schema (spec/schemas/controller-*.json) describes."""
    errors = [error.message for error in spec.schema_validator(spec.SCHEMAS_DIR / schema_file).iter_errors(body)]
    assert not errors, (schema_file, errors, body)


def assert_unauthorized(response: httpx.Response) -> None:
    body = assert_error(response, 401, "unauthorized")
    assert set(body) == {"message", "code"}, body
    assert response.headers["www-authenticate"].startswith("Bearer"), response.headers


@asynccontextmanager
async def running_app(settings: Settings, *, raise_app_exceptions: bool = True) -> AsyncIterator[httpx.AsyncClient]:
    """The app with its lifespan, without logging anybody in (unlike `in_process_lab`)."""
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=raise_app_exceptions)
        async with httpx.AsyncClient(transport=transport, base_url="http://reference", timeout=30) as client:
            yield client


async def login(client: httpx.AsyncClient, username: str, password: str) -> httpx.Response:
    return await client.post("/v3/access/users/authenticate", json={"username": username, "password": password})


async def new_user(lab: Lab, username: str, password: str = "password-1") -> tuple[str, dict[str, str]]:
    """A non-admin user without any LLM configuration, with access to every project; returns (user_id, headers)."""
    response = await lab.client.post(
        "/v3/access/users", json={"username": username, "password": password}, headers=lab.headers
    )
    assert response.status_code == 201, response.text
    await lab.grant(response.json()["user_id"], "/projects")
    token = (await login(lab.client, username, password)).json()["access_token"]
    return response.json()["user_id"], {"Authorization": f"Bearer {token}"}


def configs_url(user_id: str, config_id: str | None = None) -> str:
    base = f"/v3/access/users/{user_id}/llm-model-configs"
    return base if config_id is None else f"{base}/{config_id}"


# --- the fake LLM as a real OpenAI-compatible server ------------------------------------------------------------


@pytest.fixture(scope="module")
def fake_llm_server() -> Iterator[str]:
    """`python -m fake_llm serve` on 127.0.0.1, a free port; yields its base URL (ending in /v1)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "fake_llm", "serve", "--host", "127.0.0.1", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        seen = []
        for _ in range(50):
            line = process.stdout.readline()
            if not line:
                break
            seen.append(line)
            match = re.search(r"fake-llm listening on (http://127\.0\.0\.1:\d+/v1) \(\d+ scripts\)", line)
            if match:
                base_url = match.group(1)
                break
        else:
            match = None
        assert match, "the fake LLM did not start: " + "".join(seen)
        for _ in range(100):
            try:
                if httpx.get(f"{base_url}/models", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        yield base_url
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGKILL)
                process.wait(10)


# --- authentication ------------------------------------------------------------------------------------------


@pytest.mark.covers("CONTROLLER-001")
async def test_authenticate_returns_a_bearer_token_or_401(lab):
    response = await login(lab.client, "admin", "admin")
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"access_token", "token_type", "expires_in"}
    assert body["token_type"] == "bearer"
    assert body["expires_in"] == 86400
    assert body["access_token"].count(".") == 2  # a JWT
    assert_matches_contract(body, "controller-token.json")
    me = await lab.client.get("/v3/access/users/me", headers={"Authorization": f"Bearer {body['access_token']}"})
    assert me.status_code == 200 and me.json()["username"] == "admin"
    assert_matches_contract(me.json(), "controller-user.json")
    version = await lab.client.get("/v3/version")
    assert version.status_code == 200
    assert_matches_contract(version.json(), "controller-version.json")

    for username, password in (("admin", "wrong-password"), ("nobody", "admin"), ("admin", ""), ("ADMIN", "admin")):
        response = await login(lab.client, username, password)
        assert_unauthorized(response)
        assert response.json()["message"] == "Authentication was unsuccessful."
        assert "access_token" not in response.text
    assert_error(
        await lab.client.post("/v3/access/users/authenticate", json={"username": "admin"}), 422, "validation_error"
    )


MALFORMED_AUTHORIZATIONS = [
    None,
    "",
    "Bearer",
    "Bearer ",
    "Bearer    ",
    "Basic YWRtaW46YWRtaW4=",
    "Token abc",
    "bearer-less",
    "Bearer x.y.z",
]


@pytest.mark.covers("AUTH-001", "AUTH-002", "ERROR-001", "ERROR-002")
async def test_chat_endpoints_refuse_a_missing_or_malformed_token(lab):
    # control: the same requests with the real token are not 401
    for method, path, status, _ in await answers(lab.client, chat_calls(lab.prefix(), str(uuid.uuid4())), lab.headers):
        assert status != 401, (method, path)
    for authorization in MALFORMED_AUTHORIZATIONS:
        headers = {} if authorization is None else {"Authorization": authorization}
        # also an unknown project and a malformed session id: authentication still comes first
        for prefix, session_id in ((lab.prefix(), str(uuid.uuid4())), (lab.prefix(str(uuid.uuid4())), "not-a-uuid")):
            for method, path, body in chat_calls(prefix, session_id):
                response = await lab.client.request(method, path, json=body, headers=headers)
                assert response.status_code == 401, (authorization, method, path, response.text)
                assert_unauthorized(response)


@pytest.mark.covers("AUTH-001", "AUTH-002")
async def test_an_expired_token_is_refused(make_settings):
    # 3 s: the lab's set-up (two Argon2 logins, a project) must not outlive the token on a loaded machine.
    async with in_process_lab(make_settings(token_ttl_seconds=3)) as lab:
        assert (await lab.client.get(f"{lab.prefix()}/sessions", headers=lab.headers)).status_code == 200
        claims = jwt.decode(lab.headers["Authorization"].split()[1], options={"verify_signature": False})
        assert claims["exp"] - claims["iat"] == 3
        await asyncio.sleep(max(0.0, claims["exp"] - time.time()) + 0.2)  # past the expiry (at most ~3.2 s)
        for method, path, body in chat_calls(lab.prefix(), str(uuid.uuid4())):
            assert_unauthorized(await lab.client.request(method, path, json=body, headers=lab.headers))
        assert_unauthorized(await lab.client.get("/v3/access/users/me", headers=lab.headers))
        # a fresh login works again
        fresh = await lab.login()
        assert (await lab.client.get(f"{lab.prefix()}/sessions", headers=fresh)).status_code == 200


def _tampered(token: str) -> str:
    """The same signature over other claims (sub of another user)."""
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["exp"] += 3600
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{header}.{forged}.{signature}"


@pytest.mark.covers("AUTH-001", "AUTH-002")
async def test_forged_and_tampered_tokens_are_refused(lab):
    token = lab.headers["Authorization"].split()[1]
    real = jwt.decode(token, options={"verify_signature": False})
    key = (lab.settings.data_dir / "secrets" / "jwt_secret_key").read_bytes().strip()
    forged_tokens = {
        "other key": jwt.encode(
            {"sub": real["sub"], "exp": real["exp"]}, "not-the-server-key-" + "x" * 32, algorithm="HS256"
        ),
        "tampered claims": _tampered(token),
        "alg none": jwt.encode({"sub": real["sub"], "exp": real["exp"]}, None, algorithm="none"),
        "no exp": jwt.encode({"sub": real["sub"]}, key, algorithm="HS256"),
        "expired, right key": jwt.encode({"sub": real["sub"], "exp": real["iat"] - 10}, key, algorithm="HS256"),
        "unknown user, right key": jwt.encode({"sub": str(uuid.uuid4()), "exp": real["exp"]}, key, algorithm="HS256"),
        "truncated": token[:-6],
    }
    # control: the right key with the real claims is accepted, so the refusals below are about the token
    good = jwt.encode({"sub": real["sub"], "exp": real["exp"]}, key, algorithm="HS256")
    ok = await lab.client.get(f"{lab.prefix()}/sessions", headers={"Authorization": f"Bearer {good}"})
    assert ok.status_code == 200, ok.text
    for name, forged in forged_tokens.items():
        headers = {"Authorization": f"Bearer {forged}"}
        for method, path, body in chat_calls(lab.prefix(), str(uuid.uuid4()))[:2]:
            response = await lab.client.request(method, path, json=body, headers=headers)
            assert response.status_code == 401, (name, response.text)
            assert_unauthorized(response)


# --- users ---------------------------------------------------------------------------------------------------


async def test_me_and_user_creation_by_a_superadmin_only(lab):
    response = await lab.client.get("/v3/access/users/me", headers=lab.headers)
    assert response.status_code == 200
    me = response.json()
    assert me["username"] == "admin" and me["is_superadmin"] is True and me["is_active"] is True
    assert "password" not in json.dumps(me)
    assert_unauthorized(await lab.client.get("/v3/access/users/me"))

    response = await lab.client.post(
        "/v3/access/users",
        headers=lab.headers,
        json={"username": "dave", "password": "password-1", "email": "d@example.org"},
    )
    assert response.status_code == 201, response.text
    created = response.json()
    assert created["username"] == "dave" and created["email"] == "d@example.org" and created["is_superadmin"] is False
    assert "password" not in json.dumps(created)
    uuid.UUID(created["user_id"])
    token = (await login(lab.client, "dave", "password-1")).json()["access_token"]
    dave = {"Authorization": f"Bearer {token}"}
    mine = (await lab.client.get("/v3/access/users/me", headers=dave)).json()
    assert (mine["user_id"], mine["username"], mine["is_superadmin"]) == (created["user_id"], "dave", False)

    assert_error(
        await lab.client.post("/v3/access/users", headers=dave, json={"username": "mallory", "password": "password-1"}),
        403,
        "forbidden",
    )
    assert_error(await lab.client.get("/v3/access/users", headers=dave), 403, "forbidden")
    assert_unauthorized(
        await lab.client.post("/v3/access/users", json={"username": "x-user", "password": "password-1"})
    )
    names = [u["username"] for u in (await lab.client.get("/v3/access/users", headers=lab.headers)).json()]
    assert names == ["admin", "dave"]  # mallory and x-user were not created


async def test_user_creation_errors(lab):
    await new_user(lab, "frank")
    response = await lab.client.post(
        "/v3/access/users", json={"username": "frank", "password": "password-2"}, headers=lab.headers
    )
    assert_error(response, 400, "bad_request")
    assert "frank" in response.json()["message"]
    # the first frank keeps his password
    assert (await login(lab.client, "frank", "password-1")).status_code == 200
    assert_unauthorized(await login(lab.client, "frank", "password-2"))

    response = await lab.client.post(
        "/v3/access/users", json={"username": "gina", "password": "1234567"}, headers=lab.headers
    )
    assert response.status_code == 422, response.text
    body = response.json()
    assert set(body) == {"message", "code", "details"}
    assert body["code"] == "validation_error" and isinstance(body["message"], str)
    assert set(body["details"]) == {"errors"}
    [error] = body["details"]["errors"]
    assert set(error) == {"loc", "msg", "type"}
    assert error["loc"] == ["body", "password"]
    assert error["type"] == "string_too_short" and isinstance(error["msg"], str) and error["msg"]
    assert_unauthorized(await login(lab.client, "gina", "1234567"))  # nobody was created
    names = [u["username"] for u in (await lab.client.get("/v3/access/users", headers=lab.headers)).json()]
    assert names == ["admin", "frank"]


async def test_a_deleted_user_cannot_log_in_and_its_configurations_go_with_it(lab):
    """What the suite's clean-up relies on: DELETE /v3/access/users/{id}, superadmin only, as in gns3-server."""
    user_id, henry = await new_user(lab, "henry")
    body = {
        "name": "cfg",
        "model_type": "text",
        "provider": "openai",
        "model": "m",
        "base_url": "http://127.0.0.1:9/v1",
    }
    assert (await lab.client.post(configs_url(user_id), headers=henry, json=body)).status_code == 201
    assert_error(await lab.client.delete(f"/v3/access/users/{user_id}", headers=henry), 403, "forbidden")
    admin_id = (await lab.client.get("/v3/access/users/me", headers=lab.headers)).json()["user_id"]
    assert_error(await lab.client.delete(f"/v3/access/users/{admin_id}", headers=lab.headers), 403, "forbidden")

    assert (await lab.client.delete(f"/v3/access/users/{user_id}", headers=lab.headers)).status_code == 204
    assert_unauthorized(await login(lab.client, "henry", "password-1"))
    assert_unauthorized(await lab.client.get("/v3/access/users/me", headers=henry))  # its token names nobody now
    assert_error(await lab.client.delete(f"/v3/access/users/{user_id}", headers=lab.headers), 404, "user_not_found")
    assert_error(await lab.client.get(configs_url(user_id), headers=lab.headers), 404, "user_not_found")
    names = [u["username"] for u in (await lab.client.get("/v3/access/users", headers=lab.headers)).json()]
    assert names == ["admin"]


# --- projects ------------------------------------------------------------------------------------------------


@pytest.mark.covers("CONTROLLER-001", "PROJECT-001")
async def test_project_create_get_list_and_duplicate(lab):
    response = await lab.client.post("/v3/projects", json={"name": "ospf-lab"}, headers=lab.headers)
    assert response.status_code == 201, response.text
    project = response.json()
    assert project["name"] == "ospf-lab" and project["status"] == "opened"
    assert set(project) == {"project_id", "name", "status", "path", "created_at"}
    assert_matches_contract(project, "controller-project.json")
    assert Path(project["path"]) == lab.settings.data_dir / "projects" / project["project_id"]
    assert (Path(project["path"]) / "project.gns3").is_file()
    assert Path(DB_LOCATION.format(project_dir=project["path"])).is_file()

    got = await lab.client.get(f"/v3/projects/{project['project_id']}", headers=lab.headers)
    assert got.status_code == 200 and got.json() == project
    listed = (await lab.client.get("/v3/projects", headers=lab.headers)).json()
    assert sorted(p["project_id"] for p in listed) == sorted([lab.project_id, project["project_id"]])
    assert_matches_contract(listed, "controller-project-list.json")

    assert_error(await lab.client.post("/v3/projects", json={"name": "ospf-lab"}, headers=lab.headers), 409, "conflict")
    assert_error(await lab.client.get(f"/v3/projects/{uuid.uuid4()}", headers=lab.headers), 404, "project_not_found")
    assert_unauthorized(await lab.client.post("/v3/projects", json={"name": "anonymous"}))
    # a project that never existed: 404 on every chat endpoint
    unknown = lab.prefix(str(uuid.uuid4()))
    for method, path, status, body in await answers(lab.client, chat_calls(unknown, str(uuid.uuid4())), lab.headers):
        assert (status, body["code"]) == (404, "project_not_found"), (method, path, body)
    # a new project is usable by the chat API straight away
    stream = await lab.stream("hi [[fake-llm:plain]]", project_id=project["project_id"])
    assert stream.types[-1] == "done" and stream.content == PLAIN_REPLY


@pytest.mark.covers("PROJECT-002", "ERROR-001", "ERROR-002")
async def test_a_closed_project_refuses_every_chat_endpoint_and_reopens_with_its_sessions(lab):
    first = await lab.stream("hi [[fake-llm:plain]]")
    assert first.types[-1] == "done"
    session_id = first.session_id

    closed = await lab.client.post(f"/v3/projects/{lab.project_id}/close", headers=lab.headers)
    assert closed.status_code == 204 and closed.content == b""
    project = (await lab.client.get(f"/v3/projects/{lab.project_id}", headers=lab.headers)).json()
    assert project["status"] == "closed"

    results = await answers(lab.client, chat_calls(lab.prefix(), session_id), lab.headers)
    for method, path, status, body in results:
        assert status == 403, (method, path, body)
        assert body["code"] == "project_not_opened", (method, path, body)
        assert isinstance(body["message"], str) and body["message"]
    # another user's request gets the same answer, even for a session that does not exist
    _, other = await lab.add_user("henry")
    for method, path, status, body in await answers(lab.client, chat_calls(lab.prefix(), str(uuid.uuid4())), other):
        assert (status, body["code"]) == (403, "project_not_opened"), (method, path, body)

    opened = await lab.client.post(f"/v3/projects/{lab.project_id}/open", headers=lab.headers)
    assert opened.status_code == 200, opened.text
    assert opened.json()["status"] == "opened" and opened.json()["project_id"] == lab.project_id
    sessions = (await lab.client.get(f"{lab.prefix()}/sessions", headers=lab.headers)).json()
    assert [s["thread_id"] for s in sessions] == [session_id]  # the session survived close/open
    history = await lab.history(session_id)
    assert [m["content"] for m in history["messages"] if m["role"] == "assistant"] == [PLAIN_REPLY]
    again = await lab.stream("more [[fake-llm:plain]]", session_id)
    assert again.types[-1] == "done" and again.session_id == session_id


@pytest.mark.covers("PROJECT-002")
async def test_a_closed_project_stays_closed_after_a_restart(make_settings):
    settings = make_settings()
    async with in_process_lab(settings) as lab:
        project_id, headers = lab.project_id, lab.headers
        assert (await lab.client.post(f"/v3/projects/{project_id}/close", headers=headers)).status_code == 204
    async with running_app(settings) as client:
        prefix = settings.chat_prefix.format(project_id=project_id)
        assert_error(await client.get(f"{prefix}/sessions", headers=headers), 403, "project_not_opened")
        assert (await client.post(f"/v3/projects/{project_id}/open", headers=headers)).status_code == 200
        response = await client.get(f"{prefix}/sessions", headers=headers)
        assert response.status_code == 200 and response.json() == []


@pytest.mark.covers("PROJECT-001", "DB-007", "ERROR-001", "ERROR-002")
async def test_a_deleted_project_is_gone_for_every_chat_endpoint(lab):
    stream = await lab.stream("hi [[fake-llm:plain]]")
    assert stream.types[-1] == "done"
    project_dir = lab.settings.data_dir / "projects" / lab.project_id
    database = Path(DB_LOCATION.format(project_dir=project_dir))
    assert database.is_file()

    deleted = await lab.client.delete(f"/v3/projects/{lab.project_id}", headers=lab.headers)
    assert deleted.status_code == 204 and deleted.content == b""
    assert_error(await lab.client.get(f"/v3/projects/{lab.project_id}", headers=lab.headers), 404, "project_not_found")
    for method, path, status, body in await answers(
        lab.client, chat_calls(lab.prefix(), stream.session_id), lab.headers
    ):
        assert status == 404, (method, path, body)
        assert body["code"] == "project_not_found", (method, path, body)
    assert not database.exists()
    assert not database.with_name(database.name + "-wal").exists()
    assert not project_dir.exists()
    assert lab.project_id not in [
        p["project_id"] for p in (await lab.client.get("/v3/projects", headers=lab.headers)).json()
    ]
    # deleting, opening or closing it again: 404
    for method, path in (("DELETE", ""), ("POST", "/open"), ("POST", "/close")):
        response = await lab.client.request(method, f"/v3/projects/{lab.project_id}{path}", headers=lab.headers)
        assert_error(response, 404, "project_not_found")


# --- LLM model configurations ----------------------------------------------------------------------------------


@pytest.mark.covers("CONTROLLER-001")
async def test_llm_model_config_lifecycle(lab):
    user_id, headers = await new_user(lab, "ivan")
    assert (await lab.client.get(configs_url(user_id), headers=headers)).json() == {
        "configs": [],
        "default_config": None,
        "total": 0,
    }

    create = {
        "name": "local",
        "provider": "openai",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "m-1",
        "api_key": "sk-test-abcdef",
        "temperature": 0.2,
        "is_default": True,
        "context_strategy": "aggressive",
    }
    # context_strategy is validated as the contract's schema says (an enum), though not kept
    refused = await lab.client.post(
        configs_url(user_id), json={**create, "context_strategy": "ignored"}, headers=headers
    )
    assert refused.status_code == 422 and refused.json()["details"]["errors"][0]["loc"] == ["body", "context_strategy"]
    response = await lab.client.post(configs_url(user_id), json=create, headers=headers)
    assert response.status_code == 201, response.text
    config = response.json()
    # gns3-server's shape (the contract's LlmModelConfig): the values nested under `config`, the key never returned
    assert_matches_contract(config, "controller-llm-model-config.json")
    values = config["config"]
    assert values["api_key"] is None and config["has_api_key"] is True
    assert "sk-test-abcdef" not in response.text and "api_key_sealed" not in response.text
    assert (config["name"], values["provider"], values["base_url"], values["model"]) == (
        "local",
        "openai",
        "http://127.0.0.1:9/v1",
        "m-1",
    )
    assert values["temperature"] == 0.2 and config["is_default"] is True and config["user_id"] == user_id
    assert values["context_strategy"] == "balanced"  # what was sent ("aggressive") is not taken

    second = await lab.client.post(
        configs_url(user_id), headers=headers, json={"name": "scripted", "provider": "fake", "model": "fake-model"}
    )
    assert second.status_code == 201
    assert second.json()["has_api_key"] is False and second.json()["is_default"] is False

    listed = await lab.client.get(configs_url(user_id), headers=headers)
    assert listed.status_code == 200
    body = listed.json()
    assert set(body) == {"configs", "default_config", "total"}
    assert_matches_contract(body, "controller-llm-model-config-list.json")
    assert body["total"] == 2
    assert [c["config_id"] for c in body["configs"]] == [config["config_id"], second.json()["config_id"]]
    assert body["default_config"]["config_id"] == config["config_id"]
    assert all(c["config"]["api_key"] is None for c in body["configs"]) and "sk-test-abcdef" not in listed.text

    update = await lab.client.put(
        configs_url(user_id, config["config_id"]), json={"model": "m-2", "max_tokens": 64}, headers=headers
    )
    assert update.status_code == 200, update.text
    updated = update.json()
    assert (updated["config"]["model"], updated["config"]["max_tokens"]) == ("m-2", 64)
    assert (updated["name"], updated["config"]["temperature"], updated["has_api_key"]) == ("local", 0.2, True)
    cleared = await lab.client.put(configs_url(user_id, config["config_id"]), json={"api_key": ""}, headers=headers)
    assert cleared.status_code == 200 and cleared.json()["has_api_key"] is False

    deleted = await lab.client.delete(configs_url(user_id, config["config_id"]), headers=headers)
    assert deleted.status_code == 204 and deleted.content == b""
    assert_error(await lab.client.delete(configs_url(user_id, config["config_id"]), headers=headers), 404, "not_found")
    assert_error(
        await lab.client.put(configs_url(user_id, config["config_id"]), json={"model": "x"}, headers=headers),
        404,
        "not_found",
    )
    remaining = (await lab.client.get(configs_url(user_id), headers=headers)).json()
    assert remaining["total"] == 1 and remaining["default_config"]["config_id"] == second.json()["config_id"]


async def test_llm_model_configs_belong_to_their_user(lab):
    owner_id, owner = await new_user(lab, "judy")
    _, intruder = await new_user(lab, "karl")
    created = await lab.client.post(
        configs_url(owner_id), headers=owner, json={"name": "mine", "provider": "fake", "model": "fake-model"}
    )
    config_id = created.json()["config_id"]
    for method, path, body in (
        ("GET", configs_url(owner_id), None),
        ("POST", configs_url(owner_id), {"name": "theirs", "provider": "fake", "model": "fake-model"}),
        ("PUT", configs_url(owner_id, config_id), {"model": "hijacked"}),
        ("DELETE", configs_url(owner_id, config_id), None),
    ):
        assert_error(await lab.client.request(method, path, json=body, headers=intruder), 403, "forbidden")
    # nothing changed; a superadmin may read them
    seen = (await lab.client.get(configs_url(owner_id), headers=lab.headers)).json()
    assert [(c["name"], c["config"]["model"]) for c in seen["configs"]] == [("mine", "fake-model")]
    assert_error(await lab.client.get(configs_url(str(uuid.uuid4())), headers=lab.headers), 404, "user_not_found")
    assert_unauthorized(await lab.client.get(configs_url(owner_id)))


INVALID_CONFIGS = [
    ({"name": "x", "provider": "openai", "model": "m"}, ["body"]),
    ({"name": "x", "provider": "openai", "model": "m", "base_url": ""}, ["body", "base_url"]),
    ({"name": "x", "provider": "anthropic", "model": "m"}, ["body", "provider"]),
    ({"name": "x", "provider": "fake", "model": "m", "temperature": 2.5}, ["body", "temperature"]),
    ({"provider": "fake", "model": "m"}, ["body", "name"]),
    # beyond what a 64-bit integer column stores (stock Schemathesis found a 500 here)
    ({"name": "x", "provider": "fake", "model": "m", "max_tokens": LLM_CONFIG_INTEGER_MAX + 1}, ["body", "max_tokens"]),
    ({"name": "x", "provider": "fake", "model": "m", "context_limit": 10**30}, ["body", "context_limit"]),
]


async def test_invalid_llm_model_configs_are_422(lab):
    user_id = (await lab.client.get("/v3/access/users/me", headers=lab.headers)).json()["user_id"]
    for body, loc in INVALID_CONFIGS:
        result = assert_error(
            await lab.client.post(configs_url(user_id), json=body, headers=lab.headers), 422, "validation_error"
        )
        assert [e["loc"] for e in result["details"]["errors"]] == [loc], body
        if loc == ["body"]:
            assert "base_url" in result["details"]["errors"][0]["msg"]
    assert (await lab.client.get(configs_url(user_id), headers=lab.headers)).json()["total"] == 1  # only the seed


async def _put_on_the_seeded_config(settings: Settings, *bodies: dict[str, Any]) -> list[tuple[httpx.Response, dict]]:
    """PUT each body on the admin's seeded (fake) configuration; a crash is reported as 500 instead of raised.
    Returns (answer, the configuration as listed afterwards) per body."""
    results = []
    async with running_app(settings, raise_app_exceptions=False) as client:
        headers = await Lab(client).login()
        user_id = (await client.get("/v3/access/users/me", headers=headers)).json()["user_id"]
        config_id = (await client.get(configs_url(user_id), headers=headers)).json()["configs"][0]["config_id"]
        for body in bodies:
            response = await client.put(configs_url(user_id, config_id), json=body, headers=headers)
            results.append((response, (await client.get(configs_url(user_id), headers=headers)).json()["configs"][0]))
    return results


async def test_the_largest_stored_integers_are_kept_and_one_more_is_422(make_settings):
    """max_tokens and context_limit up to LLM_CONFIG_INTEGER_MAX are stored and read back; one more is refused before
    anything is written (it was a 500 from the database on an update)."""
    largest = {"max_tokens": LLM_CONFIG_INTEGER_MAX, "context_limit": LLM_CONFIG_INTEGER_MAX}
    bodies = (largest, {"max_tokens": LLM_CONFIG_INTEGER_MAX + 1}, {"context_limit": 10**30})
    (kept, first), (over, second), (far, third) = await _put_on_the_seeded_config(make_settings(), *bodies)
    assert kept.status_code == 200, kept.text
    assert {k: first["config"][k] for k in largest} == largest
    for response, after in ((over, second), (far, third)):
        assert response.status_code == 422 and response.json()["code"] == "validation_error", response.text
        assert {k: after["config"][k] for k in largest} == largest


async def test_null_in_a_required_llm_model_config_field_is_422(make_settings):
    bodies = ({"name": None}, {"model": None}, {"temperature": None}, {"provider": None})
    for body, (response, kept) in zip(bodies, await _put_on_the_seeded_config(make_settings(), *bodies), strict=True):
        assert response.status_code == 422, (body, response.status_code, response.text)
        assert response.json()["code"] == "validation_error"
        values = kept["config"]
        assert (kept["name"], values["provider"], values["model"], values["temperature"]) == (
            "built-in fake LLM",
            "fake",
            "fake-model",
            0.7,
        )


async def test_switching_to_openai_without_base_url_conflicts_with_the_stored_configuration(make_settings):
    """Each field sent is valid (the update schema takes `provider: openai` alone); the configuration it would
    leave is not: 409 `conflict`, and nothing changes."""
    [(response, kept)] = await _put_on_the_seeded_config(make_settings(), {"provider": "openai"})
    assert response.status_code == 409, (response.status_code, response.text)
    assert response.json()["code"] == "conflict" and "needs a base_url" in response.json()["message"]
    assert (kept["config"]["provider"], kept["config"]["base_url"]) == ("fake", None)


@pytest.mark.covers("LLM-001", "PRECHECK-001", "ERROR-001")
async def test_a_user_without_llm_config_cannot_stream(lab):
    user_id, headers = await new_user(lab, "leo")
    stream = await lab.stream("hi [[fake-llm:plain]]", headers=headers)
    assert stream.status == 400, stream.text
    body = json.loads(stream.text)
    assert body["code"] == "llm_not_configured" and isinstance(body["message"], str)
    assert stream.headers["content-type"].startswith("application/json")
    response = await lab.client.get(f"{lab.prefix()}/sessions", headers=headers)
    assert response.status_code == 200 and response.json() == []  # no session was created
    # after configuring one, the same user streams
    created = await lab.client.post(
        configs_url(user_id), headers=headers, json={"name": "scripted", "provider": "fake", "model": "fake-model"}
    )
    assert created.status_code == 201
    stream = await lab.stream("hi [[fake-llm:plain]]", headers=headers)
    assert stream.types[-1] == "done" and stream.content == PLAIN_REPLY
    # and after deleting it, the refusal is back
    assert (
        await lab.client.delete(configs_url(user_id, created.json()["config_id"]), headers=headers)
    ).status_code == 204
    again = await lab.stream("hi [[fake-llm:plain]]", headers=headers)
    assert again.status == 400 and json.loads(again.text)["code"] == "llm_not_configured"


@pytest.mark.covers("TESTABILITY-001", "TESTABILITY-002", "TESTABILITY-003")
async def test_an_openai_compatible_llm_config_is_used(lab, fake_llm_server):
    control = fake_llm_server.removesuffix("/v1")
    httpx.delete(f"{control}/control/requests").raise_for_status()
    api_key = f"sk-test-{uuid.uuid4().hex}"
    user_id, headers = await new_user(lab, "mona")
    response = await lab.client.post(
        configs_url(user_id),
        headers=headers,
        json={
            "name": "remote",
            "provider": "openai",
            "base_url": fake_llm_server,
            "model": "fake-model",
            "api_key": api_key,
            "temperature": 0.3,
        },
    )
    assert response.status_code == 201, response.text

    stream = await lab.stream("hi [[fake-llm:plain]]", headers=headers)
    assert stream.status == 200, stream.text
    assert stream.frame_violations == []
    assert stream.types[-1] == "done"
    assert "error" not in stream.types, stream.events
    assert stream.content == PLAIN_REPLY

    records = httpx.get(f"{control}/control/requests").json()["requests"]
    assert len(records) == 2, records  # the main generation, then the title
    main, title = records
    for record in records:
        assert record["transport"] == "http"
        assert record["model"] == "fake-model"
        assert record["script"] == "plain" and record["outcome"] == "ok"
        assert record["extra"]["authorization"] == f"Bearer {api_key}"
        assert record["temperature"] == 0.3
        assert record["stream"] is True
    assert main["step"] == 0 and main["tools"] == [
        "get_topology",
        "run_show_command",
        "wait_seconds",
        "failing_tool",
        "raising_tool",
    ]
    assert title["step"] is None and title["tools"] == []
    assert [m["content"] for m in main["messages"] if m["role"] == "user"] == ["hi [[fake-llm:plain]]"]
    session = await lab.session(stream.session_id, headers=headers)
    assert session["title"] == "Lab health check"


# --- settings and command line ----------------------------------------------------------------------------------


def test_help_lists_every_setting_and_its_environment_variable():
    result = subprocess.run(
        [sys.executable, "-m", "reference_server", "--help"], capture_output=True, text=True, cwd=REPO_ROOT, timeout=60
    )
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())  # click wraps the help text
    for name in SETTING_NAMES:
        assert re.search(rf"--{name}\b", text), name
        env = f"{ENV_PREFIX}{name.replace('-', '_').upper()}"
        assert re.search(rf"\benv {env};", text), env
    assert "--no-title-counts-in-stats" in text and "--config" in text


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.startswith(ENV_PREFIX):
            monkeypatch.delenv(name)
    return monkeypatch


def test_settings_precedence_file_then_environment_then_overrides(tmp_path, clean_env):
    config = tmp_path / "settings.yaml"
    config.write_text("port: 1111\nchat-prefix: /api/{project_id}/copilot\nheartbeat_interval: 2.5\n")
    from_file = load_settings(config)
    assert (from_file.port, from_file.chat_prefix, from_file.heartbeat_interval) == (
        1111,
        "/api/{project_id}/copilot",
        2.5,
    )
    assert load_settings(config, port=None).port == 1111  # an option not given does not override
    assert load_settings().port == 3080  # the default

    clean_env.setenv("COPILOT_REF_PORT", "2222")
    from_env = load_settings(config)
    assert from_env.port == 2222
    assert from_env.chat_prefix == "/api/{project_id}/copilot"  # the rest of the file still applies
    assert load_settings(config, port=3333).port == 3333
    assert load_settings(port="4444").port == 4444


def test_settings_are_validated(tmp_path, clean_env):
    with pytest.raises(ValidationError, match="chat_prefix"):
        load_settings(chat_prefix="/v3/projects/chat")
    bad_prefix = tmp_path / "bad-prefix.yaml"
    bad_prefix.write_text("chat_prefix: /no/project/id\n")
    with pytest.raises(ValidationError, match="project_id"):
        load_settings(bad_prefix)
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("port: 1234\nlisten_backlog: 5\n")
    with pytest.raises(ValidationError, match="listen_backlog"):
        load_settings(unknown)
    not_a_mapping = tmp_path / "list.yaml"
    not_a_mapping.write_text("- port\n- 1234\n")
    with pytest.raises(ValueError, match="mapping"):
        load_settings(not_a_mapping)
    clean_env.setenv("COPILOT_REF_CHAT_PREFIX", "/without-project")
    with pytest.raises(ValidationError):
        load_settings()


def test_command_line_rejects_a_bad_prefix(tmp_path, clean_env):
    result = CliRunner().invoke(
        cli_main, ["--data-dir", str(tmp_path / "d"), "--port", "0", "--chat-prefix", "/v3/chat"]
    )
    assert result.exit_code == 2, result.output
    assert "project_id" in result.output
    assert not (tmp_path / "d").exists()  # refused before anything was created


async def test_a_changed_admin_is_seeded_on_a_new_data_dir(make_settings, tmp_path):
    settings = make_settings(admin_username="root", admin_password="s3cret-pass")
    async with running_app(settings) as client:
        assert_unauthorized(await login(client, "admin", "admin"))
        response = await login(client, "root", "s3cret-pass")
        assert response.status_code == 200, response.text
        headers = {"Authorization": f"Bearer {response.json()['access_token']}"}
        me = (await client.get("/v3/access/users/me", headers=headers)).json()
        assert (me["username"], me["is_superadmin"]) == ("root", True)
        users = (await client.get("/v3/access/users", headers=headers)).json()
        assert [u["username"] for u in users] == ["root"]
        configs = (await client.get(configs_url(me["user_id"]), headers=headers)).json()
        assert [(c["config"]["provider"], c["config"]["model"], c["is_default"]) for c in configs["configs"]] == [
            ("fake", "fake-model", True)
        ]
        lab = Lab(client, settings)
        lab.headers = headers
        lab.project_id = await lab.new_project()
        stream = await lab.stream("hi [[fake-llm:plain]]")
        assert stream.types[-1] == "done" and stream.content == PLAIN_REPLY
    # the seed happens once: other admin settings on the same data dir do not add an account
    async with running_app(make_settings(admin_username="other", admin_password="other-pass")) as client:
        assert_unauthorized(await login(client, "other", "other-pass"))
        assert (await login(client, "root", "s3cret-pass")).status_code == 200
