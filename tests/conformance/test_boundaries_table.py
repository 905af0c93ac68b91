"""The boundary table of conformance/rules/boundaries.py (judged by inputs.boundaries): every bounded value a request
of the GNS3 chat API takes yields its cases, a bound added to spec/ yields new cases with no new check, and a bound
that names no requirement fails loudly."""

from __future__ import annotations

import copy
import posixpath

import pytest

import gns3_copilot_spec as spec
from conformance.checks import load_all
from conformance.rules import boundaries
from conformance.rules.operations import session_endpoints

KEYWORDS = {
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
}
CHECK = "inputs.boundaries"


def _bounded_locations(document: dict) -> set[str]:
    """Every schema node with a bound keyword reachable from a request (parameters and JSON bodies) of `document`,
    found by following every $ref: a crawl of its own, not the table's walk."""
    found, seen = set(), set()
    pending = []
    for path, item in document["paths"].items():
        escaped = path.replace("~", "~0").replace("/", "~1")
        for key, value in item.items():
            if key == "parameters":
                pending.append((value, "openapi.yaml", f"/paths/{escaped}/parameters"))
            elif isinstance(value, dict):
                for part in ("parameters", "requestBody"):
                    if part in value:
                        pending.append((value[part], "openapi.yaml", f"/paths/{escaped}/{key}/{part}"))
    while pending:
        node, file, pointer = pending.pop()
        if isinstance(node, list):
            pending.extend((v, file, f"{pointer}/{i}") for i, v in enumerate(node))
            continue
        if not isinstance(node, dict) or (file, pointer) in seen:
            continue
        seen.add((file, pointer))
        if KEYWORDS & set(node) and all(isinstance(node[k], int | float) for k in KEYWORDS & set(node)):
            found.add(f"{file}#{pointer}")
        if isinstance(node.get("$ref"), str):
            target, _, inner = node["$ref"].partition("#")
            target_file = posixpath.normpath(posixpath.join(posixpath.dirname(file), target)) if target else file
            whole = document if target_file == "openapi.yaml" else spec.load_document(spec.SPEC_DIR / target_file)
            target_node = whole
            for token in inner.split("/")[1:]:
                target_node = target_node[token.replace("~1", "/").replace("~0", "~")]
            pending.append((target_node, target_file, inner))
        for key, value in node.items():
            if key not in ("$ref", "examples", "example", "default", "const", "enum"):
                escaped = key.replace("~", "~0").replace("/", "~1")
                pending.append((value, file, f"{pointer}/{escaped}"))
    return found


def test_every_bounded_value_of_the_chat_api_yields_cases():
    table = boundaries.bounds()
    assert {b.location for b in table} == _bounded_locations(boundaries.chat_api())
    for bound in table:
        cases = boundaries.cases_of(bound)
        assert any(c.accepted for c in cases) and any(not c.accepted for c in cases), bound.location
        labels = " ".join(c.label for c in cases)
        for side, limit in (("minimum", bound.low), ("maximum", bound.high)):
            if limit is not None:
                assert all(f"{what} the {side}" in labels for what in ("at", "just inside", "just outside")), labels


def test_the_known_bounds_and_their_cases():
    table = {b.location: b for b in boundaries.bounds()}
    message = boundaries.cases_of(table["schemas/chat-request.json#/properties/message"])
    assert {(c.size, c.accepted) for c in message} == {
        (0, False),
        (1, True),
        (2, True),
        (99999, True),
        (100000, True),
        (100001, False),
    }
    temperature = table["schemas/chat-request.json#/properties/temperature"]
    # Temperature 0 is a value: accepted, and (INPUT-005) it must reach the model as 0.
    assert {(c.size, c.accepted) for c in boundaries.cases_of(temperature)} == {
        (-0.01, False),
        (0, True),
        (0.01, True),
        (1.99, True),
        (2, True),
        (2.01, False),
    }
    assert temperature.effect == boundaries.Effect("INPUT-005", "temperature_override", "temperature")
    limit = next(b for b in table.values() if b.uses[0].name == ("limit",))
    assert (limit.accepted_by, limit.refused_by) == ("HISTORY-006", "HISTORY-007")
    assert {c.size for c in boundaries.cases_of(limit)} == {0, 1, 2, 999, 1000, 1001}


def test_the_session_id_is_judged_wherever_a_request_takes_it():
    session_id = next(b for b in boundaries.bounds() if b.location == "schemas/session-id.json#")
    in_paths = {u.operation for u in session_id.uses if u.where == "path"}
    assert in_paths == {op.id for op in session_endpoints({"abort"})}
    assert [u.where for u in session_id.uses][0] == "body"  # the body makes the sessions the paths then name
    empty = next(c for c in boundaries.cases_of(session_id) if c.size == 0)
    assert not empty.applies_to(session_id.uses[-1])  # an empty path segment is another route


def test_each_bound_names_the_requirement_that_states_it_and_that_lists_the_check():
    records = {r["id"]: r for r in spec.load_requirements()["requirements"]}
    for bound in boundaries.bounds():
        for rid in {bound.accepted_by, bound.refused_by} | ({bound.effect.requirement} if bound.effect else set()):
            assert CHECK in records[rid].get("checks", []), (bound.location, rid)
    assert set(load_all()[CHECK].requirements) == {
        rid for b in boundaries.bounds() for rid in (b.accepted_by, b.refused_by)
    } | {b.effect.requirement for b in boundaries.bounds() if b.effect}
    # spec/constants.yaml names the same requirement for the bounds it holds.
    locations = {b.location: b for b in boundaries.bounds()}
    for name, entry in spec.load_constants().items():
        at = entry.get("at", "")
        home, _, keyword = at.rpartition("/")
        if home in locations and keyword in KEYWORDS:
            assert entry["requirement"] == locations[home].accepted_by, name


