"""Provisioning through a GNS3-style controller API (gns3-server's paths and bodies): log in, create users,
their LLM configurations and projects. A failure here is the harness's: nothing was judged yet."""

from __future__ import annotations

from typing import Any

import httpx

from .errors import HarnessError


class Controller:
    def __init__(self, client: httpx.AsyncClient, base_url: str, admin_token: str) -> None:
        self.client, self.base_url, self.admin_token = client, base_url, admin_token

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
        response = await client.post(
            base_url + "/v3/access/users/authenticate", json={"username": username, "password": password}
        )
        if response.status_code != 200:
            raise HarnessError(
                f"provisioning: logging in as {username!r} answered {response.status_code}: {response.text[:300]}"
            )
        return response.json()["access_token"]

    async def create_user(self, username: str, password: str) -> str:
        return (
            await self._call("POST", "/v3/access/users", 201, json_body={"username": username, "password": password})
        )["user_id"]

    async def configure_llm(self, user_id: str, config: dict[str, Any], base_url: str, api_key: str) -> None:
        body = {**config, "base_url": base_url, "api_key": api_key}
        await self._call("POST", f"/v3/access/users/{user_id}/llm-model-configs", 201, json_body=body)

    async def create_project(self, name: str) -> str:
        return (await self._call("POST", "/v3/projects", 201, json_body={"name": name}))["project_id"]

    async def close_project(self, project_id: str) -> None:
        await self._call("POST", f"/v3/projects/{project_id}/close", (200, 204))

    async def delete_project(self, project_id: str) -> None:
        await self._call("DELETE", f"/v3/projects/{project_id}", 204)
