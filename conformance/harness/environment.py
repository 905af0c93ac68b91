"""What every check of a run shares: the Environment (the target, its users and projects, the fake LLM, the run's
HTTP client and ledger), and where a turn's deadline, a channel's path and a project's database come from."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

import gns3_copilot_spec as spec
from conformance.errors import NotTestable
from conformance.harness.ledger import Ledger
from conformance.harness.machine_load import stretched
from conformance.rules.scenarios import calls_tool, script_named_in, scripted_seconds

# The seed of the generated requests (errors.contract_operations) unless --seed says otherwise: fixed, so that two
# runs of one suite version against one server send the same requests and reach the same verdicts.
DEFAULT_SEED = 20261202


@dataclass
class User:
    name: str  # its role in the run: main, other, no_llm
    token: str | None  # None: the target authenticates nobody (auth.mode none)
    user_id: str | None = None
    username: str | None = None  # when the suite made it (auth.mode controller)


@dataclass
class Environment:
    """Shared by every check of a run."""

    target: Any  # conformance.harness.target.Target
    base_url: str
    fake_llm_url: str  # .../v1
    scripts: dict[str, dict[str, Any]]
    users: dict[str, User]  # main, other, and no_llm when the target has one
    project_id: str | None  # an opened project (None: a target without the GNS3 chat API and no projects)
    closed_project_id: str | None
    controller: Any | None  # conformance.harness.controller.Controller, when the target has a GNS3-style controller
    workdir: Any
    client: httpx.AsyncClient
    api_keys: list[str] = field(default_factory=list)  # the LLM API keys the suite configured (SECRET-001)
    slow_tool_seconds: float = 0.0  # a turn calling the slow tool, as preflight measured it
    ledger: Ledger = field(default_factory=Ledger)  # what the run made on the target (conformance.harness.cleanup)
    seed: int = DEFAULT_SEED  # of the generated requests (errors.contract_operations): the run's --seed

    def deadline_for(self, message: object) -> float:
        """How long a turn may take before the suite gives up on it: the target's stream_deadline_seconds (what a
        quick turn may take), plus every wait its scenario makes on purpose (the fake LLM's scripted silences and
        the slow tool's run), so that the suite's deadline is never shorter than its own scenario; stretched on a
        busy machine (conformance.harness.machine_load), since the deadline is the suite's, not the contract's."""
        script = self.scripts.get(script_named_in(message) or "")
        if script is None:
            return stretched(self.target.stream_deadline)
        slow = self.target.tools.get("slow")
        tool_time = self.slow_tool_seconds * calls_tool(script, slow["name"]) if slow else 0.0
        return stretched(self.target.stream_deadline + scripted_seconds(script) + tool_time)

    def prefix(self, project_id: str | None = None) -> str:
        return self.target.data["chat_prefix"].format(project_id=project_id or self.project_id)

    def channel_path(self, channel: str, project_id: str | None = None) -> str:
        """Where a declared channel is served (its `path`, {chat_prefix} filled in for `project_id`)."""
        path = self.target.channels[channel].get("path", "")
        return path.replace("{chat_prefix}", self.prefix(project_id)) if "{chat_prefix}" in path else path

    def authorization(self, user: str) -> dict[str, str]:
        """The Authorization header of a user: none for a target that authenticates nobody (auth.mode none)."""
        token = self.user(user).token
        return {"Authorization": f"Bearer {token}"} if token is not None else {}

    def user(self, name: str) -> User:
        if name not in self.users:
            raise NotTestable(f"the target provides no {name!r} user")
        return self.users[name]

    def project_folder(self, project_id: str | None = None) -> Path:
        """A project's folder on this machine, as declarations.database.project_dir names it."""
        project_dir = self.target.declarations["database"]["project_dir"]
        return Path(
            project_dir.replace("{workdir}", str(self.workdir)).replace("{project_id}", project_id or self.project_id)
        )

    def database_path(self, project_id: str | None = None) -> Path:
        """A project's database file (DB-001): the declared project directory, then the contract's location."""
        location = spec.load_document(spec.DB_DIR / "contract.yaml")["location"]
        return Path(location.replace("{project_dir}", str(self.project_folder(project_id))))
