"""What a run needs before its first check: the fake LLM and its scripts, the target (started when its file says
how), users, LLM configurations and projects (through the controller, or named by the target file), then preflight;
and a check's own project (`own_project`). What it made is in the environment's ledger (conformance.harness.cleanup)."""

from __future__ import annotations

import asyncio
import secrets
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx

from conformance.errors import HarnessError
from conformance.harness.controller import Controller, UserMaker
from conformance.harness.environment import DEFAULT_SEED, Environment, User
from conformance.harness.ledger import Ledger
from conformance.harness.preflight import preflight
from conformance.harness.processes import REPO_ROOT, Process, free_port, start_fake_llm, start_target
from conformance.harness.target import START_PLACEHOLDERS, Target
from conformance.rules.scenarios import write_scripts


@dataclass
class Prepared:
    env: Environment
    processes: list[Process]
    tokens: list[str]

    def secrets(self) -> dict[str, str]:
        """What reports must never show: the configured API keys and every bearer token of the run."""
        found = {f"api_key_{i}": key for i, key in enumerate(self.env.api_keys)}
        found.update({f"token_{i}": token for i, token in enumerate(self.tokens)})
        if self.env.controller is not None:
            found["admin_token"] = self.env.controller.admin_token
        return found

    def replay(self) -> dict[str, Any]:
        """What a standalone reproduction of an exchange needs besides the exchange: the fake LLM's port (the users'
        LLM configurations name it) and, per user role, who it is and how its token is obtained."""
        users = {}
        for role, user in self.env.users.items():
            if user.username:
                users[role] = {"username": user.username, "token": "controller"}
            else:
                users[role] = {"username": None, "token": f"target file: auth.tokens.{role}"}
        return {"fake_llm_port": httpx.URL(self.env.fake_llm_url).port, "base_url": self.env.base_url, "users": users}


def _fill(value: str, mapping: dict[str, str]) -> str:
    """The suite's placeholders filled in; a launcher's ({database_url}) stays as written (target.py checks both)."""
    for key, replacement in mapping.items():
        value = value.replace("{" + key + "}", replacement)
    return value


async def prepare(target: Target, workdir: Path, client: httpx.AsyncClient, seed: int = DEFAULT_SEED) -> Prepared:
    processes: list[Process] = []
    try:
        scripts = write_scripts(workdir / "scripts", target.tools, target.heartbeat_interval)
        fake, fake_url = start_fake_llm(workdir / "scripts", target.section("fake_llm", {}).get("port", 0))
        processes.append(fake)
        if "start" in target.data:
            start = target.data["start"]
            port = free_port()
            mapping = {
                "python": sys.executable,
                "port": str(port),
                "workdir": str(workdir),
                "fake_llm_url": fake_url,
                "repo": str(REPO_ROOT),
            }
            assert tuple(mapping) == START_PLACEHOLDERS  # what parse_target lets through
            base_url = f"http://127.0.0.1:{port}"
            command = [_fill(part, mapping) for part in start["command"]]
            env = {k: _fill(v, mapping) for k, v in (start.get("env") or {}).items()}
            processes.append(
                await asyncio.to_thread(
                    start_target,
                    command,
                    env=env,
                    base_url=base_url,
                    ready_path=start.get("ready_path", "/v3/version"),
                    timeout=start.get("timeout_seconds", 60),
                    workdir=workdir,
                )
            )
        else:
            base_url = target.data["base_url"].rstrip("/")
        prepared = await _provision(target, workdir, client, base_url, fake_url, scripts, processes)
        prepared.env.seed = seed
        await preflight(prepared.env)
        return prepared
    except BaseException:
        for process in reversed(processes):
            process.stop(5)
        raise


async def _provision(target, workdir, client, base_url, fake_url, scripts, processes) -> Prepared:
    auth = target.section("auth", {"mode": "tokens"})
    suffix = secrets.token_hex(3)
    users: dict[str, User] = {}
    controller = maker = None
    ledger = Ledger()
    llm = target.section("llm", {"mode": "preconfigured"})
    if llm["mode"] == "controller" and auth["mode"] != "controller":
        raise HarnessError("llm.mode controller needs auth.mode controller (the admin configures the users)")
    if auth["mode"] == "controller":
        admin = auth["admin"]
        token = await Controller.login(client, base_url, admin["username"], admin["password"])
        controller = Controller(client, base_url, token, ledger)
        password = auth.get("user_password", "conformance-pass-1")
        llm_config = llm["config"] if llm["mode"] == "controller" else None
        maker = UserMaker(controller, client, base_url, suffix, password, llm_config, fake_url)
        for name in ("main", "other", "no_llm"):
            users[name] = await maker.make(name, with_llm=name != "no_llm")
    elif auth["mode"] == "tokens":
        for name, token in auth["tokens"].items():
            users[name] = User(name, token)
    else:  # none: one anonymous user; what needs a second one or a refused token is NOT TESTABLE
        users["main"] = User("main", None)
    access = target.data.get("access_control")
    if access is not None:
        if controller is None:
            raise HarnessError("access_control needs auth.mode controller (the admin grants the suite's users access)")
        role_id = await controller.role_id(access.get("role", "User"))
        for user in users.values():  # every project, as the suite makes a project per check
            await controller.grant(user.user_id, "/projects", role_id)
        users["stranger"] = await maker.make("stranger")  # no entry: no access to any project it did not create
    projects = target.section("projects", {"mode": "none"})
    project_id = closed = None  # a target without the GNS3 chat API may have no projects
    if projects["mode"] == "controller":
        if controller is None:
            raise HarnessError("projects.mode controller needs auth.mode controller")
        project_id = await controller.create_project(f"conformance-{suffix}")
        closed = await controller.create_project(f"conformance-closed-{suffix}")
        await controller.close_project(closed)
    elif projects["mode"] == "fixed":
        project_id, closed = projects["opened"], projects["closed"]
    env = Environment(
        target=target,
        base_url=base_url,
        fake_llm_url=fake_url,
        scripts=scripts,
        users=users,
        project_id=project_id,
        closed_project_id=closed,
        controller=controller,
        workdir=workdir,
        client=client,
        api_keys=maker.api_keys if maker else [],
        ledger=ledger,
    )
    return Prepared(env, processes, maker.tokens if maker else [u.token for u in users.values() if u.token])


async def own_project(env: Environment, check_id: str) -> Environment:
    """The check's environment with an opened project of its own, where the suite makes projects (projects.mode
    controller): no other check's sessions are then in its listings, so one broken session cannot spread to other
    checks, whatever their order. (A project, not a user: making a user costs the server a password hash.)"""
    if env.controller is None or env.target.section("projects", {"mode": "fixed"})["mode"] != "controller":
        return env  # the target file names fixed projects: every check shares them
    project_id = await env.controller.create_project(f"conformance-{check_id}-{secrets.token_hex(3)}")
    return replace(env, project_id=project_id)
