"""One redacted, JSON-ready view of a run that every report renders: the JSON file is this view, the JUnit file,
the HTML page and the console summary are drawn from it. Every requirement of the registry is in it."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import gns3_copilot_spec as spec
from conformance.harness.findings import Outcome, RequirementVerdict, Verdict, fails_the_run
from conformance.reports.reproduce import reproduction
from conformance.reports.voices import by_source, citation_of, source_of, summary_line

# Worst first: the order of the requirements within a section, and of the "not passing" list.
SEVERITY = [
    Verdict.ERROR,
    Verdict.FAIL,
    Verdict.STALE,
    Verdict.NOT_TESTABLE,
    Verdict.FLAKY,
    Verdict.WARN,
    Verdict.XFAIL,
    Verdict.PASS,
    Verdict.NOT_APPLICABLE,
    Verdict.EXCLUDED,
    Verdict.NOT_SELECTED,
]
# The order of the count columns.
DISPLAY = [
    Verdict.PASS,
    Verdict.FAIL,
    Verdict.WARN,
    Verdict.XFAIL,
    Verdict.STALE,
    Verdict.NOT_TESTABLE,
    Verdict.ERROR,
    Verdict.FLAKY,
    Verdict.NOT_APPLICABLE,
    Verdict.EXCLUDED,
    Verdict.NOT_SELECTED,
]
REDACTED = "<redacted>"
MIN_SECRET = 8  # shorter known values are not replaced (see Redactor)
REPORT_FILES = {"json": "conformance.json", "junit": "junit.xml", "html": "report.html", "summary": "summary.txt"}

_BEARER = re.compile(r"(?i)\b(bearer\s+)(?!\$TOKEN\b)(?!<redacted>)[A-Za-z0-9\-._~+/]{8,}=*")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
_API_KEY = re.compile(r"\bsk-[A-Za-z0-9_-]{12,}")
_SECRET_FIELD = re.compile(
    r'(?i)("(?:api_key|apikey|password|access_token|refresh_token|token|authorization|secret)"\s*:\s*")'
    r'(?!<redacted>")(?:[^"\\]|\\.)+(")'
)


class Redactor:
    """Replaces every secret of a run by <redacted>: the values the engine kept (`result.secrets`: API keys and
    bearer tokens of the run), the credentials of the target file (tokens, passwords), and whatever
    looks like a bearer token, a JWT, an `sk-` API key or the value of a JSON field named like a secret. Dict keys
    are left alone."""

    def __init__(self, secrets: list[str]) -> None:
        # Values shorter than MIN_SECRET are not replaced: a 1-letter token of a test target would blank every
        # "a" of the report, and so short a value protects nothing anyway.
        self.secrets = sorted({s for s in secrets if len(s) >= MIN_SECRET}, key=len, reverse=True)

    @classmethod
    def for_result(cls, result: Any) -> Redactor:
        found: list[str] = []
        kept = getattr(result, "secrets", None) or {}
        found += [v for v in (kept.values() if isinstance(kept, dict) else kept) if isinstance(v, str)]
        target = getattr(result, "target", None)
        auth = (getattr(target, "data", None) or {}).get("auth") or {}
        found += [v for v in (auth.get("tokens") or {}).values() if isinstance(v, str)]
        passwords = [(auth.get("admin") or {}).get("password"), auth.get("user_password")]
        found += [p for p in passwords if isinstance(p, str)]
        return cls(found)

    def text(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
        text = _JWT.sub(REDACTED, text)
        text = _API_KEY.sub(REDACTED, text)
        return _SECRET_FIELD.sub(lambda m: m.group(1) + REDACTED + m.group(2), text)

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value


def all_verdicts(result: Any) -> list[RequirementVerdict]:
    """One verdict per requirement of the registry, in registry order (NOT SELECTED for those `--only` left out)."""
    by_id = {v.id: v for v in result.verdicts}
    verdicts = []
    for record in spec.load_requirements()["requirements"]:
        verdict = by_id.pop(record["id"], None)
        verdicts.append(
            verdict or RequirementVerdict(record, Verdict.NOT_SELECTED, [], "its checks were not selected (--only)")
        )
    return verdicts + list(by_id.values())  # (ids unknown to the registry: none, unless the engine changes)


def is_failing(verdict: str, requirement_id: str, result: Any) -> bool:
    """Whether this verdict fails the run (findings.run_passes, requirement by requirement)."""
    baseline = getattr(result.target, "baseline", None)
    accepted = getattr(baseline, "not_testable", {}) or {}
    return fails_the_run(verdict, requirement_id, accepted, getattr(baseline, "source", None) is not None)


def headline(entry: dict[str, Any]) -> str:
    """The one message that says why a requirement is not a plain pass."""
    first = next((f["message"] for f in entry["findings"] if f["outcome"] != Outcome.PASSED), "")
    verdict, note = entry["verdict"], entry["note"]
    if verdict == Verdict.XFAIL:
        return f"known failure ({note}): {first}" if first else f"known failure: {note}"
    if verdict in (Verdict.STALE, Verdict.NOT_APPLICABLE, Verdict.EXCLUDED, Verdict.NOT_SELECTED):
        return note
    if verdict == Verdict.NOT_TESTABLE and note:
        return f"{first} (baseline: {note})" if first else note
    return first or note


def _finding(finding: Any) -> dict[str, Any]:
    return {
        "outcome": finding.outcome,
        "message": finding.message,
        "check": finding.check,
        "evidence": [
            {
                "request": item.get("request"),
                "response": item.get("response"),
                "reproduction": item.get("reproduction"),
                **{k: v for k, v in item.items() if k not in ("request", "response", "reproduction")},
            }
            for item in finding.evidence or []
        ],
    }


def report_data(result: Any, files: dict[str, str] | None = None) -> dict[str, Any]:
    """The whole run as plain data, secrets redacted: what conformance.json holds."""
    target = result.target
    ran = {run.id for run in result.checks}
    requirements = []
    for verdict in all_verdicts(result):
        record = verdict.requirement
        entry = {
            "id": verdict.id,
            "level": record.get("level"),
            "section": record.get("section"),
            # Whose rule: the protocol's own (with its citation) or the contract's (voices.py).
            "source": source_of(record),
            "citation": citation_of(record),
            "text": record.get("text"),
            "capability": record.get("capability"),
            "checks": list(record.get("checks", [])),
            "verdict": verdict.verdict,
            "failing": is_failing(verdict.verdict, verdict.id, result),
            "note": verdict.note or "",
            "findings": [_finding(f) for f in verdict.findings],
        }
        entry["message"] = headline(entry)
        entry["reproduce"] = reproduction(result, entry)
        if not entry["message"] and verdict.verdict == Verdict.NOT_TESTABLE:
            missing = [c for c in entry["checks"] if c not in ran]
            entry["message"] = (
                f"no check judged it: {', '.join(missing)} did not run (no such check in this suite)"
                if missing
                else "no check judged it"
            )
        requirements.append(entry)
    counts = Counter(r["verdict"] for r in requirements)
    declarations = target.data.get("declarations", {})
    data = {
        "suite": "copilot-conformance",
        "contract_version": spec.contract_version(),
        "target": {
            "name": target.name,
            "file": str(target.path) if target.path else None,
            "description": target.data.get("description"),
            "started_by_suite": "start" in target.data,
            "capabilities": sorted(declarations.get("capabilities", [])),
            "heartbeat_interval": declarations.get("heartbeat_interval"),
            "title_counts_in_stats": declarations.get("title_counts_in_stats"),
            "baseline": getattr(target.baseline, "source", None),
        },
        "base_url": result.base_url,
        "seed": getattr(result, "seed", None),  # of the generated requests: `--seed` reruns them
        "only": list(getattr(result, "only", []) or []),  # the run's --only selectors (none: every check)
        # What the run made on the target and removed (or kept, --keep), and what it could not remove.
        "cleanup": result.cleanup.as_data() | {"summary": result.cleanup.summary()}
        if getattr(result, "cleanup", None) is not None
        else None,
        "started_at": result.started_at,
        "wall_time_seconds": round(result.wall_time, 3),
        "passed": bool(result.passed),
        "harness_error": result.harness_error,
        "counts": {verdict: counts.get(verdict, 0) for verdict in DISPLAY},
        # The two voices apart: protocol violations and contract deviations, and the line that says both.
        "by_source": by_source(requirements, DISPLAY),
        "failing": [r["id"] for r in requirements if r["failing"]],
        # Check id -> the server's own errors it met; each such check was re-run once (FLAKY where it flipped).
        "transient_errors": dict(getattr(result, "transient", {}) or {}),
        # Check id -> what its first attempt failed: checks of a duration or a race judged again with the server
        # to themselves.
        "judged_alone": dict(getattr(result, "judged_alone", {}) or {}),
        "reports": dict(files or {}),
        "requirements": requirements,
        "checks": [
            {
                "id": run.id,
                "requirements": list(run.requirements),
                "duration_seconds": round(run.duration, 3),
                "outcomes": dict(Counter(f.outcome for f in run.findings)),
            }
            for run in result.checks
        ],
    }
    data["voices"] = summary_line(data)
    return Redactor.for_result(result).value(data)


def sections(data: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(section, its requirements worst first) in the registry's order of sections."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for entry in data["requirements"]:
        grouped.setdefault(entry["section"] or "(no section)", []).append(entry)
    return [(name, sorted(entries, key=severity_key)) for name, entries in grouped.items()]


def severity_key(entry: dict[str, Any]) -> int:
    return SEVERITY.index(entry["verdict"]) if entry["verdict"] in SEVERITY else 0


def count(entries: list[dict[str, Any]]) -> dict[str, int]:
    counts = Counter(e["verdict"] for e in entries)
    return {verdict: counts.get(verdict, 0) for verdict in DISPLAY}


def verdict_class(verdict: str) -> str:
    """A CSS-friendly family name: red for every verdict that fails a run, never green for NOT TESTABLE."""
    return {
        Verdict.PASS: "pass",
        Verdict.FAIL: "fail",
        Verdict.STALE: "fail",
        Verdict.ERROR: "fail",
        Verdict.NOT_TESTABLE: "fail",
        Verdict.WARN: "warn",
        Verdict.FLAKY: "warn",
        Verdict.XFAIL: "xfail",
    }.get(verdict, "neutral")
