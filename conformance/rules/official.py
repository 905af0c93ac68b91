"""The protocols' official JSON Schemas (spec/channels/official/, derived by tools/derive_channel_schemas.py from
the packages themselves), as jsonschema validators for the channel checks and tests.

    errors("ai_ui_message_chunk", chunk)       -> [] when valid, else one readable line per error
    validator("ag_ui_event").is_valid(event)

Names are the file names without .json (NAMES lists them). Each validator is the class for the schema's
"$schema" (draft-07 for `ai`, 2020-12 for the others), built once per process. What a schema cannot say (zod
predicates: `z.custom`, `.refine`) is marked by a "$comment" in it; the real clients (real_clients.py) check those.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from jsonschema import exceptions, validators
from jsonschema.protocols import Validator

import gns3_copilot_spec as spec
from gns3_copilot_spec.fast_validation import compiled, surely_valid

OFFICIAL = spec.OFFICIAL_DIR
NAMES = tuple(sorted(path.stem for path in OFFICIAL.glob("*.json")))


@cache
def schema(name: str) -> dict[str, Any]:
    path = OFFICIAL / f"{name}.json"
    if not path.exists():
        raise KeyError(f"no official schema {name!r}; known: {', '.join(NAMES)}")
    return json.loads(path.read_text(encoding="utf-8"))


@cache
def validator(name: str) -> Validator:
    """The schema's validator (its draft's class); the schema itself is proven against its metaschema by the
    project's tests (tests/contract/test_official_schemas.py), not again by every run: that costs most of a second."""
    document = schema(name)
    return validators.validator_for(document)(document)


def _describe(error: exceptions.ValidationError) -> str:
    where = "/" + "/".join(str(part) for part in error.absolute_path)
    line = f"{where}: {error.message}"
    if error.context:
        # A union (anyOf/oneOf): name the branch that came closest.
        closest = exceptions.best_match(error.context)
        if closest is not None:
            inner = "/" + "/".join(str(part) for part in closest.absolute_path)
            line += f" (closest: {inner}: {closest.message})"
    return line


@cache
def _branches(name: str) -> dict[Any, Validator]:
    """For a schema that is a union told apart by its `type` (AG-UI's events, the UI message chunks, the Responses
    stream events: each branch an object whose `type` is one constant), each constant's branch as a validator of
    its own (resolving against the whole document). An instance of a known `type` can match no other branch, so
    its branch alone judges it as the union does, at a fraction of the cost; empty when the schema is no such
    union, or two branches share a constant."""
    document = schema(name)
    union = document.get("oneOf") or document.get("anyOf")
    if not isinstance(union, list):
        return {}
    found: dict[Any, Validator] = {}
    for branch in union:
        const = _type_const(document, branch)
        if const is None or const in found:
            return {}
        found[const] = validator(name).evolve(schema=branch)
    return found


def _type_const(document: dict[str, Any], branch: Any) -> Any:
    """The constant `type` of a union's branch (through one local $ref), or None."""
    ref = branch.get("$ref") if isinstance(branch, dict) else None
    if isinstance(ref, str) and ref.startswith("#/"):
        branch = document
        for part in ref[2:].split("/"):
            branch = branch.get(part) if isinstance(branch, dict) else None
    if not isinstance(branch, dict) or branch.get("type") != "object":
        return None
    declared = (branch.get("properties") or {}).get("type") or {}
    if "const" in declared:
        return declared["const"]
    enum = declared.get("enum")
    return enum[0] if isinstance(enum, list) and len(enum) == 1 else None


@cache
def _compiled(name: str) -> Any | None:
    """jsonschema-rs's check of the schema, formats as annotations (as `validator` has them)."""
    return compiled(schema(name), formats=False)


def errors(name: str, instance: Any) -> list[str]:
    """Every validation error of `instance` against the official schema `name`, as readable lines (none without
    walking the schema when the compiled check accepts it: gns3_copilot_spec.fast_validation)."""
    if surely_valid(_compiled(name), instance):
        return []
    kind = instance.get("type") if isinstance(instance, dict) else None
    branch = _branches(name).get(kind) if isinstance(kind, str) else None
    checker = branch if branch is not None else validator(name)
    found = sorted(checker.iter_errors(instance), key=lambda e: (list(e.absolute_path), e.message))
    return [_describe(error) for error in found]
