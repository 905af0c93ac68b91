"""The two voices of every report: what the protocol itself requires (its official text, schemas and real
clients: `source: protocol`, with the citation) and what the contract adds on top (`source: contract`). A
protocol requirement not met is a *protocol violation*; a contract requirement not met, a *contract deviation*.
Every report lists them apart, so that a user of another stack learns which failures are the protocol's."""

from __future__ import annotations

from typing import Any

from conformance.harness.findings import Verdict

PROTOCOL, CONTRACT = "protocol", "contract"
SOURCES = (PROTOCOL, CONTRACT)  # the protocol's voice first: its violations lead every report
TITLES = {PROTOCOL: "Protocol violations", CONTRACT: "Contract deviations"}
NOUNS = {PROTOCOL: ("violation", "violations"), CONTRACT: ("deviation", "deviations")}
# The verdicts of a requirement the server was seen not to meet: a violation (protocol) or a deviation (contract),
# whether the run fails for it (FAIL), accepts it (XFAIL: the baseline lists it) or only reports it (WARN: a SHOULD).
NOT_MET = (Verdict.FAIL, Verdict.XFAIL, Verdict.WARN)


def source_of(record: dict[str, Any]) -> str:
    """The record's source; the registry gives every requirement one (a record without is the contract's)."""
    return PROTOCOL if record.get("source") == PROTOCOL else CONTRACT


def citation_of(record: dict[str, Any]) -> dict[str, str] | None:
    """{protocol, version, reference} of a protocol requirement, None for the contract's."""
    citation = record.get("citation")
    if source_of(record) != PROTOCOL or not isinstance(citation, dict):
        return None
    return {key: str(citation.get(key) or "") for key in ("protocol", "version", "reference")}


def citation_text(citation: dict[str, str] | None) -> str:
    """`protocol version: reference` in one line ("" for none)."""
    if not citation:
        return ""
    head = ", ".join(part for part in (citation.get("protocol"), citation.get("version")) if part)
    reference = " ".join((citation.get("reference") or "").split())
    return f"{head}: {reference}" if reference else head


def voice(entry: dict[str, Any]) -> str:
    """How a report names the entry's source: "protocol (cites ...)" or "contract"."""
    cited = citation_text(entry.get("citation"))
    return f"{entry['source']} (cites {cited})" if cited else entry["source"]


def not_met(entries: list[dict[str, Any]], source: str) -> list[dict[str, Any]]:
    """The entries of `source` whose requirement the server was seen not to meet, in the given order."""
    return [e for e in entries if e["source"] == source and e["verdict"] in NOT_MET]


def counted(number: int, source: str) -> str:
    singular, plural = NOUNS[source]
    return f"{number} {singular if number == 1 else plural}"


def by_source(entries: list[dict[str, Any]], display: list[str]) -> dict[str, dict[str, Any]]:
    """Per source: how many requirements, how many not met (violations or deviations), how many fail the run,
    the ids not met, and the count of each verdict."""
    summary = {}
    for source in SOURCES:
        mine = [e for e in entries if e["source"] == source]
        summary[source] = {
            "requirements": len(mine),
            NOUNS[source][1]: len(not_met(mine, source)),
            "failing": sum(1 for e in mine if e["failing"]),
            "not_met": [e["id"] for e in not_met(mine, source)],
            "counts": {verdict: sum(1 for e in mine if e["verdict"] == verdict) for verdict in display},
        }
    return summary


def summary_line(data: dict[str, Any]) -> str:
    """ "protocol: N violations; contract: M deviations" of a run's report data."""
    sources = data.get("by_source") or {}
    return "; ".join(
        f"{source}: {counted((sources.get(source) or {}).get(NOUNS[source][1], 0), source)}" for source in SOURCES
    )


def with_voices(data: dict[str, Any]) -> dict[str, Any]:
    """`data` (a conformance.json) with every entry's source and citation and the per-source summary, read from the
    registry where a file written before the two voices lacks them (a findings document regenerated from it)."""
    import gns3_copilot_spec as spec

    records = {record["id"]: record for record in spec.load_requirements()["requirements"]}
    entries = []
    for entry in data["requirements"]:
        record = records.get(entry["id"], {})
        entries.append({"source": source_of(record), "citation": citation_of(record), **entry})
    data = {**data, "requirements": entries}
    if "by_source" not in data:
        data["by_source"] = by_source(entries, list(data.get("counts") or {}))
    data.setdefault("voices", summary_line(data))
    return data
