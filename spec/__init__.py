"""The contract of the GNS3 Copilot Chat API, as data, with the few loaders everyone shares.

The files beside this module are the source of truth; this module only finds and loads them, so that the
reference server, the conformance suite, the generators and the tests read the contract the same way.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource
from referencing.jsonschema import DRAFT202012

from .fast_validation import GatedValidator, compiled

SPEC_DIR = Path(__file__).resolve().parent
OPENAPI_PATH = SPEC_DIR / "openapi.yaml"
EVENTS_DIR = SPEC_DIR / "events"
SCHEMAS_DIR = SPEC_DIR / "schemas"
EXAMPLES_DIR = SPEC_DIR / "examples"
DB_DIR = SPEC_DIR / "db"
FAKE_LLM_DIR = SPEC_DIR / "fake-llm"
REQUIREMENTS_PATH = SPEC_DIR / "requirements.yaml"
CONSTANTS_PATH = SPEC_DIR / "constants.yaml"  # the constants the prose fixes, each with its requirement
BEHAVIOUR_PATH = SPEC_DIR / "behaviour.md"
EVENT_UNION = EVENTS_DIR / "chat-stream-event.json"
CHANNELS_DIR = SPEC_DIR / "channels"  # the channels' own schemas (ours)
OFFICIAL_DIR = CHANNELS_DIR / "official"  # the protocols' official schemas, derived from their packages

# The folders holding JSON Schema files, which reference one another by relative file path.
SCHEMA_FOLDERS = (EVENTS_DIR, SCHEMAS_DIR, FAKE_LLM_DIR, CHANNELS_DIR, OFFICIAL_DIR)


# libyaml's loader where PyYAML was built with it: every process (server, suite, fake LLM) parses the contract's YAML
# at start-up, and the pure-Python loader takes ten times as long. Same documents either way (the contract is plain
# YAML); user files keep yaml.safe_load's error messages, which the suite quotes (fake_llm/scripts.py reads again
# with it a file this loader refuses).
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_document(path: Path) -> Any:
    """Parse one JSON or YAML file of the contract."""
    text = path.read_text(encoding="utf-8")
    return json.loads(text) if path.suffix == ".json" else yaml.load(text, Loader=YAML_LOADER)  # noqa: S506 - safe loader


@cache
def _openapi_raw() -> dict[str, Any]:
    return load_document(OPENAPI_PATH)


def default_prefix() -> str:
    return _openapi_raw()["x-chat-path-prefix"]["default"]


def load_openapi(prefix: str | None = None) -> dict[str, Any]:
    """The OpenAPI 3.2 document, its paths re-rooted under `prefix` (default: the contract's default).

    `$ref`s to the JSON Schema files are left as they are: resolve them against OPENAPI_PATH.
    """
    document = copy.deepcopy(_openapi_raw())
    default = default_prefix()
    prefix = default if prefix is None else prefix.rstrip("/")
    if "{project_id}" not in prefix:
        raise ValueError(f"chat path prefix {prefix!r} must contain the {{project_id}} parameter")
    if prefix != default:  # only the chat API's paths: the controller's (tag `controller`) are the controller's own
        document["paths"] = {
            (prefix + path.removeprefix(default) if path.startswith(default + "/") else path): item
            for path, item in document["paths"].items()
        }
    return document


# The operations of the channels (the same turns over other protocols, CHANNEL-001) carry this tag in
# openapi.yaml. Whatever walks "every chat endpoint" of the GNS3 API (error shapes, the 3.1 copy for SDKs, the
# hostile inputs) leaves them out: their answers follow their protocols' own shapes.
CHANNEL_TAG = "channels"


def is_channel_operation(operation: dict[str, Any]) -> bool:
    return CHANNEL_TAG in operation.get("tags", ())


# The controller's operations that a chat client relies on (log in, projects, LLM configurations) carry this tag:
# documented for clients and SDKs, served by the reference server, but not the chat API, so whatever walks the chat
# API's endpoints (under the chat prefix) leaves them out too.
CONTROLLER_TAG = "controller"


def is_controller_operation(operation: dict[str, Any]) -> bool:
    return CONTROLLER_TAG in operation.get("tags", ())


def without_channels(document: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI document (as load_openapi gives it) without the channels' operations, and without the components
    that only they use."""
    return without_tags(document, CHANNEL_TAG)


def chat_api_only(document: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI document with only the GNS3 chat API's operations: no channel, no controller operation."""
    return without_tags(document, CHANNEL_TAG, CONTROLLER_TAG)


def without_tags(document: dict[str, Any], *tags: str) -> dict[str, Any]:
    """The document without the operations carrying any of `tags`, and without the components only they use."""
    document = copy.deepcopy(document)
    paths, dropped = {}, []
    for path, item in document["paths"].items():
        kept = {}
        for key, value in item.items():
            if isinstance(value, dict) and set(value.get("tags", ())) & set(tags):
                dropped.append(value)
            else:
                kept[key] = value
        if any(isinstance(value, dict) and "operationId" in value for value in kept.values()):
            paths[path] = kept
        else:
            dropped.append(kept)  # path-level parameters of a path left with no operation
    document["paths"] = paths
    document["tags"] = [tag for tag in document.get("tags", []) if tag["name"] not in tags]
    still_used = _component_refs(document, document)
    for kind, name in _component_refs(dropped, document) - still_used:
        document["components"][kind].pop(name, None)
        if not document["components"][kind]:
            del document["components"][kind]
    return document


def _component_refs(node: Any, document: dict[str, Any]) -> set[tuple[str, str]]:
    """(kind, name) of every `#/components/...` reference reachable from `node`, through the components too."""
    found: set[tuple[str, str]] = set()
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, dict):
            ref = current.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/components/"):
                kind, name = ref.split("/")[2:4]
                if (kind, name) not in found:
                    found.add((kind, name))
                    pending.append(document["components"].get(kind, {}).get(name))
            pending.extend(current.values())
        elif isinstance(current, list):
            pending.extend(current)
    return found


@cache
def _schema_resource(uri: str) -> Resource:
    """One schema file of the contract, named by its file URI, parsed once per process."""
    path = Path(url2pathname(urlsplit(uri).path)).resolve()
    if path.suffix != ".json" or path.parent not in SCHEMA_FOLDERS:
        raise NoSuchResource(ref=uri)
    return Resource.from_contents(load_document(path), DRAFT202012)


@cache
def schema_registry() -> Registry:
    """Every JSON Schema file of the contract, addressable by its file URI (so relative $refs resolve). A file is
    read when a validator first reaches it: most processes (the fake LLM, a server) validate against a few schemas,
    and parsing all of them (1.4 MB, the protocols' official ones most of it) took a third of a CPU-second at every
    start."""
    return Registry(retrieve=_schema_resource)


def _file_refs(node: Any) -> Iterator[str]:
    """The file parts of every $ref in a schema document."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            yield ref.split("#", 1)[0]
        for value in node.values():
            yield from _file_refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _file_refs(value)


def _schema_closure(path: Path) -> dict[str, Resource]:
    """A schema file and every file it reaches through $refs, by file URI."""
    found: dict[str, Resource] = {}
    waiting = [path.resolve()]
    while waiting:
        current = waiting.pop()
        uri = current.as_uri()
        if uri in found:
            continue
        inside = current.parent in SCHEMA_FOLDERS
        found[uri] = _schema_resource(uri) if inside else Resource.from_contents(load_document(current), DRAFT202012)
        waiting += [(current.parent / ref).resolve() for ref in _file_refs(found[uri].contents)]
    return found


@cache
def schema_validator(path: Path) -> GatedValidator:
    """A validator for one schema file (of the contract, or a test's own), with formats checked; one per file and
    process (the suite validates every event and answer of a run: building a validator each time was a good part of
    its CPU). Its registry holds the files the schema reaches, so no lookup is left to do while validating; a
    compiled check answers first for an instance without errors (fast_validation.py)."""
    closure = _schema_closure(path)
    root = {"$ref": path.resolve().as_uri()}
    full = Draft202012Validator(
        root,
        registry=schema_registry().with_resources(closure.items()),
        format_checker=Draft202012Validator.FORMAT_CHECKER,
    )
    contents = {uri: resource.contents for uri, resource in closure.items()}
    fast = compiled({"$schema": "https://json-schema.org/draft/2020-12/schema", **root}, contents, formats=True)
    return GatedValidator(full, fast)


@cache
def event_schema_paths() -> dict[str, Path]:
    """Event `type` -> the schema file that defines it, read from the union's discriminator mapping."""
    union = load_document(EVENT_UNION)
    return {name: EVENTS_DIR / ref for name, ref in union["discriminator"]["mapping"].items()}


def validate_event(payload: Any) -> list[str]:
    """Schema errors of one event, validated against the schema its `type` selects (clearer than oneOf)."""
    if not isinstance(payload, dict):
        return [f"an event must be a JSON object, got {type(payload).__name__}"]
    kind = payload.get("type")
    paths = event_schema_paths()
    if kind not in paths:
        return [f"unknown event type {kind!r}; expected one of {sorted(paths)}"]
    validator = schema_validator(paths[kind])
    return [
        f"{'/'.join(str(p) for p in error.absolute_path) or '(event)'}: {error.message}"
        for error in sorted(validator.iter_errors(payload), key=lambda e: list(e.absolute_path))
    ]


@cache
def load_requirements() -> dict[str, Any]:
    """The requirement registry (spec/requirements.yaml) as parsed YAML."""
    return load_document(REQUIREMENTS_PATH)


def contract_version() -> str:
    return load_requirements()["contract_version"]


@cache
def load_constants() -> dict[str, dict[str, Any]]:
    """The constants of spec/constants.yaml as written: name -> {requirement, description, value or at}."""
    return load_document(CONSTANTS_PATH)["constants"]


def resolve_pointer(at: str) -> Any:
    """The value `at` names: a file of spec/, `#`, then a JSON pointer (RFC 6901) into the file."""
    file, _, pointer = at.partition("#")
    node = load_document(SPEC_DIR / file)
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node


def _integer_keys(value: Any) -> Any:
    """A mapping whose keys are all decimal numbers (HTTP statuses: JSON writes them as strings) with integer keys."""
    if isinstance(value, dict) and value and all(isinstance(k, int) or str(k).isdecimal() for k in value):
        return {int(k): v for k, v in value.items()}
    return value


def constant_values() -> dict[str, Any]:
    """Each constant's value: its own `value`, or what its `at` points to in its home."""
    return {
        name: _integer_keys(entry["value"] if "value" in entry else resolve_pointer(entry["at"]))
        for name, entry in load_constants().items()
    }
