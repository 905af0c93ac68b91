"""The boundary cases of every bounded value a request of the GNS3 chat API takes, derived from openapi.yaml and the
schemas it references: a new bound in spec/ is covered without writing a check (the check is inputs.boundaries).

A bound is found where its keywords are written (a schema file and a JSON pointer, as spec/constants.yaml names a
constant's home), whichever requests take it: the session id's bounds, in schemas/session-id.json, are taken by the
stream's body and by the path of every session endpoint. Each bound gives its cases: at each bound, just inside,
just outside, and zero where zero is legal, each accepted or refused with the contract's status and code. Each
bound's location must name the requirement that states it (REQUIREMENTS): a bound without one raises UnmappedBound,
so that nobody adds a bound the suite would judge under no rule.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import gns3_copilot_spec as spec

# The history's `limit`, where spec/constants.yaml finds HISTORY_LIMIT_MIN (its schema's `minimum`).
_HISTORY = spec.load_constants()["HISTORY_LIMIT_MIN"]["at"].removesuffix("/minimum")

# The location of each bound -> the requirement that states it: one id, or (the id accepting the values inside, the
# id refusing those outside) when two rules share the bound (HISTORY-006 accepts 1..1000, HISTORY-007 refuses the
# rest).
REQUIREMENTS: dict[str, str | tuple[str, str]] = {
    "schemas/chat-request.json#/properties/message": "INPUT-001",
    "schemas/chat-request.json#/properties/temperature": "INPUT-003",
    "schemas/session-id.json#": "SESSION-003",
    "schemas/rename-request.json#/properties/title": "SESSION-004",
    _HISTORY: ("HISTORY-006", "HISTORY-007"),
}


@dataclass(frozen=True)
class Effect:
    """What an accepted value must do beyond being accepted: reach the model as the member `log_field` of each of the
    turn's generations in the fake LLM's log (`requirement`, when the target declares `capability`)."""

    requirement: str
    capability: str
    log_field: str


# A value at its bound is a value: temperature 0 reaches the model as 0, not as "unset" (INPUT-005).
EFFECTS: dict[str, Effect] = {
    "schemas/chat-request.json#/properties/temperature": Effect("INPUT-005", "temperature_override", "temperature"),
}

NUMBER_STEP = 0.01  # "just inside" and "just outside" of a bound of a `number` without `multipleOf`
_LENGTH = ("minLength", "maxLength")
_ITEMS = ("minItems", "maxItems")
_NUMBER = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_METHODS = ("get", "put", "post", "patch", "delete")
_ORDER = {"body": 0, "query": 1, "header": 1, "path": 2}  # a body creates what a path then names


class UnmappedBound(LookupError):
    """A bounded value of the contract whose location names no requirement in REQUIREMENTS."""


@dataclass(frozen=True)
class Use:
    """Where one operation takes the value: `where` is body, query, header or path; `name` the member's path in the
    body (empty: the body itself), or the parameter's name."""

    operation: str
    where: str
    name: tuple[str, ...]

    def describe(self) -> str:
        member = ".".join(self.name) or "(the body)"
        return f"{self.operation} {self.where} `{member}`"


@dataclass(frozen=True)
class Bound:
    location: str  # file#pointer of the schema holding the keywords
    kind: str  # length, items or number
    low: float | None
    high: float | None
    low_exclusive: bool = False
    high_exclusive: bool = False
    integer: bool = True  # lengths and counts are; a number is when its schema says `integer`
    step: float = 1
    accepted_by: str = ""
    refused_by: str = ""
    effect: Effect | None = None
    uses: tuple[Use, ...] = ()


@dataclass(frozen=True)
class Case:
    bound: Bound
    label: str  # "at the maximum 255", "just outside the minimum 1", "zero"...
    size: float  # the length, the count of items, or the number itself
    accepted: bool
    ignored_where: frozenset[str] = field(default_factory=frozenset)  # uses that cannot carry it (an empty path)

    @property
    def requirement(self) -> str:
        return self.bound.accepted_by if self.accepted else self.bound.refused_by

    def describe(self) -> str:
        what = {"length": "characters", "items": "items"}.get(self.bound.kind)
        shown = f"{self.size:g} {what}" if what else f"{self.size!r}"
        return f"{shown} ({self.label}; {self.bound.location})"

    def applies_to(self, use: Use) -> bool:
        return use.where not in self.ignored_where


# --- walking the contract --------------------------------------------------------------------------------------------


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _at(document: Any, pointer: str) -> Any:
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        document = document[int(token)] if isinstance(document, list) else document[token]
    return document


