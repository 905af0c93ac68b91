"""One live reference server per test module (a real process on 127.0.0.1), for the protocols' real clients.

The channel tests drive the server over a socket, as the `openai` client, `ai` and `@ag-ui/client` do in real
use; one server per module keeps the test command inside its time budget.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.reference_server.conftest import ServerProcess, events_of, start_server_process

PREFIX_TEMPLATE = "/v3/projects/{project_id}/chat"


@dataclass
class LiveLab:
    """A logged-in admin with one opened project on a live reference server."""

    server: ServerProcess
    client: httpx.Client
    token: str = ""
    project_id: str = ""
    users: dict[str, str] = field(default_factory=dict)  # username -> token

    @property
    def base_url(self) -> str:
        return self.server.base_url

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def prefix(self, project_id: str | None = None) -> str:
        return PREFIX_TEMPLATE.format(project_id=project_id or self.project_id)

    def url(self, path: str, project_id: str | None = None) -> str:
        """The absolute URL of `path` under the chat prefix."""
        return f"{self.base_url}{self.prefix(project_id)}{path}"

    def login(self, username: str = "admin", password: str = "admin") -> str:
        response = self.client.post("/v3/access/users/authenticate", json={"username": username, "password": password})
        assert response.status_code == 200, response.text
        return response.json()["access_token"]

    def new_project(self, *, opened: bool = True) -> str:
        response = self.client.post("/v3/projects", json={"name": f"ch-{uuid.uuid4().hex[:8]}"}, headers=self.headers)
        assert response.status_code == 201, response.text
        project_id = response.json()["project_id"]
        if not opened:
            closed = self.client.post(f"/v3/projects/{project_id}/close", headers=self.headers)
            assert closed.status_code in (200, 201, 204), closed.text
        return project_id

    def add_user(self, username: str, *, access: str | None = "/projects") -> str:
        """Another user with a fake-LLM configuration, given the User role on `access`; returns its token."""
        response = self.client.post(
            "/v3/access/users", json={"username": username, "password": "password-1"}, headers=self.headers
        )
        assert response.status_code == 201, response.text
        user_id = response.json()["user_id"]
        if access is not None:
            roles = self.client.get("/v3/access/roles", headers=self.headers).json()
            role_id = next(role["role_id"] for role in roles if role["name"] == "User")
            body = {"ace_type": "user", "path": access, "user_id": user_id, "role_id": role_id}
            assert self.client.post("/v3/access/acl", json=body, headers=self.headers).status_code == 201
        config = {"name": "fake", "provider": "fake", "model": "fake-model"}
        response = self.client.post(f"/v3/access/users/{user_id}/llm-model-configs", json=config, headers=self.headers)
        assert response.status_code == 201, response.text
        self.users[username] = self.login(username, "password-1")
        return self.users[username]

    def stream(self, message: str, session_id: str | None = None) -> list[dict[str, Any]]:
        """One turn on the GNS3 stream; its events."""
        body: dict[str, Any] = {"message": message}
        if session_id is not None:
            body["session_id"] = session_id
        response = self.client.post(self.url("/stream"), json=body, headers=self.headers)
        assert response.status_code == 200, response.text
        return events_of(response.text)

    def sessions(self, token: str | None = None) -> dict[str, dict[str, Any]]:
        headers = {"Authorization": f"Bearer {token}"} if token else self.headers
        response = self.client.get(self.url("/sessions"), headers=headers)
        assert response.status_code == 200, response.text
        return {session["thread_id"]: session for session in response.json()}

    def session(self, session_id: str) -> dict[str, Any]:
        return self.sessions()[session_id]

    def history(self, session_id: str) -> list[dict[str, Any]]:
        response = self.client.get(self.url(f"/sessions/{session_id}/history"), headers=self.headers)
        assert response.status_code == 200, response.text
        return response.json()["messages"]


def content_of(events: list[dict[str, Any]]) -> str:
    return "".join(event["content"] for event in events if event["type"] == "content")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _live_lab(tmp_path_factory: pytest.TempPathFactory, heartbeat: str) -> Iterator[LiveLab]:
    data_dir: Path = tmp_path_factory.mktemp("channels") / "data"
    server = start_server_process(data_dir, "--heartbeat-interval", heartbeat)
    try:
        with httpx.Client(base_url=server.base_url, timeout=30) as client:
            lab = LiveLab(server, client)
            lab.token = lab.login()
            lab.project_id = lab.new_project()
            yield lab
    finally:
        server.stop()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveLab]:
    """A server whose heartbeats come every 0.2 s: the streams' silences are all heard."""
    yield from _live_lab(tmp_path_factory, "0.2")


@pytest.fixture(scope="module")
def quiet_live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveLab]:
    """A server with the default heartbeat (15 s): whether a short turn has a heartbeat then depends on nothing
    (at 0.2 s, on how loaded the machine is: the snapshot of a tool turn differed from run to run)."""
    yield from _live_lab(tmp_path_factory, "15")
