"""junit.xml: one testcase per requirement, for CI dashboards. Its classname is its source, then its section
(`protocol.OpenAI protocol`, `contract.Sessions`): a dashboard groups the protocol's rules apart from the contract's;
its properties say the source and, for a protocol rule, the citation; the details hold every finding and its whole
evidence, never cut.

FAIL, STALE and NOT TESTABLE are failures and ERROR is an error (a NOT TESTABLE the target's baseline accepts is
skipped); WARN, XFAIL and a FLAKY that a baseline lists without failing pass with their message in system-out;
N/A, EXCLUDED and NOT SELECTED are skipped."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from conformance.harness.findings import Verdict
from conformance.reports.evidence_text import entry_heading, finding_lines
from conformance.reports.voices import NOUNS, SOURCES

# Characters XML 1.0 cannot hold (control characters in a response body would make the file unreadable).
_INVALID_XML = re.compile("[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _clean(text: Any) -> str:
    return _INVALID_XML.sub("\ufffd", "" if text is None else str(text))


def _details(entry: dict[str, Any]) -> str:
    """The requirement, its source, every finding that did not pass with its whole evidence, and how to rerun it."""
    lines = [*entry_heading(entry)]
    problems = finding_lines(entry)
    lines += ["", *problems] if problems else []
    if entry.get("reproduce"):
        lines += ["", f"rerun: {entry['reproduce']['rerun']}"]
        if entry["reproduce"].get("standalone"):
            lines += ["replay without the suite:", *(f"  {line}" for line in entry["reproduce"]["standalone"])]
    return "\n".join(lines)


def _voice(case: ET.Element, entry: dict[str, Any]) -> None:
    """The testcase's source and, for a protocol rule, its citation, as properties (as pytest's record_property)."""
    properties = ET.SubElement(case, "properties")
    ET.SubElement(properties, "property", name="source", value=entry["source"])
    for key, value in (entry.get("citation") or {}).items():
        ET.SubElement(properties, "property", name=f"citation_{key}", value=_clean(value))


def _duration(entry: dict[str, Any], durations: dict[str, float]) -> float:
    return max((durations.get(check, 0.0) for check in entry["checks"]), default=0.0)


def render(data: dict[str, Any]) -> bytes:
    durations = {c["id"]: c["duration_seconds"] for c in data["checks"]}
    suites = ET.Element("testsuites", name="copilot-conformance")
    suite = ET.SubElement(suites, "testsuite", name=f"copilot-conformance {data['target']['name']}")
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("target", data["target"]["name"]),
        ("target_file", data["target"]["file"] or ""),
        ("base_url", data["base_url"] or ""),
        ("contract_version", data["contract_version"]),
        ("passed", str(data["passed"]).lower()),
        ("harness_error", data["harness_error"] or ""),
        ("seed", str(data.get("seed") or "")),
        ("only", " ".join(data.get("only") or [])),
        ("cleanup", (data.get("cleanup") or {}).get("summary", "")),
        ("voices", data.get("voices", "")),
        *(
            (f"{source}_{NOUNS[source][1]}", str(data["by_source"][source][NOUNS[source][1]]))
            for source in SOURCES
            if "by_source" in data
        ),
    ):
        ET.SubElement(properties, "property", name=name, value=_clean(value))
    tallies = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for entry in data["requirements"]:
        tallies["tests"] += 1
        case = ET.SubElement(
            suite,
            "testcase",
            name=entry["id"],
            classname=_clean(f"{entry['source']}.{entry['section']}"),  # the voice, then the section
            time=f"{_duration(entry, durations):.3f}",
        )
        _voice(case, entry)
        verdict = entry["verdict"]
        message = _clean(f"{verdict} ({entry['level']}, {entry['source']}): {entry['message']}")
        if verdict == Verdict.ERROR:
            tallies["errors"] += 1
            ET.SubElement(case, "error", message=message, type=verdict).text = _clean(_details(entry))
        elif verdict == Verdict.NOT_TESTABLE and not entry["failing"]:
            tallies["skipped"] += 1
            ET.SubElement(case, "skipped", message=_clean(f"NOT TESTABLE, accepted by the baseline: {entry['note']}"))
        elif verdict in (Verdict.FAIL, Verdict.STALE, Verdict.NOT_TESTABLE) or (
            verdict == Verdict.FLAKY and entry["failing"]
        ):
            tallies["failures"] += 1
            ET.SubElement(case, "failure", message=message, type=verdict).text = _clean(_details(entry))
        elif verdict in (Verdict.WARN, Verdict.XFAIL, Verdict.FLAKY):
            ET.SubElement(case, "system-out").text = _clean(message + "\n\n" + _details(entry))
        elif verdict != Verdict.PASS:  # N/A, EXCLUDED, NOT SELECTED
            tallies["skipped"] += 1
            ET.SubElement(case, "skipped", message=_clean(f"{verdict}: {entry['note']}"))
    suite.set("timestamp", _clean(data["started_at"]))
    suite.set("time", f"{data['wall_time_seconds']:.3f}")
    for key, value in tallies.items():
        suite.set(key, str(value))
        suites.set(key, str(value))
    suites.set("time", f"{data['wall_time_seconds']:.3f}")
    ET.indent(suites)
    return ET.tostring(suites, encoding="utf-8", xml_declaration=True) + b"\n"


def write(data: dict[str, Any], path: Path) -> Path:
    path.write_bytes(render(data))
    return path
