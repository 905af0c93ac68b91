"""The summary printed at the end of a run (rich), in two voices: the protocol violations (each with the protocol
text it breaks) and the contract deviations are listed apart, every message whole. summary.txt holds the same
text, no colour, and (verbose) the whole evidence of every requirement not met."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from conformance.harness.findings import Verdict
from conformance.reports.evidence_text import entry_heading, finding_lines
from conformance.reports.model import DISPLAY, count, sections, severity_key, verdict_class
from conformance.reports.voices import NOT_MET, SOURCES, TITLES, citation_text, not_met, summary_line

STYLES = {"pass": "bold green", "fail": "bold red", "warn": "bold yellow", "xfail": "bold steel_blue", "neutral": "dim"}


def _style(verdict: str) -> str:
    return STYLES[verdict_class(verdict)]


def _sources(entries: list[dict[str, Any]]) -> str:
    found = {e["source"] for e in entries}
    return " and ".join(s for s in SOURCES if s in found)


def section_table(data: dict[str, Any]) -> Table:
    totals = count(data["requirements"])
    columns = [v for v in DISPLAY if totals[v] or v in (Verdict.PASS, Verdict.FAIL)]
    table = Table(title="Requirements per section", box=box.SIMPLE_HEAD, title_justify="left", show_footer=True)
    table.add_column("Section", footer="Total")
    table.add_column("Source")
    table.add_column("all", justify="right", footer=str(len(data["requirements"])))
    for verdict in columns:
        table.add_column(verdict, justify="right", header_style=_style(verdict), footer=str(totals[verdict]))
    for name, entries in sections(data):
        counts = count(entries)
        table.add_row(
            Text(name),
            Text(_sources(entries)),
            str(len(entries)),
            *(Text(str(counts[v]), style=_style(v)) if counts[v] else Text("-", style="dim") for v in columns),
        )
    return table


def _seen(entry: dict[str, Any]) -> Text:
    """Every finding of the entry that did not pass, whole, and for a protocol rule the text it breaks."""
    lines = finding_lines(entry, evidence=False) or [entry["message"]]
    if entry.get("note") and entry["verdict"] == Verdict.XFAIL:
        lines.append(f"known failure (baseline): {entry['note']}")
    if entry.get("citation"):
        lines.append(f"cites: {citation_text(entry['citation'])}")
    return Text("\n".join(lines))  # Text: messages hold `[[fake-llm:...]]`, not rich markup


def voice_table(data: dict[str, Any], source: str) -> RenderableType:
    """The requirements of one source the server was seen not to meet (FAIL, XFAIL, WARN), worst first."""
    entries = sorted(not_met(data["requirements"], source), key=severity_key)
    if not entries:
        return Text(f"{TITLES[source]}: none\n", style="bold")
    table = Table(title=f"{TITLES[source]} ({len(entries)})", box=box.SIMPLE_HEAD, title_justify="left")
    table.add_column("Requirement", no_wrap=True)
    table.add_column("Level", no_wrap=True)
    table.add_column("Verdict", no_wrap=True)
    table.add_column(
        "What the suite saw" + (" (and the protocol text it breaks)" if source == SOURCES[0] else ""), overflow="fold"
    )
    for entry in entries:
        table.add_row(entry["id"], entry["level"], Text(entry["verdict"], style=_style(entry["verdict"])), _seen(entry))
    return table


def other_table(data: dict[str, Any]) -> Table | None:
    """Every other requirement that did not pass (not testable, errors, stale, flaky, N/A, excluded), both voices;
    a run of a selection (--only) leaves out what it did not select and what the registry excludes."""
    left_out = {Verdict.PASS, Verdict.NOT_SELECTED, *NOT_MET} | ({Verdict.EXCLUDED} if data.get("only") else set())
    entries = sorted((e for e in data["requirements"] if e["verdict"] not in left_out), key=severity_key)
    if not entries:
        return None
    table = Table(title="Not judged, or not passing otherwise", box=box.SIMPLE_HEAD, title_justify="left")
    for name in ("Requirement", "Source", "Level", "Verdict"):
        table.add_column(name, no_wrap=True)
    table.add_column("Why", overflow="fold")
    for entry in entries:
        verdict = Text(entry["verdict"], style=_style(entry["verdict"]))
        table.add_row(entry["id"], entry["source"], entry["level"], verdict, Text(entry["message"]))
    return table


def selected_table(data: dict[str, Any]) -> Table:
    """A run of a selection (--only): the verdict of every requirement its checks judged, a PASS included."""
    entries = [e for e in data["requirements"] if e["verdict"] not in (Verdict.NOT_SELECTED, Verdict.EXCLUDED)]
    table = Table(title=f"Selected (--only {' '.join(data['only'])})", box=box.SIMPLE_HEAD, title_justify="left")
    for name in ("Requirement", "Source", "Level", "Verdict"):
        table.add_column(name, no_wrap=True)
    table.add_column("Why", overflow="fold")
    for entry in sorted(entries, key=severity_key):
        why = Text("every check of it passed") if entry["verdict"] == Verdict.PASS else _seen(entry)
        verdict = Text(entry["verdict"], style=_style(entry["verdict"]))
        table.add_row(entry["id"], entry["source"], entry["level"], verdict, why)
    return table


def failing_listing(data: dict[str, Any]) -> Text | None:
    """Brief (-q): one line per requirement that fails the run, most severe first, with its voice and verdict."""
    failing = sorted((e for e in data["requirements"] if e["failing"]), key=severity_key)
    if not failing:
        return None
    text = Text("failing:\n")
    for entry in failing:
        text.append(f"  {entry['id']:<22} ")
        text.append(f"{entry['verdict']:<13}", style=_style(entry["verdict"]))
        text.append(f" {entry['level']:<6} {entry['source']}\n")
    return text


def evidence_listing(data: dict[str, Any]) -> Text | None:
    """Verbose: each requirement not met, per voice, with every finding and its whole evidence."""
    lines: list[str] = []
    for source in SOURCES:
        entries = sorted(not_met(data["requirements"], source), key=severity_key)
        if entries:
            lines += [f"{TITLES[source]}: the evidence", ""]
            for entry in entries:
                lines += [*entry_heading(entry), *finding_lines(entry, indent="  "), ""]
    return Text("\n".join(lines)) if lines else None


def header(data: dict[str, Any]) -> Text:
    target = data["target"]
    text = Text()
    text.append("copilot-conformance", style="bold")
    text.append(f", contract {data['contract_version']}\n")
    text.append("target:   ")
    text.append(target["name"], style="bold")
    text.append(f" ({target['file'] or 'no file'})\n")
    text.append(f"base URL: {data['base_url'] or '(the target did not start)'}\n")
    text.append(f"started:  {data['started_at']}")
    return text


def footer(data: dict[str, Any], files: dict[str, str] | None = None) -> Text:
    text = Text()
    if data["harness_error"]:
        text.append("HARNESS ERROR: ", style="bold red")
        text.append(data["harness_error"].rstrip() + "\n")
    counts = ", ".join(f"{n} {v}" for v, n in data["counts"].items() if n)
    text.append(summary_line(data) + "\n", style="bold")  # the two voices: protocol violations, contract deviations
    if data["passed"]:
        text.append("RESULT: PASSED", style="bold green")
    else:
        failing = len(data["failing"])
        text.append("RESULT: FAILED", style="bold red")
        text.append(f" ({failing} requirement{'s' if failing != 1 else ''} fail the run)")
    text.append(f"  [{counts}]\n")
    text.append(f"run took {data['wall_time_seconds']:.1f} s\n")
    if data.get("cleanup"):
        text.append(f"clean-up: {data['cleanup']['summary']}\n")
    if files:
        text.append("reports:\n")
        for path in files.values():
            text.append(f"  {path}\n")
    text.rstrip()
    return text


def summary(data: dict[str, Any], files: dict[str, str] | None = None, *, brief: bool = False) -> RenderableType:
    """The whole summary; `brief` keeps only the failing requirements, the voices' line, the result line, the wall
    time and the report paths."""
    if brief:
        failing = failing_listing(data)
        return Group(failing, footer(data, files)) if failing is not None else footer(data, files)
    return Group(*body(data), footer(data, files))


def body(data: dict[str, Any]) -> list[RenderableType]:
    """The summary above its footer."""
    parts: list[RenderableType] = [header(data), Text("")]
    # A selection (--only) shows its own verdicts; the table of sections would be one of NOT SELECTED.
    parts.append(selected_table(data) if data.get("only") else section_table(data))
    parts += [voice_table(data, source) for source in SOURCES]
    other = other_table(data)
    if other is not None:
        parts.append(other)
    rerun = next((e["reproduce"]["rerun"] for e in data["requirements"] if e.get("reproduce")), None)
    if rerun:
        parts.append(
            Text(
                f"to rerun one of them: {rerun} (each has its `reproduce` in conformance.json: this command, "
                "and a replay with curl)\n"
            )
        )
    if data.get("transient_errors"):
        checks = data["transient_errors"]
        flaky = data["counts"].get(Verdict.FLAKY, 0)
        parts.append(
            Text(
                f"{len(checks)} check{'s' if len(checks) != 1 else ''} met server errors its scenario did not ask for "
                f"and ran again "
                f"({', '.join(sorted(checks))}); {flaky} requirement{'s' if flaky != 1 else ''} FLAKY: judged "
                "otherwise the second time, so their verdicts are unreliable\n"
            )
        )
    if data.get("judged_alone"):
        alone = data["judged_alone"]
        parts.append(
            Text(
                f"{len(alone)} check{'s' if len(alone) != 1 else ''} of a duration or a race did not pass while other "
                "checks loaded the "
                f"server and {'were' if len(alone) != 1 else 'was'} judged again with the server to "
                f"{'themselves' if len(alone) != 1 else 'itself'} ({', '.join(sorted(alone))})\n"
            )
        )
    if data["counts"].get(Verdict.NOT_SELECTED):
        parts.append(Text(f"{data['counts'][Verdict.NOT_SELECTED]} requirements NOT SELECTED (--only)\n"))
    return parts


def _print(console: Console, data: dict[str, Any], files: dict[str, str] | None, *, brief: bool, verbose: bool) -> None:
    """The summary; verbose, the evidence before its footer, its lines never wrapped nor cropped (a body or an event
    is kept whole, to be read or copied)."""
    if brief:
        failing = failing_listing(data)
        if failing is not None:
            console.print(failing)
        console.print(footer(data, files))
        return
    console.print(Group(*body(data)))
    listing = evidence_listing(data) if verbose else None
    if listing is not None:
        console.print(listing, soft_wrap=True)
    console.print(footer(data, files))


def summary_text(
    data: dict[str, Any],
    files: dict[str, str] | None = None,
    *,
    width: int = 140,
    brief: bool = False,
    verbose: bool = False,
) -> str:
    """The summary as plain text (summary.txt, verbose; `brief`: the pytest terminal summary)."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, force_terminal=False, highlight=False)
    _print(console, data, files, brief=brief, verbose=verbose)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"


def print_summary(
    data: dict[str, Any],
    files: dict[str, str] | None = None,
    *,
    console: Console | None = None,
    brief: bool = False,
    verbose: bool = False,
) -> None:
    console = console or Console(highlight=False)
    if not console.is_terminal:
        console.width = max(console.width, 140)
    _print(console, data, files, brief=brief, verbose=verbose)


def write(data: dict[str, Any], path: Path, files: dict[str, str] | None = None) -> Path:
    """summary.txt: the console's summary with the whole evidence of every requirement not met (verbose)."""
    path.write_text(summary_text(data, files, verbose=True), encoding="utf-8")
    return path
