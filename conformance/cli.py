"""`copilot-conformance`: run the conformance suite against an implementation of the GNS3 Copilot Chat API.

    copilot-conformance run [--target NAME|FILE] [--profile protocol|contract] [--report-dir reports/] [--jobs N]
                            [--only SELECTOR ...] [--seed N] [--keep] [--quiet]
    copilot-conformance targets         the built-in targets
    copilot-conformance requirements    the requirement registry
    copilot-conformance explain ID      one requirement: where it is specified, checked, implemented, proven
    copilot-conformance scripts export DIR [--target T]   the fake LLM's scripts of a target's scenarios
    copilot-conformance clients install the protocols' real clients, for an installed suite (npm, Node 20+)

`python -m conformance` is `copilot-conformance run`. Exit status of `run`: 0 when the target conforms (no
requirement FAIL, STALE, NOT TESTABLE or ERROR), 1 when it does not (or the contract in spec/ has problems), 2
for a bad target file, bad arguments, or real clients that the selected checks need and are not installed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

import gns3_copilot_spec as spec
from conformance.channels.node import PACKAGES, RealClientUnavailable
from conformance.checks import PROFILES, SelectionError, load_all, select
from conformance.errors import ClientsMissing, TargetError
from conformance.harness.engine import require_real_clients
from conformance.harness.environment import DEFAULT_SEED
from conformance.harness.findings import Outcome
from conformance.harness.run_and_report import EXIT_FAILED, EXIT_USAGE, PREFLIGHT_STOPPED, run_and_report
from conformance.harness.target import BUILTIN_TARGETS, load_target


def _stdout() -> Console:
    """The console of the results: wide enough for the tables when the output is a file or a pipe."""
    console = Console(highlight=False)
    if not console.is_terminal:
        console.width = max(console.width, 140)
    return console


class _ProgressReporter:
    """Progress on stderr: a live bar on a terminal, one line per finished check otherwise (CI logs)."""

    def __init__(self, total: int, *, enabled: bool) -> None:
        self.total = total
        self.console = Console(stderr=True, highlight=False)
        self.enabled = enabled
        self.live = enabled and self.console.is_terminal
        self.progress: Progress | None = None
        self.task = None

    def __enter__(self) -> _ProgressReporter:
        if self.live:
            self.progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self.progress.start()
            self.task = self.progress.add_task("starting the fake LLM and the target...", total=self.total)
        elif self.enabled:
            self.console.print(f"running {self.total} checks (starting the fake LLM and the target first)")
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def __call__(self, check_run: Any, done: int, total: int) -> None:
        if not self.enabled:
            return
        problems = sum(1 for f in check_run.findings if f.outcome != Outcome.PASSED)
        flag = f", {problems} not passing" if problems else ""
        if self.progress is not None:
            self.progress.update(self.task, completed=done, total=total, description=f"{check_run.id}{flag}")
        else:
            width = len(str(total))
            self.console.print(f"[{done:>{width}}/{total}] {check_run.id} ({check_run.duration:.1f} s{flag})")


class _SeveralAfterOnly(click.Command):
    """`--only A B --jobs 2` means `--only A --only B --jobs 2`: the values after `--only` up to the next option
    (`run` takes no positional arguments, so nothing else can be meant)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        expanded: list[str] = []
        after_only = values = 0  # after_only: an --only was seen; values: how many followed it so far
        for arg in args:
            if after_only and not arg.startswith("-"):
                expanded += ["--only", arg]
                values += 1
                continue
            if after_only and not values:
                expanded.append("--only")  # an --only without a value: click names the problem
            after_only = arg == "--only"
            values = 0
            if not after_only:
                expanded.append(arg)
        if after_only and not values:
            expanded.append("--only")
        return super().parse_args(ctx, expanded)


def _target_or_exit(target_name: str | None):
    """The target, or exit 2 with what is wrong with its file."""
    try:
        return load_target(target_name)
    except TargetError as exc:
        click.echo(f"copilot-conformance: bad target: {exc}", err=True)
        sys.exit(EXIT_USAGE)


# --- commands -----------------------------------------------------------------------------------------------------


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110},
    epilog="`python -m conformance [OPTIONS]` is `copilot-conformance run [OPTIONS]`.",
)
@click.version_option(spec.contract_version(), message="%(prog)s, contract %(version)s")
def cli() -> None:
    """The conformance suite of the GNS3 Copilot Chat API: tells an implementation which requirements of the
    contract (spec/requirements.yaml) it meets, with evidence for each one it does not."""