class _Walker:
    def __init__(self, documents: Callable[[str], Any]) -> None:
        self.documents = documents  # file under spec/ -> its parsed document
        self.found: dict[str, tuple[dict[str, Any], list[Use]]] = {}

    def resolve(self, node: dict[str, Any], file: str) -> tuple[dict[str, Any], str, str]:
        """The node a $ref names, its file and its pointer."""
        target, _, pointer = node["$ref"].partition("#")
        file = posixpath.normpath(posixpath.join(posixpath.dirname(file), target)) if target else file
        return _at(self.documents(file), pointer), file, pointer

    def walk(self, node: Any, file: str, pointer: str, use: Use, *, in_items: bool = False) -> None:
        if not isinstance(node, dict):
            return
        if "$ref" in node:
            target, target_file, target_pointer = self.resolve(node, file)
            self.walk(target, target_file, target_pointer, use, in_items=in_items)
        keywords = {k: node[k] for k in (*_LENGTH, *_ITEMS, *_NUMBER) if k in node}
        location = f"{file}#{pointer}"
        if keywords:
            if in_items:
                raise UnmappedBound(f"{location}: a bound inside array items, where the table places no value")
            entry = self.found.setdefault(location, (node, []))
            if use not in entry[1]:
                entry[1].append(use)
        for combinator in ("anyOf", "oneOf", "allOf"):
            for i, branch in enumerate(node.get(combinator, [])):
                self.walk(branch, file, f"{pointer}/{combinator}/{i}", use, in_items=in_items)
        for name, member in (node.get("properties") or {}).items():
            inner = Use(use.operation, use.where, (*use.name, name))
            self.walk(member, file, f"{pointer}/properties/{_escape(name)}", inner, in_items=in_items)
        if isinstance(node.get("items"), dict):
            self.walk(node["items"], file, f"{pointer}/items", use, in_items=True)

    def operation(self, document: dict[str, Any], path: str, method: str) -> None:
        item = document["paths"][path]
        definition = item[method]
        base = f"/paths/{_escape(path)}"
        parameters = [(p, f"{base}/parameters/{i}") for i, p in enumerate(item.get("parameters", []))]
        parameters += [(p, f"{base}/{method}/parameters/{i}") for i, p in enumerate(definition.get("parameters", []))]
        for parameter, pointer in parameters:
            if "$ref" in parameter:
                parameter, _, pointer = self.resolve(parameter, "openapi.yaml")
            use = Use(definition["operationId"], parameter["in"], (parameter["name"],))
            self.walk(parameter.get("schema"), "openapi.yaml", f"{pointer}/schema", use)
        content = (definition.get("requestBody") or {}).get("content", {})
        for media, body in content.items():
            if media == "application/json":
                pointer = f"{base}/{method}/requestBody/content/{_escape(media)}/schema"
                self.walk(body.get("schema"), "openapi.yaml", pointer, Use(definition["operationId"], "body", ()))


def _bound(location: str, node: dict[str, Any], uses: list[Use], requirements: dict) -> Bound:
    mapped = requirements.get(location)
    if mapped is None:
        raise UnmappedBound(
            f"{location} bounds {', '.join(u.describe() for u in uses)}, and names no requirement: add its id to "
            "conformance.rules.boundaries.REQUIREMENTS"
        )
    accepted_by, refused_by = (mapped, mapped) if isinstance(mapped, str) else mapped
    common = {"accepted_by": accepted_by, "refused_by": refused_by, "effect": EFFECTS.get(location)}
    common["uses"] = tuple(sorted(uses, key=lambda u: _ORDER.get(u.where, 1)))
    if any(k in node for k in _LENGTH):
        return Bound(location, "length", node.get("minLength"), node.get("maxLength"), **common)
    if any(k in node for k in _ITEMS):
        return Bound(location, "items", node.get("minItems"), node.get("maxItems"), **common)
    types = node.get("type", [])
    types = [types] if isinstance(types, str) else types
    integer = "integer" in types and "number" not in types
    step = node.get("multipleOf", 1 if integer else NUMBER_STEP)
    low_exclusive, high_exclusive = "exclusiveMinimum" in node, "exclusiveMaximum" in node
    low = node.get("exclusiveMinimum", node.get("minimum"))
    high = node.get("exclusiveMaximum", node.get("maximum"))
    return Bound(location, "number", low, high, low_exclusive, high_exclusive, integer, step, **common)


def _round(value: float, bound: Bound) -> float:
    return int(round(value)) if bound.integer else round(value, 10)


def cases_of(bound: Bound) -> list[Case]:
    """At each bound, just inside, just outside, and zero where zero is legal; one case per value."""
    step, found = bound.step, {}

    def legal(value: float) -> bool:
        if bound.low is not None and (value < bound.low or (bound.low_exclusive and value == bound.low)):
            return False
        return not (bound.high is not None and (value > bound.high or (bound.high_exclusive and value == bound.high)))

    def add(label: str, value: float) -> None:
        value = _round(value, bound)
        if bound.kind != "number" and value < 0:
            return  # no length or count below zero
        if value not in found:
            # An empty path segment names another route, not an empty id: paths do not carry a length 0.
            ignored = frozenset({"path"}) if bound.kind == "length" and value == 0 else frozenset()
            found[value] = Case(bound, label, value, legal(value), ignored)

    for side, limit, sign in (("minimum", bound.low, 1), ("maximum", bound.high, -1)):
        if limit is None:
            continue
        exclusive = bound.low_exclusive if sign == 1 else bound.high_exclusive
        add(f"at the {'exclusive ' if exclusive else ''}{side} {limit:g}", limit)
        add(f"just inside the {side} {limit:g}", limit + sign * step)
        add(f"just outside the {side} {limit:g}", limit - sign * step)
    if legal(0):
        add("zero", 0)
    return list(found.values())


