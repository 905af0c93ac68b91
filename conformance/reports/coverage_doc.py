"""docs/coverage.md: for every MUST and SHOULD, the states and boundaries its text covers and the check that
judges it in each, generated from conformance/coverage.yaml.

    python -m conformance.reports.coverage_doc [OUT]     (default: docs/coverage.md; tests fail when it is stale)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

import gns3_copilot_spec as spec
from conformance.checks import load_all

SOURCE = Path(__file__).resolve().parents[1] / "coverage.yaml"
DEFAULT_OUT = spec.SPEC_DIR.parent / "docs" / "coverage.md"
EVERY_STREAM = "every stream"  # judged on every stream and answer of the run (conformance.channels.gns3_stream)
PREFLIGHT = "preflight"  # stops the run before any check (conformance.harness.preflight)


def load() -> dict[str, dict[str, Any]]:
    return yaml.safe_load(SOURCE.read_text(encoding="utf-8"))


def judged_rules() -> list[dict[str, Any]]:
    """The requirements the coverage table must list: every MUST and SHOULD that is not excluded."""
    return [
        r for r in spec.load_requirements()["requirements"] if r["level"] in ("MUST", "SHOULD") and "excluded" not in r
    ]


def problems() -> list[str]:
    """What makes coverage.yaml untrue: a rule missing, a check that does not exist or does not judge the rule."""
    coverage, checks = load(), load_all()
    rules = {r["id"]: r for r in judged_rules()}
    found = [f"{rid} ({rules[rid]['level']}) has no states" for rid in rules if rid not in coverage]
    found += [f"{rid} is not a MUST or SHOULD with checks" for rid in coverage if rid not in rules]
    for rid, states in coverage.items():
        for state, judged_by in states.items():
            if state == "gaps":
                continue
            if judged_by in (EVERY_STREAM, PREFLIGHT):
                continue
            if judged_by not in checks:
                found.append(f"{rid}, {state!r}: no check {judged_by!r}")
            elif rid not in checks[judged_by].requirements:
                found.append(f"{rid}, {state!r}: the check {judged_by} does not judge {rid}")
    return found


def render() -> str:
    coverage = load()
    lines = [
        "# Coverage: each rule in each state its text covers",
        "",
        "Generated from `conformance/coverage.yaml` by `python -m conformance.reports.coverage_doc`; a test fails "
        "when it is "
        "stale. For every MUST and SHOULD: the states and boundaries the suite judges it in, and by which check "
        f"(*{EVERY_STREAM}*: judged on every stream and answer of the run, whichever check read it). **Gaps** are "
        "states the rule's text covers that no check judges yet. *Judged* counts, for each rule, the states judged of "
        "the states its text names (the judged ones and the gaps).",
        "",
    ]
    section = None
    for record in judged_rules():
        if record["section"] != section:
            section = record["section"]
            lines += [f"## {section}", "", "| requirement | judged | state | judged by |", "|---|---|---|---|"]
        states = coverage.get(record["id"], {})
        judged, named = state_counts(states)
        tally = f"{judged} of {named}"
        first = True
        for state, judged_by in states.items():
            if state == "gaps":
                continue
            name = f"**{record['id']}** ({record['level']})" if first else ""
            shown = f"*{judged_by}*" if judged_by in (EVERY_STREAM, PREFLIGHT) else f"`{judged_by}`"
            lines.append(f"| {name} | {tally if first else ''} | {state} | {shown} |")
            first = False
        for gap in states.get("gaps", []):
            head = f"**{record['id']}** ({record['level']}) | {tally}" if first else " | "
            lines.append(f"| {head} | **gap:** {gap} | none yet |")
            first = False
    lines = _close_tables(lines)
    gaps = sum(len(states.get("gaps", [])) for states in coverage.values())
    counts = [state_counts(states) for states in coverage.values()]
    judged, named = sum(c[0] for c in counts), sum(c[1] for c in counts)
    known = f"{gaps} known gap{'' if gaps == 1 else 's'}"
    lines += ["", f"{len(judged_rules())} rules; {judged} of {named} states judged; {known}.", ""]
    return "\n".join(lines)


def state_counts(states: dict[str, Any]) -> tuple[int, int]:
    """(states judged, states the rule's text names): each judged line of coverage.yaml is one state, each gap one."""
    judged = sum(1 for state in states if state != "gaps")
    return judged, judged + len(states.get("gaps", []))


def _close_tables(lines: list[str]) -> list[str]:
    """A blank line before each section heading, so every table ends where the next section begins."""
    out: list[str] = []
    for line in lines:
        if line.startswith("## ") and out and out[-1] != "":
            out.append("")
        out.append(line)
    return out


def main(argv: list[str]) -> int:
    wrong = problems()
    if wrong:
        print("conformance/coverage.yaml is not true:\n  " + "\n  ".join(wrong), file=sys.stderr)
        return 1
    out = Path(argv[0]) if argv else DEFAULT_OUT
    out.write_text(render(), encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
