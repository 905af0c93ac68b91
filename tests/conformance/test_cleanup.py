"""The clean-up where the target file gives ready tokens and fixed projects: the suite cannot delete those users or
projects (they are the target's), so it deletes the sessions it made in them, each as its owner, and leaves
everything that was there before it; a session it cannot delete is listed in the report."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import yaml

from conformance.harness.cleanup import clean_up
from conformance.harness.engine import run
from conformance.harness.environment import Environment, User
from conformance.harness.ledger import Ledger
from conformance.harness.processes import free_port, start_fake_llm
from conformance.harness.target import load_target, parse_target
from tests.reference_server.conftest import start_server_process

PASSWORD = "password-of-a-user-1"


def provision(base_url: str, fake_llm_url: str) -> dict:
    """Users main and other with their LLM pointed at the fake LLM and access to every project, an opened and a
    closed project, as a target's administrator would set them up by hand."""
    with httpx.Client(base_url=base_url, trust_env=False) as client:
        admin = {"Authorization": "Bearer " + login(client, "admin", "admin")}
        roles = client.get("/v3/access/roles", headers=admin).json()
        user_role = next(role["role_id"] for role in roles if role["name"] == "User")
        tokens = {}
        for name in ("main", "other"):
            user = client.post("/v3/access/users", headers=admin, json={"username": name, "password": PASSWORD})
            ace = {"ace_type": "user", "path": "/projects", "user_id": user.json()["user_id"], "role_id": user_role}
            client.post("/v3/access/acl", headers=admin, json=ace).raise_for_status()
            config = {"name": "fake", "provider": "openai", "model": "m", "base_url": fake_llm_url, "api_key": "k-1"}
            client.post(f"/v3/access/users/{user.json()['user_id']}/llm-model-configs", headers=admin, json=config)
            tokens[name] = login(client, name, PASSWORD)
        opened = client.post("/v3/projects", headers=admin, json={"name": "opened"}).json()["project_id"]
        closed = client.post("/v3/projects", headers=admin, json={"name": "closed"}).json()["project_id"]
        client.post(f"/v3/projects/{closed}/close", headers=admin)
    return {"tokens": tokens, "opened": opened, "closed": closed}


def login(client: httpx.Client, username: str, password: str) -> str:
    answer = client.post("/v3/access/users/authenticate", json={"username": username, "password": password})
    return answer.json()["access_token"]


def sessions_of(base_url: str, token: str, project_id: str) -> set[str]:
    url = f"{base_url}/v3/projects/{project_id}/chat/sessions"
    with httpx.Client(trust_env=False) as client:
        return {s["thread_id"] for s in client.get(url, headers={"Authorization": f"Bearer {token}"}).json()}


@pytest.mark.slow  # whole suite runs or servers: left out of --quick
def test_a_run_with_ready_tokens_deletes_only_the_sessions_it_made(tmp_path):
    server = start_server_process(tmp_path / "data")
    try:
        port = free_port()
        (tmp_path / "no-scripts").mkdir()
        fake, fake_url = start_fake_llm(tmp_path / "no-scripts", port)
        try:
            setup = provision(server.base_url, fake_url)
            mine = {"Authorization": f"Bearer {setup['tokens']['main']}"}
            before = f"{server.base_url}/v3/projects/{setup['opened']}/chat/stream"
            body = {"message": "a session of the user's own, before the run", "session_id": "users-own-session"}
            with httpx.Client(trust_env=False, timeout=30) as client:
                assert client.post(before, headers=mine, json=body).status_code == 200
        finally:
            fake.stop(5)
        data = load_target(None).data
        for key in ("start", "llm", "access_control"):  # ready tokens: no controller to grant access with
            del data[key]
        data.update(
            name="reference-with-tokens",
            base_url=server.base_url,
            auth={"mode": "tokens", "tokens": setup["tokens"]},
            projects={"mode": "fixed", "opened": setup["opened"], "closed": setup["closed"]},
            llm={"mode": "preconfigured"},
            fake_llm={"port": port},
        )
        data["declarations"]["capabilities"].remove("db_access")
        del data["declarations"]["database"]
        path = tmp_path / "target.yaml"
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
        result = asyncio.run(run(load_target(str(path)), only=["history", "sessions"]))
        left = {name: sessions_of(server.base_url, token, setup["opened"]) for name, token in setup["tokens"].items()}
    finally:
        server.stop()
    assert result.passed, [(v.id, v.verdict) for v in result.verdicts if v.verdict not in ("PASS", "NOT SELECTED")]
    assert result.cleanup.removed["session"] >= 5 and result.cleanup.left == []
    assert result.cleanup.removed["user"] == result.cleanup.removed["project"] == 0  # the target's own: kept
    assert left == {"main": {"users-own-session"}, "other": set()}


@pytest.mark.parametrize("keep", [False, True])
def test_what_cannot_be_removed_is_listed_and_keep_removes_nothing(keep):
    """A server that refuses a deletion (here: 403 for the project) loses nothing of the report: the clean-up lists
    it with the answer, and goes on with the rest; --keep sends no DELETE at all."""
    deleted: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        deleted.append(request.url.path)
        if request.url.path.startswith("/v3/projects/"):
            return httpx.Response(403, json={"message": "Permission denied", "code": "forbidden"})
        return httpx.Response(204)

    async def clean() -> object:
        ledger = Ledger(projects={"p-1": "conformance-x"}, users={"u-1": "cs-main-x-1"}, llm_configs=[("u-1", "c-1")])
        async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
            target = parse_target({**load_target(None).data, "name": "t"})
            controller = type("C", (), {"admin_token": "admin-token-value"})()
            env = Environment(
                target, "http://t", "", {}, {"main": User("main", "x")}, "p", "c", controller, None, client
            )
            env.ledger = ledger
            return await clean_up(env, keep=keep)

    report = asyncio.run(clean())
    if keep:
        assert deleted == [] and report.kept and report.left == []
        assert report.removed == {"project": 1, "session": 0, "ace": 0, "llm_config": 1, "user": 1}  # what was kept
        assert "kept (--keep)" in report.summary()
        return
    assert deleted == ["/v3/projects/p-1", "/v3/access/users/u-1/llm-model-configs/c-1", "/v3/access/users/u-1"]
    assert report.removed == {"project": 0, "session": 0, "ace": 0, "llm_config": 1, "user": 1}
    [left] = report.left
    assert (left.kind, left.id, left.name) == ("project", "p-1", "conformance-x")
    assert "answered 403" in left.reason and "Permission denied" in left.reason
    assert "1 left behind" in report.summary()
    assert json.loads(json.dumps(report.as_data()))["left"][0]["kind"] == "project"