def request_bodies(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(operationId, its JSON body's schema) of every operation that takes a body, in document order."""
    found = []
    for item in document["paths"].values():
        for method, definition in item.items():
            if method in _METHODS and "requestBody" in definition:
                schema = definition["requestBody"]["content"]["application/json"]["schema"]
                found.append((definition["operationId"], schema))
    return found


def _spec_document(file: str) -> Any:
    return spec.load_document(spec.SPEC_DIR / file)


def chat_api() -> dict[str, Any]:
    """The GNS3 chat API's operations of openapi.yaml (no channel, no controller operation)."""
    return spec.chat_api_only(spec.load_openapi())


def bounds(
    document: dict[str, Any] | None = None,
    files: dict[str, Any] | None = None,
    requirements: dict[str, str | tuple[str, str]] = REQUIREMENTS,
) -> list[Bound]:
    """Every bound of the requests of `document` (default: the GNS3 chat API of openapi.yaml), its schema files read
    from spec/ unless `files` (path under spec/ -> document) gives them. Raises UnmappedBound for a bound that names
    no requirement."""
    document = chat_api() if document is None else document
    files = files or {}
    walker = _Walker(lambda file: document if file == "openapi.yaml" else files.get(file) or _spec_document(file))
    for path, item in document["paths"].items():
        for method in item:
            if method in _METHODS:
                walker.operation(document, path, method)
    return [_bound(location, node, uses, requirements) for location, (node, uses) in walker.found.items()]


@cache
def table() -> tuple[Case, ...]:
    """Every case of every bound of the GNS3 chat API's requests."""
    return tuple(case for bound in bounds() for case in cases_of(bound))


VALIDATION_FAILED = "#/components/responses/ValidationFailed"


def refusals(document: dict[str, Any] | None = None) -> dict[str, tuple[int, str]]:
    """operationId -> the status and the error code (its schema's `const`) with which it refuses an invalid value:
    its answer that is openapi.yaml's ValidationFailed."""
    document = chat_api() if document is None else document
    walker = _Walker(lambda file: document if file == "openapi.yaml" else _spec_document(file))
    answer = _at(document, VALIDATION_FAILED.removeprefix("#"))
    schema, _, _ = walker.resolve(answer["content"]["application/json"]["schema"], "openapi.yaml")
    code = schema["properties"]["code"]["const"]
    found = {}
    for item in document["paths"].values():
        for method, definition in item.items():
            for status, response in definition.get("responses", {}).items() if method in _METHODS else ():
                if response.get("$ref") == VALIDATION_FAILED:
                    found[definition["operationId"]] = (int(status), code)
    return found


def successes(statuses: set[int]) -> set[int]:
    """An operation's answers that take the request (its 2xx)."""
    return {status for status in statuses if 200 <= status < 300}


def body_accepts_unknown(schema: dict[str, Any], files: dict[str, Any] | None = None) -> bool:
    """Whether a body schema lets unknown members through (INPUT-008): not when it says `additionalProperties:
    false` (or `unevaluatedProperties: false`)."""
    walker = _Walker(lambda file: (files or {}).get(file) or _spec_document(file))
    while "$ref" in schema:
        schema = walker.resolve(schema, "openapi.yaml")[0]
    return schema.get("additionalProperties", True) is not False and schema.get("unevaluatedProperties") is not False


# --- values -----------------------------------------------------------------------------------------------------------


def text(length: int, tail: str = "", *, filler: str = "x", whole: bool = True) -> str:
    """A string of exactly `length` characters ending with `tail`: when it does not fit, without it (`whole`) or with
    its last characters."""
    if len(tail) > length:
        tail = "" if whole else tail[len(tail) - length :]
    return filler * (length - len(tail)) + tail


def value_of(case: Case, tail: str = "", *, whole: bool = True, item: Any = "x") -> Any:
    """The case's value: a string of its length (see text), a list of its count of `item`, or the number."""
    if case.bound.kind == "length":
        return text(int(case.size), tail, whole=whole)
    if case.bound.kind == "items":
        return [item] * int(case.size)
    return case.size


def placed(body: Any, name: tuple[str, ...], value: Any) -> Any:
    """A copy of `body` with `value` at the member path `name` (objects made on the way)."""
    if not name:
        return value
    copy = dict(body) if isinstance(body, dict) else {}
    copy[name[0]] = placed(copy.get(name[0]), name[1:], value)
    return copy
