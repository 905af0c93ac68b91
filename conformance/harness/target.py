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

from conformance.channels.endpoints import OPENAI_ENDPOINTS
from conformance.errors import TargetError
from conformance.harness.findings import CHAT_DATA_IN_POSTGRESQL, OPENAI_ENDPOINT_CAPABILITIES

__all__ = ["BUILTIN_TARGETS", "Baseline", "Target", "TargetError", "load_baseline", "load_target", "parse_target"]

HERE = Path(__file__).resolve().parents[1]  # conformance/: the schema and the built-in targets
BUILTIN_TARGETS = HERE / "targets"
SCHEMA_PATH = HERE / "target.schema.json"
# What the suite fills in start.command and start.env (provisioning.prepare), and what it leaves as written for a
# launcher in the command to fill (tools/with_postgres.py replaces {database_url}); any other {name} is a mistake.
START_PLACEHOLDERS = ("python", "port", "workdir", "fake_llm_url", "repo")
LAUNCHER_PLACEHOLDERS = ("database_url",)
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
# The profiles (conformance.checks.PROFILES): what a target is judged on unless the run says otherwise.
CONTRACT_PROFILE, PROTOCOL_PROFILE = "contract", "protocol"
# A channel-only target that declares no heartbeat interval: the reference server's default. Only the contract's
# heartbeat rule (CHANNEL-007) and the silent scenario it plays read it.
DEFAULT_HEARTBEAT_INTERVAL = 15.0
# What a target with the GNS3 chat API must declare (its rules read each); a channel-only target may leave them out.
GNS3_DECLARATIONS = ("heartbeat_interval", "title_counts_in_stats", "capabilities", "tools")
# What an OpenAI channel's path is the base of: a path ending in one of them names an endpoint, not the base.
OPENAI_SUFFIXES = ("/chat/completions", "/responses", "/models")


@cache
def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(_schema())


def _mode_mismatch(error) -> bool:
    return error.validator == "const" and list(error.relative_path)[-1:] == ["mode"]


def _describe(error) -> str:
    where = "/".join(str(part) for part in error.absolute_path) or "(top level)"
    if error.validator == "oneOf" and error.context:  # name the problem of the alternative meant, not all of them
        branches: dict[Any, list] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        modes = [sub.validator_value for subs in branches.values() for sub in subs if _mode_mismatch(sub)]
        meant = [subs for subs in branches.values() if not any(_mode_mismatch(sub) for sub in subs)]
        if not meant:  # the mode is none of the alternatives'
            return f"{where}/mode: {error.instance.get('mode')!r} is not one of {', '.join(map(repr, modes))}"
        best = max(meant[0], key=lambda sub: len(list(sub.absolute_path)))
        return f"{'/'.join(str(part) for part in best.absolute_path) or where}: {best.message}"
    return f"{where}: {error.message}"


# The tool roles a target may declare (declarations.tools), each the tool call of some scenarios.
TOOL_ROLES = tuple(_schema()["properties"]["declarations"]["properties"]["tools"]["properties"])


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
        return self.data.get("declarations") or {}

    @property
    def channels(self) -> dict[str, dict[str, Any]]:
        """The protocols the target serves (CHANNEL-001), each with where: the GNS3 chat API alone by default. A path
        loses its trailing slash, so that `/` (routes at the server's root) joins `/chat/completions` as one path."""
        declared = self.data.get("channels") or {"gns3": {}}
        return {
            name: {**where, "path": where["path"].rstrip("/")} if "path" in where else where
            for name, where in declared.items()
        }

    @property
    def default_profile(self) -> str:
        """`contract` for a target that declares the GNS3 chat API (it claims the whole contract), `protocol` for a
        channel-only one (a protocol's server, judged on the protocol's own rules unless asked for more)."""
        return CONTRACT_PROFILE if self.serves_gns3 else PROTOCOL_PROFILE

    @property
    def auth(self) -> dict[str, Any]:
        """How the suite gets tokens: required with the GNS3 chat API; a channel-only target without it
        authenticates nobody."""
        return self.data.get("auth") or {"mode": "none"}

    @property
    def llm(self) -> dict[str, Any]:
        return self.data.get("llm") or {"mode": "preconfigured"}

    @property
    def ready_path(self) -> str:
        """What the suite polls until the server it started answers (below 500)."""
        return self.data.get("start", {}).get("ready_path") or ("/v3/version" if self.serves_gns3 else "/")

    @property
    def capabilities(self) -> set[str]:
        """The declared capabilities, one per declared channel (`channel_gns3`, `channel_openai`, ...), and
        `controller_auth` when the users log in through a GNS3-style controller: a rule of a channel the target does
        not serve, or of a controller it does not have, is N/A (conformance.harness.findings.not_applicable)."""
        derived = {f"channel_{name}" for name in self.channels}
        if "openai" in self.channels:  # each OpenAI endpoint declared (all by default) is a capability of its rules
            derived |= {
                OPENAI_ENDPOINT_CAPABILITIES[e] for e in self.openai_endpoints if e in OPENAI_ENDPOINT_CAPABILITIES
            }
        if self.auth["mode"] == "controller":
            derived.add("controller_auth")
        if self.database_engine == "postgresql":  # the per-project SQLite file's rules are N/A, with that reason
            derived.add(CHAT_DATA_IN_POSTGRESQL)
        return set(self.declarations.get("capabilities", [])) | derived

    @property
    def openai_endpoints(self) -> tuple[str, ...]:
        """The OpenAI endpoints the target serves (channels.openai.endpoints; all three by default)."""
        return tuple(self.channels.get("openai", {}).get("endpoints", OPENAI_ENDPOINTS))

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
        return float(self.declarations.get("heartbeat_interval", DEFAULT_HEARTBEAT_INTERVAL))

    @property
    def title_counts_in_stats(self) -> bool:
        return bool(self.declarations.get("title_counts_in_stats", True))  # STATS-006: the contract's default

    @property
    def tools(self) -> dict[str, Any]:
        """The declared tool calls by role (single, parallel, failing, slow): a role left out plays no scenario."""
        return self.declarations.get("tools") or {}

    @property
    def stream_deadline(self) -> float:
        return float(self.data.get("stream_deadline_seconds", 30))

    def section(self, name: str, default: dict[str, Any]) -> dict[str, Any]:
        return self.data.get(name) or default


