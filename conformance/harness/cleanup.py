"""What a run creates on the target, and its removal at the end of the run (`--keep` keeps it).

The ledger is written as things are made: users and their LLM configurations and projects through the controller
(conformance.harness.controller), chat sessions by the chat client. At the end, projects made by the suite go with their
sessions; sessions in projects the target file names (projects.mode fixed) are deleted one by one as their owner;
then the access control entries it made, LLM configurations and users. Whatever the server refuses to remove is
listed in every report, never hidden.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from conformance.harness.environment import Environment
    from conformance.harness.ledger import Ledger


@dataclass
class Leftover:
    kind: str  # project, session, ace, llm_config, user
    id: str
    reason: str
    name: str = ""


@dataclass
class CleanupReport:
    kept: bool
    removed: dict[str, int] = field(default_factory=dict)
    left: list[Leftover] = field(default_factory=list)

    def as_data(self) -> dict[str, Any]:
        return {"kept": self.kept, "removed": self.removed, "left": [asdict(item) for item in self.left]}

    def summary(self) -> str:
        if self.kept:
            return "kept (--keep): " + _counts(self.removed) + " left on the target on purpose"
        removed = _counts(self.removed) or "nothing"
        if not self.left:
            return f"removed {removed}; nothing left behind"
        return f"removed {removed}; {len(self.left)} left behind (see `cleanup.left` in conformance.json)"


def _counts(counts: dict[str, int]) -> str:
    names = {
        "project": "projects",
        "session": "sessions",
        "ace": "access control entries",
        "llm_config": "LLM configurations",
        "user": "users",
    }
    return ", ".join(f"{count} {names[kind]}" for kind, count in counts.items() if count)


def _made(ledger: Ledger, fixed_projects: bool) -> dict[str, int]:
    return {
        "project": len(ledger.projects),
        "session": len(ledger.sessions) if fixed_projects else 0,
        "ace": len(ledger.aces),
        "llm_config": len(ledger.llm_configs),
        "user": len(ledger.users),
    }


async def clean_up(env: Environment, *, keep: bool) -> CleanupReport:
    """Remove what the run made (nothing with `keep`), in an order that leaves nothing dangling."""
    ledger = env.ledger
    fixed = env.target.section("projects", {"mode": "none"})["mode"] == "fixed"
    if keep:
        return CleanupReport(True, _made(ledger, fixed))
    report = CleanupReport(False, {"project": 0, "session": 0, "ace": 0, "llm_config": 0, "user": 0})
    admin = {"Authorization": f"Bearer {env.controller.admin_token}"} if env.controller is not None else {}

    async def delete(path: str, headers: dict[str, str]) -> str | None:
        """None when the thing is gone (404: a check already deleted it, its own business), else why not."""
        try:
            response = await env.client.delete(env.base_url + path, headers=headers)
        except httpx.HTTPError as exc:
            return f"DELETE {path}: {type(exc).__name__}: {exc}"
        if response.status_code in (200, 204):
            return None
        if response.status_code == 404:
            return "gone"
        return f"DELETE {path} answered {response.status_code}: {response.text[:200]}"

    async def remove(kind: str, ident: str, name: str, path: str, headers: dict[str, str]) -> None:
        problem = await delete(path, headers)
        if problem is None:
            report.removed[kind] += 1
        elif problem != "gone":
            report.left.append(Leftover(kind, ident, problem, name))

    if fixed:  # the target's own projects stay; only the sessions the suite made in them go, each by its owner
        for (project_id, session_id), roles in sorted(ledger.sessions.items()):
            path = env.target.data["chat_prefix"].format(project_id=project_id) + f"/sessions/{session_id}"
            problems = []
            for role in sorted(roles):  # several roles when another user's turn reached it: one is its owner
                problem = await delete(path, env.authorization(role))
                if problem is None or problem == "gone":
                    report.removed["session"] += problem is None
                    break
                problems.append(f"as {role}: {problem}")
            else:
                report.left.append(Leftover("session", session_id, "; ".join(problems), f"project {project_id}"))
    for project_id, name in ledger.projects.items():
        await remove("project", project_id, name, f"/v3/projects/{project_id}", admin)
    for ace_id, what in ledger.aces.items():
        await remove("ace", ace_id, what, f"/v3/access/acl/{ace_id}", admin)
    for user_id, config_id in ledger.llm_configs:
        path = f"/v3/access/users/{user_id}/llm-model-configs/{config_id}"
        await remove("llm_config", config_id, ledger.users.get(user_id, ""), path, admin)
    for user_id in ledger.unidentified_llm_configs:
        reason = "its creation answer carried no config_id (removed with its user, if the server cascades)"
        report.left.append(Leftover("llm_config", "", reason, ledger.users.get(user_id, user_id)))
    for user_id, username in ledger.users.items():
        await remove("user", user_id, username, f"/v3/access/users/{user_id}", admin)
    return report


async def finish(env: Environment, keep: bool) -> CleanupReport:
    """The clean-up, which never costs the run its verdicts: a failure of its own is listed as what it left."""
    try:
        return await clean_up(env, keep=keep)
    except Exception as exc:  # reported, not raised
        return CleanupReport(False, {}, [Leftover("cleanup", "", f"the clean-up failed: {type(exc).__name__}: {exc}")])
