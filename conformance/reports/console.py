"""The summary printed at the end of a run (rich), also written as summary.txt (the same text, no colour)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from conformance.harness.findings import Verdict
from conformance.reports.model import DISPLAY, SEVERITY, count, sections, verdict_class

STYLES = {"pass": "bold green", "fail": "bold red", "warn": "bold yellow", "xfail": "bold steel_blue", "neutral": "dim"}
MESSAGE_LIMIT = 240


def _style(verdict: str) -> str:
    return STYLES[verdict_class(verdict)]


def _one_line(text: str, limit: int = MESSAGE_LIMIT) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def section_table(data: dict[str, Any]) -> Table:
    totals = count(data["requirements"])
    columns = [v for v in DISPLAY if totals[v] or v in (Verdict.PASS, Verdict.FAIL)]
    table = Table(title="Requirements per section", box=box.SIMPLE_HEAD, title_justify="left", show_footer=True)
    table.add_column("Section", footer="Total")
    table.add_column("all", justify="right", footer=str(len(data["requirements"])))
    for verdict in columns:
        table.add_column(verdict, justify="right", header_style=_style(verdict), footer=str(totals[verdict]))
    for name, entries in sections(data):
        counts = count(entries)
        table.add_row(
            Text(name),
            str(len(entries)),
            *(Text(str(counts[v]), style=_style(v)) if counts[v] else Text("-", style="dim") for v in columns),
        )
    return table


def not_passing_table(data: dict[str, Any]) -> Table | None:
    entries = [e for e in data["requirements"] if e["verdict"] not in (Verdict.PASS, Verdict.NOT_SELECTED)]
    if not entries:
        return None
    entries.sort(key=lambda e: SEVERITY.index(e["verdict"]) if e["verdict"] in SEVERITY else 0)
    table = Table(title="Not passing", box=box.SIMPLE_HEAD, title_justify="left")
    table.add_column("Requirement", no_wrap=True)
    table.add_column("Level", no_wrap=True)
    table.add_column("Verdict", no_wrap=True)
    table.add_column("Why", overflow="fold")
    for entry in entries:
        table.add_row(
            entry["id"],
            entry["level"],
            Text(entry["verdict"], style=_style(entry["verdict"])),
            Text(_one_line(entry["message"])),  # Text: messages hold `[[fake-llm:...]]`, not rich markup
        )
    return table


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
    """The whole summary; `brief` keeps only the result line, the wall time and the report paths."""
    if brief:
        return footer(data, files)
    parts: list[RenderableType] = [header(data), Text(""), section_table(data)]
    table = not_passing_table(data)
    if table is not None:
        parts.append(table)
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
    parts.append(footer(data, files))
    return Group(*parts)


def summary_text(
    data: dict[str, Any], files: dict[str, str] | None = None, *, width: int = 140, brief: bool = False
) -> str:
    """The summary as plain text (summary.txt; `brief`: the pytest terminal summary)."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, force_terminal=False, highlight=False)
    console.print(summary(data, files, brief=brief))
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"


def print_summary(
    data: dict[str, Any], files: dict[str, str] | None = None, *, console: Console | None = None, brief: bool = False
) -> None:
    console = console or Console(highlight=False)
    if not console.is_terminal:
        console.width = max(console.width, 140)
    console.print(summary(data, files, brief=brief))


def write(data: dict[str, Any], path: Path, files: dict[str, str] | None = None) -> Path:
    path.write_text(summary_text(data, files), encoding="utf-8")
    return path