def _start_problems(start: dict[str, Any]) -> list[str]:
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


def _gns3_problems(data: dict[str, Any], channels: dict[str, Any]) -> list[str]:
    """What a target with the GNS3 chat API (or a channel under its prefix) must declare, and does not."""
    problems = []
    under_prefix = any("{chat_prefix}" in c.get("path", "") for c in channels.values())
    if ("gns3" in channels or under_prefix) and "chat_prefix" not in data:
        problems.append("`chat_prefix` is required when the target serves the GNS3 chat API or a channel under it")
    if "gns3" not in channels:
        return problems
    why = "when the target serves the GNS3 chat API (channels: gns3, the default)"
    problems += [f"`{key}` is required {why}" for key in ("projects", "auth", "llm") if key not in data]
    if data.get("auth", {}).get("mode") == "none":
        problems.append("auth.mode none is for a target without the GNS3 chat API, whose rules need users")
    if data.get("auth", {}).get("mode") == "tokens" and "other" not in data["auth"]["tokens"]:
        problems.append(f"auth.tokens.other (a second user: the isolation rules need one) is required {why}")
    declarations = data.get("declarations")
    if declarations is None:
        problems.append(f"`declarations` ({', '.join(GNS3_DECLARATIONS)}) is required {why}")
        return problems
    problems += [f"declarations.{key} is required {why}" for key in GNS3_DECLARATIONS if key not in declarations]
    if "tools" in declarations and "single" not in declarations["tools"]:
        problems.append(f"declarations.tools.single (a tool call that works) is required {why}")
    return problems


def _channel_problems(channels: dict[str, Any]) -> list[str]:
    """A channel path the suite would get wrong: an OpenAI path that names an endpoint instead of their base."""
    path = channels.get("openai", {}).get("path", "")
    ending = next((suffix for suffix in OPENAI_SUFFIXES if path.rstrip("/").endswith(suffix)), None)
    if ending is None:
        return []
    base = path.rstrip("/").removesuffix(ending) or "/"
    return [
        f"channels.openai.path: {path!r} names the endpoint {ending}; give the base the suite appends "
        f"{', '.join(OPENAI_SUFFIXES)} to: {base!r}"
    ]


def _database_problem(declarations: dict[str, Any]) -> str | None:
    database = declarations.get("database") or {}
    if "db_access" not in declarations.get("capabilities", []) or "project_dir" in database:
        return None
    if database.get("engine") == "postgresql":
        return (
            "capability db_access means the suite reads the per-project SQLite file (declarations.database."
            "project_dir); a target that keeps its chat data in PostgreSQL (engine: postgresql) cannot declare it"
        )
    return "capability db_access needs declarations.database.project_dir"


def parse_target(data: Any, *, path: Path | None = None) -> Target:
    """The target of a file's data, or TargetError listing every problem of it: the schema's first, then what the
    schema cannot say (what the GNS3 chat API needs, a path, the placeholders)."""
    where = str(path) if path else "target"
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        raise TargetError(f"{where} is not a valid target file:\n" + "\n".join(f"  - {_describe(e)}" for e in errors))
    if ("base_url" in data) == ("start" in data):
        raise TargetError(f"{where}: give exactly one of `base_url` (a running server) and `start` (a command)")
    channels = data.get("channels") or {"gns3": {}}
    problems = _gns3_problems(data, channels) + _channel_problems(channels)
    problems += _start_problems(data["start"]) if "start" in data else []
    if (database := _database_problem(data.get("declarations") or {})) is not None:
        problems.append(database)
    if len(problems) == 1:
        raise TargetError(f"{where}: {problems[0]}")
    if problems:
        raise TargetError(f"{where} is not a valid target file:\n" + "\n".join(f"  - {p}" for p in problems))
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
