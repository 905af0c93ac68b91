"""What a parsed JSON body must also be before any of it is used: Unicode text, finite numbers, bounded nesting.

Python's json module takes `"\\ud800"` (a lone surrogate, which is not Unicode text and which SQLite, Argon2 and
Fernet cannot encode), `NaN` and `Infinity` (not JSON), and nesting as deep as its recursion allows; pydantic's JSON
parser stops at 200 levels. Both request paths (json_value and json_body here, for the chat API and the channels,
and controller/bodies.py) refuse these the same way: 400 `invalid_json`, with `json_problem`'s reason in the message.
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal, get_args, get_origin

from fastapi import Request
from pydantic import BaseModel, ValidationError

from .errors import invalid_field, invalid_json, validation_failed

MAX_DEPTH = 64  # arrays and objects within one another; far beyond any body of the API, far below either parser's limit


def json_problem(value: Any) -> str | None:
    """Why `value` (as json.loads gives it) cannot be taken, or None; iterative, so that no body exhausts the stack."""
    pending = [(value, 1)]
    while pending:
        node, depth = pending.pop()
        if isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                return "a string holds a lone surrogate (a \\ud800-\\udfff escape that is not part of a pair)"
        elif isinstance(node, float) and not math.isfinite(node):
            return "a number is NaN, Infinity or too large for a double"
        elif isinstance(node, dict | list):
            if depth > MAX_DEPTH:
                return f"arrays and objects are nested more than {MAX_DEPTH} levels deep"
            children = [*node.keys(), *node.values()] if isinstance(node, dict) else node
            pending.extend((child, depth + 1) for child in children)
    return None


def _booleans_not_sent_as_booleans(model: type[BaseModel], data: dict[str, Any]) -> list[dict[str, Any]]:
    """A field whose only values are booleans (`stream: true`) must be a JSON boolean: pydantic, even strict, takes
    1 or 1.0 for `Literal[True]`, because 1 == True in Python (INPUT-004)."""
    problems = []
    for name, info in model.model_fields.items():
        allowed = get_args(info.annotation) if get_origin(info.annotation) is Literal else ()
        if allowed and all(isinstance(a, bool) for a in allowed) and name in data and not isinstance(data[name], bool):
            problems.append({"loc": ["body", name], "msg": f"{name} must be a JSON boolean", "type": "bool_type"})
    return problems


async def json_value(request: Request) -> Any:
    """The body as JSON: 400 for a body that is not JSON (INPUT-009), or not JSON this server can take
    (json_input.py). Reading the body may also raise 413 (body_limit.py)."""
    raw = await request.body()
    try:
        data = json.loads(raw.decode("utf-8"))  # UTF-8 only (RFC 8259); json.loads(bytes) would guess UTF-16 or -32
    except UnicodeDecodeError as exc:
        raise invalid_json("it is not UTF-8 text") from exc
    except RecursionError as exc:
        raise invalid_json("arrays and objects are nested too deeply") from exc
    except ValueError as exc:  # JSONDecodeError, and integers of more than 4300 digits
        raise invalid_json(str(exc)) from exc
    if (problem := json_problem(data)) is not None:
        raise invalid_json(problem)
    return data


async def json_body(request: Request, model: type[BaseModel]) -> Any:
    """The body as JSON (json_value), then 422 for one that does not fit the model (INPUT-006, -007), JSON types
    taken as they are: no string for a number, no number for a boolean (INPUT-003, INPUT-004)."""
    data = await json_value(request)
    raw = await request.body()  # Starlette keeps it: read once
    if not isinstance(data, dict):
        raise invalid_field(["body"], "The body must be a JSON object", "model_type")
    booleans = _booleans_not_sent_as_booleans(model, data)
    try:
        value = model.model_validate_json(raw, strict=True)
    except ValidationError as exc:
        found = [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
        named = {tuple(e["loc"][:2]) for e in found}
        raise validation_failed(found + [b for b in booleans if tuple(b["loc"]) not in named]) from exc
    if booleans:
        raise validation_failed(booleans)
    return value
