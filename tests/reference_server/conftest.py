"""Fixtures for the reference server's own tests: an in-process app (ASGI) and a real server process."""

from __future__ import annotations

import asyncio
import collections
import copy
import json
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from conformance.harness.processes import Process, start_module
from conformance.rules.framing import parse_stream
from reference_server.app import create_app
from reference_server.settings import Settings
from tests.quality.fork_server import forked

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Stream:
    status: int
    headers: httpx.Headers
    text: str
    events: list[dict[str, Any]] = field(default_factory=list)
    frame_violations: list[Any] = field(default_factory=list)

    @property
    def types(self) -> list[str]:
        return [event["type"] for event in self.events]

    @property
    def session_id(self) -> str:
        return self.events[-1]["session_id"]

    @property
    def content(self) -> str:
        return "".join(event["content"] for event in self.events if event["type"] == "content")


class Lab:
    """A logged-in admin with one opened project on a reference server reached through `client`."""

    def __init__(self, client: httpx.AsyncClient, settings: Settings | None = None) -> None:
        self.client = client
        self.settings = settings
        self.headers: dict[str, str] = {}
        self.project_id = ""
        self.prefix_template = settings.chat_prefix if settings else "/v3/projects/{project_id}/chat"

    async def login(self, username: str = "admin", password: str = "admin") -> dict[str, str]:
        response = await self.client.post(
            "/v3/access/users/authenticate", json={"username": username, "password": password}
        )
        assert response.status_code == 200, response.text
        return {"Authorization": f"Bearer {response.json()['access_token']}"}

    async def setup(self) -> Lab:
        self.headers = await self.login()
        self.project_id = await self.new_project()
        return self

    async def new_project(self, name: str | None = None) -> str:
        import uuid

        response = await self.client.post(
            "/v3/projects", json={"name": name or f"lab-{uuid.uuid4().hex[:8]}"}, headers=self.headers
        )
        assert response.status_code == 201, response.text
        return response.json()["project_id"]

    def prefix(self, project_id: str | None = None) -> str:
        return self.prefix_template.format(project_id=project_id or self.project_id)

    async def add_user(
        self, username: str, *, llm: bool = True, access: str | None = "/projects"
    ) -> tuple[str, dict[str, str]]:
        """A second user (with a fake-LLM configuration unless `llm=False`), given the `User` role on the resource path
        `access` (every project by default; None: no access to any project but its own); returns (user_id, headers)."""
        response = await self.client.post(
            "/v3/access/users", json={"username": username, "password": "password-1"}, headers=self.headers
        )
        assert response.status_code == 201, response.text
        user_id = response.json()["user_id"]
        if access is not None:
            await self.grant(user_id, access)
        if llm:
            response = await self.client.post(
                f"/v3/access/users/{user_id}/llm-model-configs",
                json={"name": "fake", "provider": "fake", "model": "fake-model"},
                headers=self.headers,
            )
            assert response.status_code == 201, response.text
        return user_id, await self.login(username, "password-1")

    async def until(self, probe: Callable[[], Awaitable[bool]], what: str, deadline: float = 60) -> None:
        """Polls `probe` until it holds: a test waits for a state of the server, never for a fixed time (a loaded
        machine may take seconds to start a turn)."""
        end = time.monotonic() + deadline
        while not await probe():
            if time.monotonic() > end:
                pytest.fail(f"{what} did not happen within {deadline} s")
            await asyncio.sleep(0.02)

    async def until_listed(self, session_id: str) -> None:
        """The session row is created after the session is marked busy: listed means its first turn is running."""

        async def listed() -> bool:
            response = await self.client.get(f"{self.prefix()}/sessions", headers=self.headers)
            return any(s["thread_id"] == session_id for s in response.json())

        await self.until(listed, f"session {session_id} listed")

    async def abort_when_running(self, session_id: str) -> dict[str, Any]:
        """Aborts the session's turn as soon as one runs (an abort of an idle session changes nothing, ABORT-003);
        returns the body of the abort that stopped it."""
        answers: list[dict[str, Any]] = []

        async def aborted() -> bool:
            response = await self.client.post(f"{self.prefix()}/sessions/{session_id}/abort", headers=self.headers)
            answers.append(response.json())
            return answers[-1]["aborted"]

        await self.until(aborted, f"a running turn in {session_id} to abort")
        return answers[-1]

    async def role_id(self, name: str) -> str:
        response = await self.client.get("/v3/access/roles", headers=self.headers)
        assert response.status_code == 200, response.text
        return next(role["role_id"] for role in response.json() if role["name"] == name)

    async def grant(self, user_id: str, path: str, role: str = "User", **fields: Any) -> str:
        """An access control entry giving `user_id` the role on `path`; returns its id."""
        body = {"ace_type": "user", "path": path, "user_id": user_id, "role_id": await self.role_id(role), **fields}
        response = await self.client.post("/v3/access/acl", json=body, headers=self.headers)
        assert response.status_code == 201, response.text
        return response.json()["ace_id"]

    async def stream(
        self,
        message: str,
        session_id: str | None = None,
        *,
        headers: dict[str, str] | None = None,
        project_id: str | None = None,
        **extra: Any,
    ) -> Stream:
        body: dict[str, Any] = {"message": message, **extra}
        if session_id is not None:
            body["session_id"] = session_id
        response = await self.client.post(
            f"{self.prefix(project_id)}/stream", json=body, headers=headers or self.headers
        )
        result = Stream(response.status_code, response.headers, response.text)
        if response.status_code == 200:
            parsed = parse_stream(response.text)
            result.events, result.frame_violations = parsed.events, parsed.violations
        return result

    async def session(self, session_id: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
        response = await self.client.get(f"{self.prefix()}/sessions", headers=headers or self.headers)
        assert response.status_code == 200, response.text
        return next(s for s in response.json() if s["thread_id"] == session_id)

    async def history(self, session_id: str, **params: Any) -> dict[str, Any]:
        response = await self.client.get(
            f"{self.prefix()}/sessions/{session_id}/history", params=params, headers=self.headers
        )
        assert response.status_code == 200, response.text
        return response.json()


@pytest.fixture
def make_settings(tmp_path: Path):
    def make(**overrides: Any) -> Settings:
        values = {"data_dir": tmp_path / "data", "heartbeat_interval": 15.0, **overrides}
        return Settings(**values)

    return make


@pytest.fixture
async def lab(make_settings) -> AsyncIterator[Lab]:
    """The reference server in-process, through an ASGI transport."""
    async with in_process_lab(make_settings()) as value:
        yield value


class in_process_lab:  # noqa: N801 - used as `async with in_process_lab(settings) as lab`
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.app = create_app(settings)

    async def __aenter__(self) -> Lab:
        self._lifespan = self.app.router.lifespan_context(self.app)
        await self._lifespan.__aenter__()
        self._client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url="http://reference", timeout=30
        )
        lab = await Lab(self._client, self.settings).setup()
        lab.app = self.app  # in-process only: the app's services (e.g. the fake LLM's request log)
        return lab

    async def __aexit__(self, *exc_info: Any) -> None:
        await self._client.aclose()
        await self._lifespan.__aexit__(*exc_info)


