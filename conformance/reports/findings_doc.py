"""A findings document for an implementation's developers, generated from a run's conformance.json.

`python -m conformance.reports.findings_doc reports/X/conformance.json docs/X.md`. It speaks in two voices: first
the protocol violations (what the protocol itself requires, each with the text it cites), then the contract
deviations (what the GNS3 Copilot contract adds). Every requirement not met appears with its level, every
observation, every piece of evidence whole (long ones folded in `<details>`), the expected behaviour (the
requirement's text) and a reproduction; then what could not be exercised, and why. No absolute path of the
machine that ran it is left in it (local_paths.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from conformance.harness.findings import Outcome, Verdict
from conformance.reports.local_paths import portable
from conformance.reports.voices import NOT_MET, SOURCES, TITLES, citation_text, with_voices

# Not met in a way that is neither the protocol's nor the contract's word on the server: the baseline is stale,
# or the suite could not do its part.
OTHERWISE = (Verdict.STALE, Verdict.ERROR)
LEVEL_ORDER = {"MUST": 0, "SHOULD": 1, "MAY": 2}
FOLDED = 1500  # characters: a longer block is folded in <details> (whole, never cut)
INTRODUCTIONS = {
    "protocol": "What the protocol itself requires (its official specification, schemas and real clients), each "
    "with the text it cites: a server that breaks one of these fails its protocol's own clients.",
    "contract": "What the GNS3 Copilot contract adds on top of the protocol (server-kept sessions, the busy lock, "
    "usage equal to the turn's statistics, its error codes, its paths): a server that is not a GNS3 Copilot "
    "implementation may deviate from these and still speak its protocol.",
}


def _block(value: Any, label: str = "") -> str:
    """A code block, whole; folded in <details> (titled `label`) when long."""
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
    block = "```\n" + text.replace("```", "` ` `") + "\n```"
    if len(text) <= FOLDED:
        return block
    return f"<details><summary>{label or 'the whole text'} ({len(text)} characters)</summary>\n\n{block}\n\n</details>"


def _evidence(item: dict[str, Any]) -> list[str]:
    request, response = item.get("request") or {}, item.get("response") or {}
    sent = f"{request.get('method')} {request.get('url')}" + (f"\n\n{request['body']}" if request.get("body") else "")
    out = [f"Request, as user `{request.get('as_user', 'main')}`:", _block(sent, "the request")]
    shown = f"status {response.get('status')}"
    if response.get("content_type"):
        shown += f", {response['content_type']}"
    if response.get("events"):
        events = "\n".join(json.dumps(e, ensure_ascii=False) for e in response["events"])
        out += [f"Response ({shown}), {len(response['events'])} events:", _block(events, "every event")]
    elif response.get("body") is not None:
        out += [f"Response ({shown}):", _block(response.get("body"), "the response body")]
    elif response.get("error"):
        out += [f"Response: {response['error']}"]
    else:
        out += [f"Response: {shown}"]
    for key, value in item.items():
        if key not in ("request", "response", "reproduction"):
            out += [f"{key}:", _block(value, key)]
    if item.get("reproduction"):
        out += [
            "The exchange as curl (the reproduction below says where `$TOKEN` comes from):",
            _block(item["reproduction"], "the curl line"),
        ]
    return out


def _entry(entry: dict[str, Any], shown: dict[str, int]) -> list[str]:
    """One requirement not met. `shown`: every exchange already shown in the document, by its number (an exchange
    that proves several requirements is shown whole once, then named by its number)."""
    lines = [f"### {entry['id']} ({entry['level']}, {entry['section']}): {entry['verdict']}", ""]
    if entry.get("citation"):
        lines += [f"**Source:** protocol. **Cites:** {citation_text(entry['citation'])}", ""]
    else:
        lines += [f"**Source:** {entry['source']}.", ""]
    lines += [f"**Expected:** {entry['text']}", ""]
    if entry.get("note"):
        lines += [f"**Known deviation (baseline):** {entry['note']}", ""]
    problems = [f for f in entry["findings"] if f["outcome"] != Outcome.PASSED]
    lines += ["**Observed:**", ""]
    lines += [f"- {f['message']} (check `{f['check']}`, {f['outcome'].replace('_', ' ')})" for f in problems] or [
        f"- {entry.get('message') or '(no message)'}"
    ]
    lines.append("")
    named: set[int] = set()
    for finding in problems:
        for item in finding.get("evidence") or []:
            key = json.dumps(item, sort_keys=True, default=str)
            if key in shown:
                if shown[key] not in named:
                    lines += [f"**Evidence {shown[key]}** (check `{finding['check']}`): shown above.", ""]
                    named.add(shown[key])
                continue
            shown[key] = len(shown) + 1
            named.add(shown[key])
            lines += [f"**Evidence {shown[key]}** (check `{finding['check']}`):", "", *_evidence(item), ""]
    reproduce = entry.get("reproduce") or {}
    if reproduce:
        lines += ["**Reproduce:** rerun its checks with the run's seed:", _block(reproduce["rerun"]), ""]
        if reproduce.get("standalone"):
            lines += ["or replay it without the suite:", _block("\n".join(reproduce["standalone"]), "the replay"), ""]
    return lines


def _ordered(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(entries, key=lambda r: (LEVEL_ORDER.get(r["level"], 3), r["id"]))


def _at_a_glance(violations: list[dict[str, Any]]) -> list[str]:
    """The protocol violations first, one line each: what a user of the protocol's own clients meets, before the
    contract's additions and before any evidence."""
    if not violations:
        return []
    lines = ["The protocol violations, each detailed below:", ""]
    for entry in violations:
        problems = [f["message"] for f in entry["findings"] if f["outcome"] != Outcome.PASSED]
        said = entry.get("note") or (problems[0] if problems else entry.get("message") or "")
        lines.append(f"- **{entry['id']}** ({entry['level']}): {said}")
    return [*lines, ""]


