"""Self-check of the contract itself: what the main job can verify before any server is involved.

Validating spec/openapi.yaml takes seconds of CPU, at every run, on files that rarely change: a clean result is
kept in a cache folder under the fingerprint of the contract's files and of the validators' versions, and a run
on the same files is answered from it. A problem is never kept: it is found again at every run until fixed."""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from importlib.metadata import version
from pathlib import Path

import gns3_copilot_spec as spec
from conformance.rules.framing import parse_stream
from conformance.rules.stream_events import check_events

CHECKED_SUFFIXES = (".yaml", ".json", ".sse")
VALIDATORS = ("openapi-spec-validator", "jsonschema")


def default_cache_dir() -> Path:
    """$COPILOT_CONFORMANCE_CACHE, or copilot-conformance/ in the user's cache folder (XDG)."""
    if os.environ.get("COPILOT_CONFORMANCE_CACHE"):
        return Path(os.environ["COPILOT_CONFORMANCE_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "copilot-conformance"


def fingerprint() -> str:
    """The contract's files (every file under spec/ the checks read) and the validators that judged them."""
    digest = hashlib.sha256()
    for path in sorted(p for p in spec.SPEC_DIR.rglob("*") if p.suffix in CHECKED_SUFFIXES and p.is_file()):
        digest.update(path.relative_to(spec.SPEC_DIR).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for name in VALIDATORS:
        digest.update(f"{name}=={version(name)}\0".encode())
    return digest.hexdigest()


def contract_problems(cache_dir: Path | None = None) -> tuple[list[str], list[str]]:
    """(what was checked, the problems found) for spec/ as it is on disk; `cache_dir` None: default_cache_dir()."""
    kept = (cache_dir or default_cache_dir()) / f"contract-{fingerprint()}.json"
    try:
        return json.loads(kept.read_text(encoding="utf-8"))["checked"], []
    except (OSError, ValueError, KeyError):
        pass  # not checked yet, or an unreadable cache: checked again
    checked, problems = _check()
    if not problems:
        try:
            kept.parent.mkdir(parents=True, exist_ok=True)
            temporary = kept.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(json.dumps({"checked": checked}), encoding="utf-8")
            temporary.replace(kept)  # whole or absent, with runs in parallel
        except OSError:
            pass  # a read-only home: checked at every run
    return checked, problems


def _check() -> tuple[list[str], list[str]]:
    from openapi_spec_validator.validation import OpenAPIV32SpecValidator  # a second of imports, on a miss only

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
