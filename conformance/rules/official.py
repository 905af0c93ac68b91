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
    document = schema(name)
    cls = validators.validator_for(document)
    cls.check_schema(document)
    return cls(document)


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


def errors(name: str, instance: Any) -> list[str]:
    """Every validation error of `instance` against the official schema `name`, as readable lines."""
    found = sorted(validator(name).iter_errors(instance), key=lambda e: (list(e.absolute_path), e.message))
    return [_describe(error) for error in found]
