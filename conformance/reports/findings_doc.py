"""A findings document for an implementation's developers, generated from a run's conformance.json.

`python -m conformance.reports.findings_doc reports/X/conformance.json docs/X.md`. Every failed requirement appears
with its level, what was observed, the evidence (request, response or event excerpt), the expected behaviour (the
requirement's text) and a reproduction; then what could not be exercised, and why.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from conformance.harness.findings import Outcome, Verdict

FAILED = (Verdict.FAIL, Verdict.XFAIL, Verdict.WARN, Verdict.STALE, Verdict.ERROR)
LEVEL_ORDER = {"MUST": 0, "SHOULD": 1, "MAY": 2}


def _block(value: Any, limit: int = 1800) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
    if len(text) > limit:
        text = text[:limit] + f"\n... ({len(text) - limit} more characters)"
    return "```\n" + text.replace("```", "` ` `") + "\n```"


def _events_excerpt(events: list[dict[str, Any]]) -> str:
    lines = [json.dumps(e, ensure_ascii=False) for e in events]
    if len(lines) > 14:
        lines = [*lines[:7], f"... ({len(lines) - 14} more events)", *lines[-7:]]
    return "\n".join(lines)


def _evidence(item: dict[str, Any]) -> list[str]:
    request, response = item.get("request") or {}, item.get("response") or {}
    out = [
        f"Request, as user `{request.get('as_user', 'main')}`:",
        _block(
            f"{request.get('method')} {request.get('url')}" + (f"\n\n{request['body']}" if request.get("body") else "")
        ),
    ]
    shown = f"status {response.get('status')}"
    if response.get("content_type"):
        shown += f", {response['content_type']}"
    if response.get("events"):
        out += [f"Response ({shown}), events:", _block(_events_excerpt(response["events"]))]
    elif response.get("body") is not None:
        out += [f"Response ({shown}):", _block(response.get("body"))]
    elif response.get("error"):
        out += [f"Response: {response['error']}"]
    else:
        out += [f"Response: {shown}"]
    if item.get("reproduction"):
        out += [
            "The exchange as curl (the reproduction below says where `$TOKEN` comes from):",
            _block(item["reproduction"]),
        ]
    return out


def render(data: dict[str, Any]) -> str:
    target = data["target"]
    requirements = data["requirements"]
    failed = sorted(
        (r for r in requirements if r["verdict"] in FAILED), key=lambda r: (LEVEL_ORDER.get(r["level"], 3), r["id"])
    )
    untestable = [r for r in requirements if r["verdict"] == Verdict.NOT_TESTABLE]
    inapplicable = [r for r in requirements if r["verdict"] == Verdict.NOT_APPLICABLE]
    counts = ", ".join(f"{count} {verdict}" for verdict, count in data["counts"].items() if count)
    lines = [
        f"# {target.get('description') or target['name']}: conformance findings",
        "",
        f"Generated from `conformance.json` of the run of {data['started_at']} (contract {data['contract_version']}) "
        f"by `python -m conformance.reports.findings_doc`; regenerate rather than edit. Target file: "
        f"`{Path(target['file']).name if target.get('file') else target['name']}`.",
        "",
        f"Verdicts: {counts}. The run took {data['wall_time_seconds']:.0f} s. "
        f"{len(failed)} requirement(s) failed, {len(untestable)} could not be exercised.",
        "",
        "How to read an entry: **Expected** is the requirement's text (spec/behaviour.md); **Observed** is what the "
        "suite saw; the evidence is the exchange that showed it, and the reproduction a curl command to replay it "
        "(session ids and project ids are those of the run; a new run makes new ones).",
        "",
        "## Requirements not met",
        "",
    ]
    if not failed:
        lines += ["None.", ""]
    for entry in failed:
        lines += [
            f"### {entry['id']} ({entry['level']}, {entry['section']}): {entry['verdict']}",
            "",
            f"**Expected:** {entry['text']}",
            "",
        ]
        if entry.get("note"):
            lines += [f"**Known deviation (baseline):** {entry['note']}", ""]
        problems = [f for f in entry["findings"] if f["outcome"] == Outcome.FAILED]
        lines += ["**Observed:**", ""]
        lines += [f"- {f['message']} (check `{f['check']}`)" for f in problems[:4]] or ["- (no message)"]
        if len(problems) > 4:
            lines += [f"- ... and {len(problems) - 4} more observations in conformance.json"]
        lines.append("")
        evidence = next((f["evidence"][0] for f in problems if f.get("evidence")), None)
        if evidence:
            lines += ["**Evidence:**", "", *_evidence(evidence), ""]
        reproduce = entry.get("reproduce") or {}
        if reproduce:
            lines += ["**Reproduce:** rerun its checks with the run's seed:", _block(reproduce["rerun"]), ""]
            if reproduce.get("standalone"):
                lines += ["or replay it without the suite:", _block("\n".join(reproduce["standalone"]), limit=8000), ""]
    lines += ["## Flaky: verdicts the server's own transient errors made unreliable", ""]
    lines += [
        "A check that met a transient server error (a 5xx answer, or an `error` event its scenario did not script) "
        "and did not pass is run once more. A requirement judged otherwise the second time is FLAKY: neither "
        "attempt can be trusted, so it is listed here, with the server's error text, and not counted as a new "
        "failure against the baseline.",
        "",
    ]
    flaky = [r for r in requirements if r["verdict"] == Verdict.FLAKY]
    lines += [f"- **{e['id']}** ({e['level']}): {e.get('note')}" for e in flaky] or ["None in this run."]
    transient = data.get("transient_errors") or {}
    if transient:
        lines += [
            "",
            f"Checks that met server errors their scenario did not ask for, and ran again ({len(transient)}); where "
            "the second attempt judged alike, the error is the server's own behaviour, not a transient one:",
            "",
        ]
        lines += [f"- `{check}`: {errors[0]}" for check, errors in sorted(transient.items())]
    alone = data.get("judged_alone") or {}
    if alone:
        lines += [
            "",
            "Checks of a duration the contract fixes that did not pass, or of a race that did not happen, while other "
            "checks loaded the server, judged again with the server to themselves; their verdicts come from that "
            f"second run ({len(alone)}):",
            "",
        ]
        lines += [f"- `{check}`: first attempt: {message}" for check, message in sorted(alone.items())]
    lines += ["", "## Requirements that could not be exercised", ""]
    if not untestable:
        lines += ["None.", ""]
    for entry in untestable:
        reason = entry.get("note") or next(
            (f["message"] for f in entry["findings"] if f["outcome"] != Outcome.PASSED),
            entry.get("message") or "no check could judge it",
        )
        lines += [f"- **{entry['id']}** ({entry['level']}): {reason}"]
    lines += ["", "## Not applicable to this target", ""]
    lines += [f"- **{e['id']}** ({e['level']}): {e.get('note') or 'not declared'}" for e in inapplicable] or ["None."]
    return "\n".join(lines).rstrip() + "\n"


def write_findings(conformance_json: Path, out: Path) -> Path:
    data = json.loads(conformance_json.read_text(encoding="utf-8"))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(data), encoding="utf-8")
    return out


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m conformance.reports.findings_doc CONFORMANCE_JSON OUT_MD")
    print(write_findings(Path(sys.argv[1]), Path(sys.argv[2])))
