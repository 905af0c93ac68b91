"""Provisioning through a GNS3-style controller API (gns3-server's paths and bodies): log in, create users,
their LLM configurations and projects. A failure here is the harness's: nothing was judged yet."""

from __future__ import annotations

import secrets
from typing import Any

import httpx

from conformance.errors import HarnessError
from conformance.harness.environment import User
from conformance.harness.ledger import Ledger

LOGIN_PATH = "/v3/access/users/authenticate"


class LoginRefused(HarnessError):
    """A login answered something else than 200; `status` is what it answered."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class Controller:
    """The admin's side of a GNS3-style controller. Everything it makes goes in `ledger`, for the clean-up."""

    def __init__(
        self, client: httpx.AsyncClient, base_url: str, admin_token: str, ledger: Ledger | None = None
    ) -> None:
        self.client, self.base_url, self.admin_token = client, base_url, admin_token
        self.ledger = ledger if ledger is not None else Ledger()

    async def _call(
        self,
        method: str,
        path: str,
        expected: int | tuple[int, ...],
        *,
        json_body: Any = None,
    ) -> Any:
        headers = {"Authorization": f"Bearer {self.admin_token}"}
        response = await self.client.request(method, self.base_url + path, json=json_body, headers=headers)
        if response.status_code not in ((expected,) if isinstance(expected, int) else expected):
            raise HarnessError(
                f"provisioning: {method} {path} answered {response.status_code}, expected "
                f"{expected}: {response.text[:500]}"
            )
        return response.json() if response.content and "json" in response.headers.get("content-type", "") else None

    @staticmethod
    async def login(client: httpx.AsyncClient, base_url: str, username: str, password: str) -> str:
        response = await client.post(base_url + LOGIN_PATH, json={"username": username, "password": password})
        if response.status_code != 200:
            raise LoginRefused(
                f"provisioning: logging in as {username!r} answered {response.status_code}: {response.text[:300]}",
                response.status_code,
            )
        return response.json()["access_token"]

    async def create_user(self, username: str, password: str) -> str:
        body = {"username": username, "password": password}
        user_id = (await self._call("POST", "/v3/access/users", 201, json_body=body))["user_id"]
        self.ledger.users[user_id] = username
        return user_id

    async def configure_llm(self, user_id: str, config: dict[str, Any], base_url: str, api_key: str) -> None:
        body = {**config, "base_url": base_url, "api_key": api_key}
        made = await self._call("POST", f"/v3/access/users/{user_id}/llm-model-configs", 201, json_body=body)
        config_id = (made or {}).get("config_id")
        if config_id:
            self.ledger.llm_configs.append((user_id, str(config_id)))
        else:
            self.ledger.unidentified_llm_configs.append(user_id)

    async def role_id(self, name: str) -> str:
        roles = await self._call("GET", "/v3/access/roles", 200)
        found = [role.get("role_id") for role in roles or [] if isinstance(role, dict) and role.get("name") == name]
        if not found:
            raise HarnessError(f"provisioning: GET /v3/access/roles lists no role named {name!r} (access_control.role)")
        return str(found[0])

    async def grant(self, user_id: str, path: str, role_id: str) -> str:
        """An access control entry giving the user the role on `path` (GNS3 RBAC); returns its id."""
        body = {"ace_type": "user", "path": path, "user_id": user_id, "role_id": role_id, "propagate": True}
        ace_id = str((await self._call("POST", "/v3/access/acl", 201, json_body=body))["ace_id"])
        self.ledger.aces[ace_id] = f"role {role_id} on {path} for user {user_id}"
        return ace_id

    async def revoke(self, ace_id: str) -> None:
        await self._call("DELETE", f"/v3/access/acl/{ace_id}", (200, 204))
        self.ledger.aces.pop(ace_id, None)

    async def create_project(self, name: str) -> str:
        project_id = (await self._call("POST", "/v3/projects", 201, json_body={"name": name}))["project_id"]
        self.ledger.projects[project_id] = name
        return project_id

    async def close_project(self, project_id: str) -> None:
        await self._call("POST", f"/v3/projects/{project_id}/close", (200, 204))

    async def delete_project(self, project_id: str) -> None:
        await self._call("DELETE", f"/v3/projects/{project_id}", 204)
        self.ledger.projects.pop(project_id, None)


class UserMaker:
    """Makes the suite's users on a controller: each logged in and, when the target's LLM is configured through the
    controller, pointed at the suite's fake LLM with a fresh API key. Every token and key it hands out is kept, so
    that the reports can redact them."""

    def __init__(
        self,
        controller: Controller,
        client: httpx.AsyncClient,
        base_url: str,
        suffix: str,
        password: str,
        llm: dict[str, Any] | None,
        fake_llm_url: str,
    ) -> None:
        self.controller, self.client, self.base_url = controller, client, base_url
        self.suffix, self.password, self.llm, self.fake_llm_url = suffix, password, llm, fake_llm_url
        self.tokens: list[str] = []
        self.api_keys: list[str] = []
        self._made = 0

    async def make(self, name: str, *, with_llm: bool = True) -> User:
        """A new user of the role `name` (which shows in its user name), logged in."""
        self._made += 1
        username = f"cs-{name.replace('_', '')}-{self.suffix}-{self._made}"
        user_id = await self.controller.create_user(username, self.password)
        token = await Controller.login(self.client, self.base_url, username, self.password)
        self.tokens.append(token)
        if with_llm and self.llm is not None:
            key = f"sk-conformance-{name.replace('_', '')}-{secrets.token_hex(12)}"
            self.api_keys.append(key)
            await self.controller.configure_llm(user_id, self.llm, self.fake_llm_url, key)
        return User(name, token, user_id, username)