@cli.command(cls=_SeveralAfterOnly)
@click.option(
    "--target",
    "target_name",
    metavar="NAME|FILE",
    default=None,
    help="A target file (YAML, see conformance/target.schema.json) or the name of a built-in target "
    "(`copilot-conformance targets`). Default: the built-in reference server.",
)
@click.option(
    "--profile",
    type=click.Choice(PROFILES),
    default=None,
    help="What the run judges: `protocol`, only the rules the protocols themselves make (source: protocol in "
    "spec/requirements.yaml); `contract`, those and the contract's own. The others are reported NOT SELECTED. "
    "Default: contract for a target with the GNS3 chat API, protocol for a channel-only target.",
)
@click.option(
    "--report-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("reports"),
    show_default=True,
    help="Where conformance.json, junit.xml, report.html and summary.txt are written (created if needed; files "
    "of an earlier run are replaced).",
)
@click.option(
    "--jobs", "-j", type=click.IntRange(min=1), default=8, show_default=True, help="Checks run at the same time."
)
@click.option(
    "--only",
    multiple=True,
    metavar="SELECTOR...",
    help="Run only the checks that judge these: requirement ids (TITLE-003), areas (stats) or check ids "
    "(stats.multi_turn), several after one --only or comma-separated, e.g. --only TITLE-003 stats.multi_turn. "
    "The other requirements are reported NOT SELECTED.",
)
@click.option(
    "--seed",
    type=int,
    default=DEFAULT_SEED,
    show_default=True,
    help="Seed of the generated requests (errors.contract_operations); every report records it, and a "
    "reproduction reruns with it.",
)
@click.option(
    "--keep",
    is_flag=True,
    help="Keep what the run made on the target (users, their LLM configurations, projects, sessions), e.g. to "
    "replay a reproduction; by default it is deleted at the end and the reports list what could not be.",
)
@click.option(
    "--quiet",
    "-q",
    is_flag=True,
    help="No progress; print only the failing requirements, the result, the wall time and the reports.",
)
@click.option("--skip-contract-check", is_flag=True, help="Do not validate spec/ before the run.")
def run(
    target_name: str | None,
    profile: str | None,
    report_dir: Path,
    jobs: int,
    only: tuple[str, ...],
    seed: int,
    keep: bool,
    quiet: bool,
    skip_contract_check: bool,
) -> None:
    """Run the suite against a target and write the reports.

    The suite starts its fake LLM (and the target, when the target file says how), provisions users and projects,
    runs every check concurrently and judges every requirement: PASS; FAIL (a MUST or a declared capability);
    WARN (a SHOULD); XFAIL (a failure the target's baseline lists); STALE (listed but no longer failing); NOT
    TESTABLE (the target could not be made to exercise it: fails the run); N/A; EXCLUDED; ERROR (the suite's fault).

    Before any check, preflight proves the target file right about the server (the prefix answers, the users'
    tokens work, turns reach the fake LLM, every declared tool is offered, the slow tool takes its time).

    Exit status: 0 when the run passes, 1 when it does not, 2 for a bad target file (preflight included), bad
    arguments, or checks that need the protocols' real clients where they are not installed (`clients install`).
    """
    from conformance.reports.console import print_summary

    out = _stdout()
    target = _target_or_exit(target_name)
    profile = profile or target.default_profile
    try:
        chosen = select(only, profile)
        require_real_clients(chosen, target)
    except (SelectionError, ClientsMissing) as exc:
        click.echo(f"copilot-conformance: {exc}", err=True)
        sys.exit(EXIT_USAGE)

    if not skip_contract_check:
        from conformance.harness.contract_check import contract_problems

        checked, problems = contract_problems()
        if problems:
            out.print(f"[bold red]the contract in spec/ ({spec.contract_version()}) has problems:[/]")
            for problem in problems:
                out.print(f"  PROBLEM: {problem}", markup=False)
            out.print("no implementation was tested: fix spec/ first")
            sys.exit(EXIT_FAILED)
        if not quiet:
            out.print(f"GNS3 Copilot Chat API contract {spec.contract_version()}, profile {profile}", markup=False)
            for line in checked:
                out.print(f"  checked: {line}", markup=False)

    try:
        with _ProgressReporter(len(chosen), enabled=not quiet) as progress:
            reported = run_and_report(
                target,
                report_dir,
                jobs=jobs,
                only=list(only) or None,
                seed=seed,
                keep=keep,
                on_check_done=progress,
                profile=profile,
            )
    except TargetError as exc:  # preflight: the target file is wrong about the server; nothing was judged
        click.echo(f"copilot-conformance: {PREFLIGHT_STOPPED}: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    if reported.error:
        click.echo(f"copilot-conformance: {reported.error}", err=True)
    print_summary(reported.data, reported.files, console=out, brief=quiet)
    sys.exit(reported.status)


@cli.command()
def targets() -> None:
    """List the built-in targets (use the name with `run --target`)."""
    table = Table(box=None, header_style="bold")
    for column in ("name", "target", "reached by"):
        table.add_column(column, no_wrap=True)
    for column in ("channels", "capabilities", "description"):
        table.add_column(column, overflow="fold")
    for path in sorted(BUILTIN_TARGETS.glob("*.yaml")):
        try:
            target = load_target(str(path))
        except TargetError as exc:
            table.add_row(path.stem, "(invalid)", "", "", "", str(exc))
            continue
        how = "started by the suite" if "start" in target.data else target.data.get("base_url", "")
        channels = ", ".join(target.channels)
        capabilities = ", ".join(sorted(target.declarations.get("capabilities", []))) or "-"
        table.add_row(path.stem, target.name, how, channels, capabilities, target.data.get("description", ""))
    _stdout().print(table)


@cli.command()
@click.option("--section", help="Only the requirements of this section (case-insensitive).")
@click.option("--level", type=click.Choice(["MUST", "SHOULD", "MAY"]), help="Only the requirements of this level.")
@click.option("--text/--no-text", "show_text", default=False, help="Show each requirement's text.")
def requirements(section: str | None, level: str | None, show_text: bool) -> None:
    """The requirement registry (spec/requirements.yaml): id, level, section, capability, and the checks that
    verify each requirement (a check not written yet is marked `missing`)."""
    existing = set(load_all())
    table = Table(box=None, header_style="bold", title=f"contract {spec.contract_version()}", title_justify="left")
    for column in ("id", "level", "section", "capability"):
        table.add_column(column, no_wrap=True)
    table.add_column("checks", overflow="fold")
    if show_text:
        table.add_column("text", overflow="fold")
    shown = 0
    for record in spec.load_requirements()["requirements"]:
        if section and record["section"].lower() != section.lower():
            continue
        if level and record["level"] != level:
            continue
        shown += 1
        if "excluded" in record:
            checks = f"excluded: {record['excluded']}"
        else:
            checks = ", ".join(c if c in existing else f"{c} (missing)" for c in record.get("checks", []))
        row = [record["id"], record["level"], record["section"], record.get("capability") or "", checks]
        table.add_row(*row, *([record["text"]] if show_text else []))
    _stdout().print(table)
    click.echo(f"{shown} requirements")


@cli.command()
@click.argument("requirement_id", metavar="ID")
def explain(requirement_id: str) -> None:
    """Everything about one requirement: its level and text, where spec/ specifies it, the checks that judge it,
    where the reference server implements it and which tests verify that, and the mutants of tests/quality/ that
    prove its checks fail (each as path:line). An unknown id exits 2 and names the closest ones."""
    from conformance.explain import UnknownRequirement, explain, render

    try:
        explanation = explain(requirement_id)
    except UnknownRequirement as exc:
        click.echo(f"copilot-conformance: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    click.echo(render(explanation))


@cli.group()
def clients() -> None:
    """The protocols' real JavaScript clients (ai, @ag-ui/client) that the UI stream and AG-UI checks read answers
    with: a checkout has them after `npm ci`; an installed suite installs them here."""


@clients.command("install")
def clients_install() -> None:
    """Install the pinned clients (the repository's versions) into the user's cache with `npm ci` (Node 20+)."""
    from conformance.channels.client_install import install

    try:
        where = install()
    except RealClientUnavailable as exc:
        click.echo(f"copilot-conformance: {exc}", err=True)
        sys.exit(EXIT_FAILED)
    click.echo(f"installed {', '.join(PACKAGES)} in {where}")


@cli.group()
def scripts() -> None:
    """The fake LLM's scripts of the suite's scenarios (what a reproduction needs the fake LLM to serve)."""


@scripts.command("export")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--target",
    "target_name",
    metavar="NAME|FILE",
    default=None,
    help="The target whose tools and heartbeat interval the scripts are written for (default: the reference server).",
)
def export_scripts(folder: Path, target_name: str | None) -> None:
    """Write the scripts into FOLDER, one YAML file each, as a run against this target writes them; then
    `python -m fake_llm serve --scripts FOLDER --port P` serves them (P: the port the users' LLM configuration
    names, shown in the report's reproductions)."""
    from conformance.harness.provisioning import target_scripts

    target = _target_or_exit(target_name)
    try:
        written = target_scripts(target, folder)
    except OSError as exc:
        click.echo(f"copilot-conformance: cannot write the scripts to {folder}: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    click.echo(f"wrote {len(written)} scripts for target {target.name} to {folder}")


def main(argv: list[str] | None = None, prog_name: str = "copilot-conformance") -> None:
    cli.main(args=argv, prog_name=prog_name)


if __name__ == "__main__":
    main()