def render(data: dict[str, Any]) -> str:
    data = with_voices(data)
    target = data["target"]
    requirements = data["requirements"]
    voices = {s: _ordered([r for r in requirements if r["source"] == s and r["verdict"] in NOT_MET]) for s in SOURCES}
    otherwise = _ordered([r for r in requirements if r["verdict"] in OTHERWISE])
    untestable = [r for r in requirements if r["verdict"] == Verdict.NOT_TESTABLE]
    inapplicable = [r for r in requirements if r["verdict"] == Verdict.NOT_APPLICABLE]
    counts = ", ".join(f"{count} {verdict}" for verdict, count in data["counts"].items() if count)
    failed = sum(len(v) for v in voices.values()) + len(otherwise)
    lines = [
        f"# {target.get('description') or target['name']}: conformance findings",
        "",
        f"Generated from `conformance.json` of the run of {data['started_at']} (contract {data['contract_version']}) "
        f"by `python -m conformance.reports.findings_doc`; regenerate rather than edit. Target file: "
        f"`{Path(target['file']).name if target.get('file') else target['name']}`.",
        "",
        f"**{data['voices']}.**",
        "",
        *_at_a_glance(voices["protocol"]),
        f"Verdicts: {counts}. The run took {data['wall_time_seconds']:.0f} s. "
        f"{failed} requirement(s) not met, {len(untestable)} could not be exercised.",
        "",
        "How to read an entry: **Source** says whose rule it is, the protocol's (with the text it cites) or the "
        "contract's; **Expected** is the requirement's text (spec/behaviour.md); **Observed** is every observation "
        "the suite made; the evidence is each exchange that showed it, whole, and the reproduction a curl command to "
        "replay it (session ids and project ids are those of the run; a new run makes new ones).",
        "",
    ]
    shown: dict[str, int] = {}
    for source in SOURCES:
        lines += [f"## {TITLES[source]}", "", INTRODUCTIONS[source], ""]
        lines += [line for entry in voices[source] for line in _entry(entry, shown)] or ["None.", ""]
    if otherwise:
        lines += ["## Not met otherwise: a stale baseline, or the suite's own error", ""]
        lines += [line for entry in otherwise for line in _entry(entry, shown)]
    lines += ["## Flaky: verdicts the server's own transient errors made unreliable", ""]
    lines += [
        "A check that met a transient server error (a 5xx answer, or an `error` event its scenario did not script) "
        "and did not pass is run once more. A requirement judged otherwise the second time is FLAKY: neither "
        "attempt can be trusted, so it is listed here, with the server's error text, and not counted as a new "
        "failure against the baseline.",
        "",
    ]
    flaky = [r for r in requirements if r["verdict"] == Verdict.FLAKY]
    lines += [f"- **{e['id']}** ({e['level']}, {e['source']}): {e.get('note')}" for e in flaky] or ["None in this run."]
    transient = data.get("transient_errors") or {}
    if transient:
        lines += [
            "",
            f"Checks that met server errors their scenario did not ask for, and ran again ({len(transient)}); where "
            "the second attempt judged alike, the error is the server's own behaviour, not a transient one:",
            "",
        ]
        lines += [f"- `{check}`: {'; '.join(errors)}" for check, errors in sorted(transient.items())]
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
        lines += [f"- **{entry['id']}** ({entry['level']}, {entry['source']}): {reason}"]
    lines += ["", "## Not applicable to this target", ""]
    lines += [
        f"- **{e['id']}** ({e['level']}, {e['source']}): {e.get('note') or 'not declared'}" for e in inapplicable
    ] or ["None."]
    return portable("\n".join(lines).rstrip() + "\n")


def write_findings(conformance_json: Path, out: Path) -> Path:
    data = json.loads(conformance_json.read_text(encoding="utf-8"))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(data), encoding="utf-8")
    return out


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m conformance.reports.findings_doc CONFORMANCE_JSON OUT_MD")
    print(write_findings(Path(sys.argv[1]), Path(sys.argv[2])))
