"""The target file: how the suite reaches, provisions and judges one implementation (target.schema.json)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator

from conformance.errors import TargetError
from conformance.harness.findings import CHAT_DATA_IN_POSTGRESQL

__all__ = ["BUILTIN_TARGETS", "Baseline", "Target", "TargetError", "load_baseline", "load_target", "parse_target"]

HERE = Path(__file__).resolve().parents[1]  # conformance/: the schema and the built-in targets
BUILTIN_TARGETS = HERE / "targets"
SCHEMA_PATH = HERE / "target.schema.json"
# What the suite fills in start.command and start.env (provisioning.prepare), and what it leaves as written for a
# launcher in the command to fill (tools/with_postgres.py replaces {database_url}); any other {name} is a mistake.
START_PLACEHOLDERS = ("python", "port", "workdir", "fake_llm_url", "repo")
LAUNCHER_PLACEHOLDERS = ("database_url",)
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))


def _describe(error) -> str:
    where = "/".join(str(part) for part in error.absolute_path) or "(top level)"
    if error.validator == "oneOf" and error.context:  # name the closest alternative's problem, not all of them
        best = min(error.context, key=lambda e: len(list(e.absolute_path)) * -1)
        return f"{where}: {best.message}"
    return f"{where}: {error.message}"


@dataclass(frozen=True)
class Baseline:
    """Known deviations of one target: listed failures pass, new failures fail, listed passes fail as stale."""

    known_failures: dict[str, str] = field(default_factory=dict)
    not_testable: dict[str, str] = field(default_factory=dict)
    source: str | None = None


def load_baseline(path: Path) -> Baseline:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise TargetError(f"baseline {path}: {exc}") from exc
    if not isinstance(data, dict) or set(data) - {"target", "known_failures", "not_testable"}:
        raise TargetError(f"baseline {path}: expected the keys target, known_failures, not_testable")
    sections = {}
    for key in ("known_failures", "not_testable"):
        entries = data.get(key) or {}
        if not isinstance(entries, dict) or not all(isinstance(v, str) and v.strip() for v in entries.values()):
            raise TargetError(f"baseline {path}: `{key}` maps requirement ids to a one-line reason each")
        sections[key] = {str(k): v.strip() for k, v in entries.items()}
    return Baseline(sections["known_failures"], sections["not_testable"], str(path))


@dataclass(frozen=True)
class Target:
    data: dict[str, Any]
    path: Path | None
    baseline: Baseline

    @property
    def name(self) -> str:
        return self.data["name"]

    @property
    def declarations(self) -> dict[str, Any]:
        return self.data["declarations"]

    @property
    def channels(self) -> dict[str, dict[str, Any]]:
        """The protocols the target serves (CHANNEL-001), each with where: the GNS3 chat API alone by default."""
        return self.data.get("channels") or {"gns3": {}}

    @property
    def capabilities(self) -> set[str]:
        """The declared capabilities, one per declared channel (`channel_gns3`, `channel_openai`, ...), and
        `controller_auth` when the users log in through a GNS3-style controller: a rule of a channel the target does
        not serve, or of a controller it does not have, is N/A (conformance.harness.findings.not_applicable)."""
        derived = {f"channel_{name}" for name in self.channels}
        if self.section("auth", {"mode": "tokens"})["mode"] == "controller":
            derived.add("controller_auth")
        if self.database_engine == "postgresql":  # the per-project SQLite file's rules are N/A, with that reason
            derived.add(CHAT_DATA_IN_POSTGRESQL)
        return set(self.declarations["capabilities"]) | derived

    @property
    def database_engine(self) -> str:
        """Where the target keeps its chat data (declarations.database.engine): `sqlite`, the contract's file per
        project (the default), or `postgresql`."""
        return (self.declarations.get("database") or {}).get("engine", "sqlite")

    @property
    def serves_gns3(self) -> bool:
        return "gns3" in self.channels

    @property
    def heartbeat_interval(self) -> float:
        return float(self.declarations["heartbeat_interval"])

    @property
    def title_counts_in_stats(self) -> bool:
        return bool(self.declarations["title_counts_in_stats"])

    @property
    def tools(self) -> dict[str, Any]:
        return self.declarations["tools"]

    @property
    def stream_deadline(self) -> float:
        return float(self.data.get("stream_deadline_seconds", 30))

    def section(self, name: str, default: dict[str, Any]) -> dict[str, Any]:
        return self.data.get(name) or default


def _placeholder_problems(start: dict[str, Any]) -> list[str]:
    """Every {name} of start.command and start.env that is neither the suite's nor a launcher's."""
    places = [(f"start/command/{i}", part) for i, part in enumerate(start["command"])]
    places += [(f"start/env/{key}", value) for key, value in (start.get("env") or {}).items()]
    known = START_PLACEHOLDERS + LAUNCHER_PLACEHOLDERS
    filled, left = (" ".join(f"{{{name}}}" for name in names) for names in (START_PLACEHOLDERS, LAUNCHER_PLACEHOLDERS))
    return [
        f"{where}: unknown placeholder {{{name}}} (the suite fills {filled}, and leaves {left} for a launcher in the "
        "command to fill)"
        for where, value in places
        for name in _PLACEHOLDER.findall(value)
        if name not in known
    ]


def parse_target(data: Any, *, path: Path | None = None) -> Target:
    where = str(path) if path else "target"
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        raise TargetError(f"{where} is not a valid target file:\n" + "\n".join(f"  - {_describe(e)}" for e in errors))
    if ("base_url" in data) == ("start" in data):
        raise TargetError(f"{where}: give exactly one of `base_url` (a running server) and `start` (a command)")
    channels = data.get("channels") or {"gns3": {}}
    under_prefix = any("{chat_prefix}" in c.get("path", "") for c in channels.values())
    if ("gns3" in channels or under_prefix) and "chat_prefix" not in data:
        raise TargetError(
            f"{where}: `chat_prefix` is required when the target serves the GNS3 chat API or a channel under it"
        )
    if "gns3" in channels and "projects" not in data:
        raise TargetError(f"{where}: `projects` is required when the target serves the GNS3 chat API (channels: gns3)")
    if data["auth"]["mode"] == "none" and "gns3" in channels:
        raise TargetError(f"{where}: auth.mode none is for a target without the GNS3 chat API, whose rules need users")
    if "start" in data and (unknown := _placeholder_problems(data["start"])):
        raise TargetError(f"{where} is not a valid target file:\n" + "\n".join(f"  - {p}" for p in unknown))
    database = data["declarations"].get("database") or {}
    if "db_access" in data["declarations"]["capabilities"] and "project_dir" not in database:
        if database.get("engine") == "postgresql":
            raise TargetError(
                f"{where}: capability db_access means the suite reads the per-project SQLite file (declarations."
                "database.project_dir); a target that keeps its chat data in PostgreSQL (engine: postgresql) cannot "
                "declare it"
            )
        raise TargetError(f"{where}: capability db_access needs declarations.database.project_dir")
    baseline = Baseline()
    if "baseline" in data:
        baseline = load_baseline((path.parent if path else Path.cwd()) / data["baseline"])
    return Target(data, path, baseline)


def load_target(name_or_path: str | None) -> Target:
    """A target file by path, or a built-in target by name (`reference` by default)."""
    candidate = Path(name_or_path) if name_or_path else BUILTIN_TARGETS / "reference.yaml"
    if name_or_path and not candidate.exists():
        builtin = BUILTIN_TARGETS / f"{name_or_path}.yaml"
        if not builtin.exists():
            known = sorted(p.stem for p in BUILTIN_TARGETS.glob("*.yaml"))
            raise TargetError(f"no target file {name_or_path!r} and no built-in target of that name ({known})")
        candidate = builtin
    try:
        data = yaml.safe_load(candidate.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise TargetError(f"{candidate}: {exc}") from exc
    return parse_target(data, path=candidate.resolve())