def _with_new_bounds() -> tuple[dict, dict]:
    """A copy of the chat API with a bounded query parameter more, and the rename body with a bounded member more."""
    document = copy.deepcopy(boundaries.chat_api())
    listing = document["paths"][f"{spec.default_prefix()}/sessions"]["get"]
    listing["parameters"] = [
        {"name": "offset", "in": "query", "schema": {"type": "integer", "minimum": 0, "maximum": 50}}
    ]
    rename = copy.deepcopy(spec.load_document(spec.SCHEMAS_DIR / "rename-request.json"))
    rename["properties"]["weight"] = {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}
    rename["properties"]["tags"] = {"type": "array", "items": {"type": "string"}, "maxItems": 3}
    return document, {"schemas/rename-request.json": rename}


OFFSET = "openapi.yaml#/paths/~1v3~1projects~1{project_id}~1chat~1sessions/get/parameters/0/schema"
WEIGHT = "schemas/rename-request.json#/properties/weight"
TAGS = "schemas/rename-request.json#/properties/tags"


def test_a_bound_added_to_the_contract_yields_cases_without_a_new_check():
    document, files = _with_new_bounds()
    mapped = {**boundaries.REQUIREMENTS, OFFSET: "LIST-001", WEIGHT: "SESSION-004", TAGS: "SESSION-004"}
    found = {b.location: b for b in boundaries.bounds(document, files, mapped)}
    assert set(found) == {b.location for b in boundaries.bounds()} | {OFFSET, WEIGHT, TAGS}
    offset = found[OFFSET]
    assert offset.uses == (boundaries.Use("listSessions", "query", ("offset",)),)
    assert {(c.size, c.accepted) for c in boundaries.cases_of(offset)} == {
        (-1, False),
        (0, True),
        (1, True),
        (49, True),
        (50, True),
        (51, False),
    }
    # Exclusive bounds: the bound itself is refused, and zero is not legal.
    weight = {(c.size, c.accepted) for c in boundaries.cases_of(found[WEIGHT])}
    assert weight == {(0, False), (0.01, True), (-0.01, False), (1, False), (0.99, True), (1.01, False)}
    assert found[WEIGHT].uses == (boundaries.Use("renameSession", "body", ("weight",)),)
    # A list of at most 3 items: 2, 3 and 4 items, and the empty list (zero is legal).
    assert {(c.size, c.accepted) for c in boundaries.cases_of(found[TAGS])} == {
        (2, True),
        (3, True),
        (4, False),
        (0, True),
    }
    tags = boundaries.cases_of(found[TAGS])[0]
    assert boundaries.placed({"title": "t"}, ("tags",), boundaries.value_of(tags)) == {"title": "t", "tags": ["x"] * 3}


def test_a_bound_that_names_no_requirement_fails_loudly():
    document, files = _with_new_bounds()
    with pytest.raises(boundaries.UnmappedBound, match="chat~1sessions/get/parameters/0/schema"):
        boundaries.bounds(document, files)


def test_a_bound_inside_array_items_fails_loudly():
    document, files = _with_new_bounds()
    files["schemas/rename-request.json"]["properties"]["tags"]["items"]["maxLength"] = 8
    mapped = {**boundaries.REQUIREMENTS, OFFSET: "LIST-001", WEIGHT: "SESSION-004", TAGS: "SESSION-004"}
    with pytest.raises(boundaries.UnmappedBound, match="inside array items"):
        boundaries.bounds(document, files, mapped)


def test_values_have_the_case_length_and_keep_a_whole_tag():
    message = next(b for b in boundaries.bounds() if b.location.endswith("/message"))
    cases = {c.size: c for c in boundaries.cases_of(message)}
    tag = "[[fake-llm:cs-plain:run]]"
    assert (
        boundaries.value_of(cases[100000], tag).endswith(tag) and len(boundaries.value_of(cases[100000], tag)) == 100000
    )
    assert boundaries.value_of(cases[1], tag) == "x"  # too short for the tag: the default script plays
    assert boundaries.value_of(cases[2], "run-1a2b", whole=False) == "2b"


def test_every_request_body_is_judged_with_unknown_members():
    bodies = boundaries.request_bodies(boundaries.chat_api())
    # inputs.unknown_members builds a valid body for each (conformance.checks.support.valid_body): a new body
    # operation needs one there.
    assert [operation for operation, _ in bodies] == ["streamChat", "renameSession"]
    assert all(boundaries.body_accepts_unknown(schema) for _, schema in bodies)  # INPUT-008: ignored
    strict = {"type": "object", "properties": {"title": {"type": "string"}}, "additionalProperties": False}
    assert not boundaries.body_accepts_unknown(strict)
    assert boundaries.body_accepts_unknown({"$ref": "schemas/rename-request.json"})


def test_refusals_are_the_contracts_validation_failure():
    refusals = boundaries.refusals()
    assert {use.operation for b in boundaries.bounds() for use in b.uses} <= set(refusals)
    assert set(refusals.values()) == {(422, "validation_error")}
