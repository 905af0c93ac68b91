"""The conformance suite of the GNS3 Copilot Chat API, as a library. Everything here is public and stable; the
submodules are the suite's insides.

Judge a recorded stream::

    import conformance
    parsed = conformance.parse_stream(body)              # framing (FRAME-002/003) and the events
    problems = parsed.violations + conformance.check_events(parsed.events)   # every rule of one stream

Run the suite from Python (what `copilot-conformance run` does, without the reports)::

    result = conformance.run_suite(conformance.load_target("my-server.yaml"))
    print(result.passed, {v.id: v.verdict for v in result.verdicts})
    conformance.run_suite(target, only=["TITLE-003", "stats"], seed=7, keep=True)   # as --only, --seed, --keep

Snapshot-test streams with syrupy: `conformance.snapshot_text(body)` and `conformance.SseSnapshotExtension`.
"""

from __future__ import annotations

from typing import Any

import gns3_copilot_spec as spec
from conformance.checks import SelectionError
from conformance.errors import Blocked, ConformanceError, HarnessError, NotTestable, TargetError
from conformance.harness.engine import run, run_suite
from conformance.harness.findings import Finding, Outcome, RequirementVerdict, Verdict
from conformance.harness.target import Target, load_target, parse_target
from conformance.harness.verdicts import RunResult
from conformance.reports.sse_snapshot import SseSnapshotExtension, snapshot_events, snapshot_text
from conformance.rules.framing import ParsedStream, parse_stream
from conformance.rules.stream_events import check_events
from conformance.rules.violations import Violation

__all__ = [
    "Blocked",
    "ConformanceError",
    "Finding",
    "HarnessError",
    "NotTestable",
    "Outcome",
    "ParsedStream",
    "RequirementVerdict",
    "RunResult",
    "SelectionError",
    "SseSnapshotExtension",
    "Target",
    "TargetError",
    "Verdict",
    "Violation",
    "check_events",
    "load_target",
    "parse_stream",
    "parse_target",
    "requirement",
    "run",
    "run_suite",
    "snapshot_events",
    "snapshot_text",
]


def requirement(requirement_id: str) -> dict[str, Any]:
    """The record of one requirement of the contract's registry (spec/requirements.yaml): id, level, section,
    text, and its checks or the reason it has none."""
    for record in spec.load_requirements()["requirements"]:
        if record["id"] == requirement_id:
            return record
    raise KeyError(f"no requirement {requirement_id!r} in the registry")