@dataclass
class ServerProcess:
    """`python -m reference_server` on 127.0.0.1 with a free port; its output kept as it comes; stopped by pid."""

    handle: Process
    base_url: str
    data_dir: Path

    @property
    def process(self) -> subprocess.Popen:
        return self.handle.popen

    @property
    def output(self) -> collections.deque[str]:  # the newest lines it printed
        return self.handle.output

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10) -> int:
        return self.handle.stop(timeout, sig)

    def what_is_on(self) -> dict[str, list[str]]:
        """The users and projects on the server, as its admin sees them (what a run left behind)."""
        with httpx.Client(base_url=self.base_url, trust_env=False) as client:
            login = {"username": "admin", "password": "admin"}
            token = client.post("/v3/access/users/authenticate", json=login).json()["access_token"]
            headers = {"Authorization": f"Bearer {token}"}
            users = sorted(u["username"] for u in client.get("/v3/access/users", headers=headers).json())
            projects = sorted(p["name"] for p in client.get("/v3/projects", headers=headers).json())
        return {"users": users, "projects": projects}

    def target_data(self, name: str) -> dict[str, Any]:
        """The built-in target's declarations for this server, reached through base_url: its database and the key
        of its tokens (CONTROLLER-001) in its own data directory."""
        from conformance.harness.target import load_target

        data = copy.deepcopy(load_target(None).data)
        del data["start"]
        data["name"] = name
        data["base_url"] = self.base_url
        data["declarations"]["database"]["project_dir"] = str(self.data_dir / "projects" / "{project_id}")
        data["auth"]["token_key"] = {"file": str(self.data_dir / "secrets" / "jwt_secret_key")}
        return data


def start_server_process(data_dir: Path, *args: str, port: int = 0, fork: bool = True) -> ServerProcess:
    """`python -m reference_server` on 127.0.0.1, forked from this process's fork server (tests/quality/fork_server.py:
    the same server, without importing it again), or with `fork` False a process of its own: where the test kills
    the server with SIGKILL (a fork dies only once it sees its client gone) or reads its tree of worker processes."""
    arguments = [
        *(forked("reference_server") if fork else ["reference_server"]),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--data-dir",
        str(data_dir),
        "--log-level",
        "warning",
        *args,
    ]
    handle, base_url = start_module("reference server", arguments, ready_path="/v3/version", timeout=10)
    return ServerProcess(handle, base_url, data_dir)


@pytest.fixture
def server_process(tmp_path: Path) -> Iterator[ServerProcess]:
    server = start_server_process(tmp_path / "data")
    yield server
    server.stop()


def events_of(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
