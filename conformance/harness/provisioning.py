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

from conformance.errors import HarnessError, TargetMisdeclared
from conformance.harness.cleanup import finish
from conformance.harness.controller import LOGIN_PATH, Controller, LoginRefused, UserMaker
from conformance.harness.environment import DEFAULT_SEED, Environment, User
from conformance.harness.ledger import Ledger
from conformance.harness.preflight import preflight
from conformance.harness.processes import REPO_ROOT, Process, free_port, start_fake_llm, start_target
from conformance.harness.target import START_PLACEHOLDERS, TOOL_ROLES, Target
from conformance.rules.scenarios import calls_tool, scenario_scripts, write_scripts


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


def _stand_in(role: str) -> dict[str, Any]:
    return {"name": f"cs_undeclared_{role}", "arguments": {}}


def _with_stand_ins(tools: dict[str, Any]) -> dict[str, Any]:
    """The declared tools, and a stand-in for every role left out: the scenarios that call one are then known."""
    stand_ins = {role: [_stand_in(role)] * 2 if role == "parallel" else _stand_in(role) for role in TOOL_ROLES}
    return {**stand_ins, **tools}


def undeclared_scenarios(target: Target) -> dict[str, str]:
    """Scenario -> the tool role (declarations.tools.<role>) it calls and the target does not declare: the suite does
    not play it, and what only it could judge is N/A with that reason."""
    scripts = scenario_scripts(_with_stand_ins(target.tools), target.heartbeat_interval)
    return {
        name: role
        for name, script in scripts.items()
        for role in TOOL_ROLES
        if role not in target.tools and calls_tool(script, _stand_in(role)["name"])
    }


def target_scripts(target: Target, folder: Path) -> dict[str, dict[str, Any]]:
    """The fake LLM's scripts of the target's scenarios, written into `folder`: every scenario whose tools it
    declares (a channel-only target may declare none)."""
    scripts = write_scripts(folder, _with_stand_ins(target.tools), target.heartbeat_interval)
    for name in undeclared_scenarios(target):
        scripts.pop(name)
        (folder / f"{name}.yaml").unlink()
    return scripts


def _start_advice(start: dict[str, Any], ready_path: str) -> str:
    """What the target file may have wrong when its server did not start: a {port} the command never names."""
    if any("{port}" in part for part in [*start["command"], *(start.get("env") or {}).values()]):
        return ""
    return (
        f"\n(start.command and start.env lack the {{port}} placeholder: the suite waits for the server at "
        f"http://127.0.0.1:{{port}}{ready_path}; give the server that port, e.g. `--port {{port}}`)"
    )


def _fill(value: str, mapping: dict[str, str]) -> str:
    """The suite's placeholders filled in; a launcher's ({database_url}) stays as written (target.py checks both)."""
    for key, replacement in mapping.items():
        value = value.replace("{" + key + "}", replacement)
    return value


async def prepare(
    target: Target,
    workdir: Path,
    client: httpx.AsyncClient,
    seed: int = DEFAULT_SEED,
    slow_tool: bool = True,
    keep: bool = False,
) -> Prepared:
    """Start the fake LLM and the target, provision users and projects, and preflight (measuring the slow tool
    when `slow_tool`: a selected check plays it). When preflight stops the run, what provisioning made on the
    target is removed again (unless `keep`)."""
    processes: list[Process] = []
    try:
        scripts = target_scripts(target, workdir / "scripts")
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
            try:
                started = await asyncio.to_thread(
                    start_target,
                    command,
                    env=env,
                    base_url=base_url,
                    ready_path=target.ready_path,
                    timeout=start.get("timeout_seconds", 60),
                    workdir=workdir,
                )
            except HarnessError as exc:
                raise HarnessError(f"{exc}{_start_advice(start, target.ready_path)}") from exc
            processes.append(started)
        else:
            base_url = target.data["base_url"].rstrip("/")
        try:
            prepared = await _provision(target, workdir, client, base_url, fake_url, scripts, processes)
        except httpx.TransportError as exc:
            if "start" in target.data:  # the suite started it at that URL: the server stopped answering
                raise HarnessError(f"provisioning: {base_url} stopped answering ({type(exc).__name__}: {exc})") from exc
            raise TargetMisdeclared(
                "base_url", f"no server answers at {base_url} ({type(exc).__name__}: {exc or 'no answer'})"
            ) from exc
        prepared.env.seed = seed
        try:
            await preflight(prepared.env, slow_tool)
        except BaseException:
            if not keep:
                await finish(prepared.env, keep=False)  # never raises: a failure of its own is only not removing
            raise
        return prepared
    except BaseException:
        for process in reversed(processes):
            process.stop(5)
        raise


async def _provision(target, workdir, client, base_url, fake_url, scripts, processes) -> Prepared:
    auth = target.auth
    suffix = secrets.token_hex(3)
    users: dict[str, User] = {}
    controller = maker = None
    ledger = Ledger()
    llm = target.llm
    if llm["mode"] == "controller" and auth["mode"] != "controller":
        raise HarnessError("llm.mode controller needs auth.mode controller (the admin configures the users)")
    if auth["mode"] == "controller":
        admin = auth["admin"]
        token = await _admin_token(client, base_url, admin)
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


async def _admin_token(client: httpx.AsyncClient, base_url: str, admin: dict[str, Any]) -> str:
    """The admin's token; refused credentials are the target file's (auth.admin), told before anything is made."""
    try:
        return await Controller.login(client, base_url, admin["username"], admin["password"])
    except LoginRefused as refused:
        url = base_url + LOGIN_PATH
        if refused.status in (401, 403):
            raise TargetMisdeclared(
                "auth.admin",
                f"POST {url} as {admin['username']!r} answered {refused.status}: the server refuses the admin's "
                "username or password",
            ) from refused
        if refused.status == 404:
            raise TargetMisdeclared(
                "base_url", f"POST {url} answered 404: no GNS3 controller API under {base_url} (auth.mode controller)"
            ) from refused
        raise


async def own_project(env: Environment, check_id: str) -> Environment:
    """The check's environment with an opened project of its own, where the suite makes projects (projects.mode
    controller): no other check's sessions are then in its listings, so one broken session cannot spread to other
    checks, whatever their order. (A project, not a user: making a user costs the server a password hash.)"""
    if env.controller is None or env.target.section("projects", {"mode": "fixed"})["mode"] != "controller":
        return env  # the target file names fixed projects: every check shares them
    project_id = await env.controller.create_project(f"conformance-{check_id}-{secrets.token_hex(3)}")
    return replace(env, project_id=project_id)
