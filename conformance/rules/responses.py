"""CONTRACT-001 for non-stream answers: is the status documented for the operation, and does the body
validate against the schema documented for that status? Read from spec/openapi.yaml, never hard-coded."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import gns3_copilot_spec as spec
from conformance.rules.operations import operation
from conformance.rules.violations import Violation


@cache
def _document() -> dict[str, Any]:
    """The contract's OpenAPI document, read once (load_openapi gives a fresh copy at each call); only read here."""
    return spec.load_openapi()


def _response(document: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in response:
        return document["components"]["responses"][response["$ref"].rsplit("/", 1)[-1]]
    return response


def documented_statuses(operation_id: str) -> set[int]:
    return operation(operation_id).statuses


def response_violations(operation_id: str, status: int, content_type: str | None, body: bytes | str) -> list[Violation]:
    """Violations of CONTRACT-001 (and ERROR-001 for 4xx bodies) by one answer to `operation_id`; of CONTROLLER-001
    for an answer of the controller (tag `controller`), whatever its status."""
    definition = operation(operation_id).definition
    controller = spec.is_controller_operation(definition)
    documented = definition["responses"].get(str(status))
    if documented is None:
        return [
            Violation(
                "CONTROLLER-001" if controller else "CONTRACT-001",
                f"{operation_id} answered {status}, which openapi.yaml does not document "
                f"(documented: {sorted(documented_statuses(operation_id))})",
            )
        ]
    content = _response(_document(), documented).get("content") or {}
    if not content:
        if body not in (b"", ""):
            requirement = "CONTROLLER-001" if controller else "CONTRACT-001"
            return [Violation(requirement, f"{operation_id} {status} has a body where none is documented")]
        return []
    if "application/json" not in content:
        return []  # the stream is checked event by event (conformance.rules.stream_events)
    requirement = "CONTROLLER-001" if controller else "ERROR-001" if 400 <= status < 500 else "CONTRACT-001"
    if not (content_type or "").startswith("application/json"):
        return [Violation(requirement, f"{operation_id} {status}: content type {content_type!r}, not application/json")]
    try:
        payload = json.loads(body)
    except ValueError:
        return [Violation(requirement, f"{operation_id} {status}: the body is not JSON: {str(body)[:200]!r}")]
    reference = content["application/json"]["schema"]["$ref"]
    validator = spec.schema_validator(spec.SPEC_DIR / reference)
    return [
        Violation(requirement, f"{operation_id} {status}: {error.message} at {'/'.join(map(str, error.absolute_path))}")
        for error in validator.iter_errors(payload)
    ]
