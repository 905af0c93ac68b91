"""Self-check of the contract itself: what the main job can verify before any server is involved."""

from __future__ import annotations

from collections import Counter

from openapi_spec_validator.validation import OpenAPIV32SpecValidator

import gns3_copilot_spec as spec
from conformance.rules.framing import parse_stream
from conformance.rules.stream_events import check_events


def contract_problems() -> tuple[list[str], list[str]]:
    """(what was checked, the problems found) for spec/ as it is on disk."""
    checked, problems = [], []
    try:
        OpenAPIV32SpecValidator(spec.load_openapi(), base_uri=spec.OPENAPI_PATH.as_uri()).validate()
    except Exception as error:  # the validator raises several unrelated types
        problems.append(f"spec/openapi.yaml is not valid OpenAPI 3.2: {error}")
    checked.append("spec/openapi.yaml is valid OpenAPI 3.2")

    registry = spec.load_requirements()
    schema_errors = list(spec.schema_validator(spec.SPEC_DIR / "requirements.schema.json").iter_errors(registry))
    problems += [f"spec/requirements.yaml: {e.message}" for e in schema_errors]
    duplicates = [i for i, n in Counter(r["id"] for r in registry["requirements"]).items() if n > 1]
    problems += [f"spec/requirements.yaml: duplicate id {i}" for i in duplicates]
    checked.append(f"spec/requirements.yaml: {len(registry['requirements'])} requirements, ids unique")

    examples = sorted(spec.EXAMPLES_DIR.glob("*.sse"))
    for path in examples:
        parsed = parse_stream(path.read_text(encoding="utf-8"))
        problems += [f"spec/examples/{path.name}: {v}" for v in parsed.violations + check_events(parsed.events)]
    checked.append(f"spec/examples/: {len(examples)} golden streams conform to the event schemas and stream rules")
    return checked, problems
