"""Scripts as data: load, validate and hold them (spec/fake-llm/script.schema.json).

A script is validated against the contract's JSON Schema first (so every error names the file, the script and
the path inside it), then turned into frozen dataclasses that the model and the server play.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from threading import Lock
from typing import Any

import yaml

import gns3_copilot_spec as spec
from fake_llm.errors import ScriptFileError

SCHEMA_PATH = spec.FAKE_LLM_DIR / "script.schema.json"
BUILTIN_DIR = Path(__file__).resolve().parent / "scripts"
SCRIPT_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class Failure:
    mode: str  # exception | http_status | mid_stream
    status: int = 500
    message: str = "fake LLM failure"
    after_chunks: int = 0
    retryable: bool = False


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: Mapping[str, Any]
    fragment_size: int = 8

    @property
    def arguments_json(self) -> str:
        """The arguments as the contract serialises them: compact, keys sorted."""
        return json.dumps(self.arguments, separators=(",", ":"), sort_keys=True)

    def fragments(self) -> list[str]:
        text = self.arguments_json
        return [text[i : i + self.fragment_size] for i in range(0, len(text), self.fragment_size)]


TOOL_CALL_SHAPES = ("fragments", "whole", "one_chunk", "interleaved")
USAGE_SHAPES = ("final_chunk", "in_finish_chunk", "absent")


@dataclass(frozen=True)
class StreamShape:
    """How a generation's deltas are cut (the schema's `ScriptStreamShape`); the defaults are the historic stream."""

    tool_calls: str = "fragments"  # one of TOOL_CALL_SHAPES
    usage: str = "final_chunk"  # one of USAGE_SHAPES
    empty_deltas: bool = False
    finish_reason: str | None = None  # None: tool_calls when the step has calls, else stop


@dataclass(frozen=True)
class Step:
    usage: Usage
    text_chunks: tuple[str, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    delay_before_ms: int = 0
    delay_between_ms: int = 0
    fail: Failure | None = None
    stream: StreamShape = StreamShape()

    @property
    def text(self) -> str:
        return "".join(self.text_chunks)

    @property
    def finish_reason(self) -> str:
        if self.stream.finish_reason is not None:
            return self.stream.finish_reason
        return "tool_calls" if self.tool_calls else "stop"

    @property
    def reports_usage(self) -> bool:
        return self.stream.usage != "absent"


@dataclass(frozen=True)
class Script:
    name: str
    steps: tuple[Step, ...]
    title: Step
    description: str = ""
    source: str = "<memory>"


def _step(data: Mapping[str, Any]) -> Step:
    return Step(
        usage=Usage(**data["usage"]),
        text_chunks=tuple(data.get("text_chunks", ())),
        tool_calls=tuple(ToolCall(**call) for call in data.get("tool_calls", ())),
        delay_before_ms=data.get("delay_before_ms", 0),
        delay_between_ms=data.get("delay_between_ms", 0),
        fail=Failure(**data["fail"]) if "fail" in data else None,
        stream=StreamShape(**data.get("stream", {})),
    )


def parse_script(data: Any, *, source: str = "<memory>") -> Script:
    """Validate one script document and build it; errors name the source, the script and where."""
    name = data.get("name", "?") if isinstance(data, dict) else "?"
    errors = sorted(spec.schema_validator(SCHEMA_PATH).iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        details = "; ".join(_describe(error) for error in errors)
        raise ScriptFileError(f"{source}: script {name!r} is invalid: {details}")
    return Script(
        name=data["name"],
        steps=tuple(_step(step) for step in data["steps"]),
        title=_step(data["title"]),
        description=data.get("description", ""),
        source=source,
    )


def _describe(error) -> str:
    path = list(error.absolute_path)
    where = "/".join(str(p) for p in path) or "(top level)"
    if len(path) >= 2 and path[0] == "steps":
        where = f"step {path[1]}" + (f" ({'/'.join(str(p) for p in path[2:])})" if len(path) > 2 else "")
    return f"{where}: {error.message}"


def _yaml(text: str) -> Any:
    """libyaml's loader where PyYAML has it (the server and the fake LLM parse every built-in script at start-up, ten
    times faster so); a document it refuses is read again by yaml.safe_load, whose error message is the one told."""
    try:
        return yaml.load(text, Loader=spec.YAML_LOADER)  # noqa: S506 - a safe loader
    except yaml.YAMLError:
        return yaml.safe_load(text)


def load_script_file(path: Path) -> Script:
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else _yaml(text)
    except (OSError, ValueError, yaml.YAMLError) as error:
        raise ScriptFileError(f"{path}: cannot read the script: {error}") from error
    script = parse_script(data, source=str(path))
    if script.name != path.stem:
        raise ScriptFileError(f"{path}: script {script.name!r} must be in a file named {script.name}{path.suffix}")
    return script


class ScriptLibrary:
    """Every script the fake LLM knows: the built-in ones, any folders given, and those registered at run time."""

    def __init__(self) -> None:
        self.scripts: dict[str, Script] = {}
        self._lock = Lock()

    @classmethod
    def from_folders(cls, folders: Iterable[Path] = (), *, builtin: bool = True) -> ScriptLibrary:
        library = cls()
        for folder in ([BUILTIN_DIR] if builtin else []) + [Path(f) for f in folders]:
            if not folder.is_dir():
                raise ScriptFileError(f"{folder}: not a folder of scripts")
            for path in sorted(folder.iterdir()):
                if path.suffix in SCRIPT_SUFFIXES:
                    library.add(load_script_file(path))
        return library

    def add(self, script: Script) -> None:
        with self._lock:
            self.scripts[script.name] = script

    def get(self, name: str) -> Script | None:
        with self._lock:
            return self.scripts.get(name)

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self.scripts)
