"""`python3 tasks.py peers` (= `python -m peers.run`): the suite against each peer, from a clean clone.

For each peer (`--peer`, default all of peers.PEERS):

1. install it from its pin list into .cache/peers/<peer>/venv (peers/install.py; reused while the list is unchanged);
2. re-run itself inside `unshare -rn` (a user and network namespace whose only interface is loopback, brought up
   with `ip link set lo up`), so that neither the peer nor the fake LLM can reach anything but 127.0.0.1;
3. run the suite with the peer's target file peers/targets/<target>.yaml, judged against its baseline
   peers/baselines/<target>.yaml (the suite starts the fake LLM and the peer, and stops both by pid);
4. write the reports to reports/<target>/ and the findings document to docs/<target>.md.

`--profile contract` (the default here, for the committed documents) judges the protocols' own rules and the
contract's additions and reports them apart; `--profile protocol` judges only the protocols' rules, which is what a
peer owes its protocol (a peer is a channel-only target, whose own default is `protocol`).

`--matrix` runs every peer so, then writes docs/implementations.md (every peer side by side, rule by rule, in both
voices) and its verdicts docs/implementations.json (peers/matrix.py); `--matrix --doc-only` runs nothing and only
rebuilds them from the reports already there, a peer without a report keeping its committed verdicts.

The exit status is 0 when every peer's run matches its baseline (no new failure, no stale entry).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from conformance.harness.netns import inside, rerun_inside

from . import PEERS, REPO, get_peer
from .install import ensure

MODULE = "peers.run"  # what re-runs inside the namespace


def default_report_dir(target: str) -> Path:
    return REPO / "reports" / target


def default_doc(target: str) -> Path:
    return REPO / "docs" / f"{target}.md"


def run_peer(name: str, report_dir: Path, doc: Path, jobs: int, profile: str) -> int:
    """Install (cached), then run the suite against one peer inside `unshare -rn`; the run's exit code."""
    started = time.monotonic()
    ensure(name)
    args = ["--peer", name, "--report-dir", str(report_dir), "--doc", str(doc), "--jobs", str(jobs)]
    args += ["--profile", profile]
    why = "a peer runs only inside one, so that nothing it starts can reach beyond loopback"
    code = rerun_inside(MODULE, args, why=why)
    click.echo(f"peer {name}: the run took {time.monotonic() - started:.0f} s (exit {code})")
    return code


@click.command()
@click.option(
    "--peer",
    "names",
    multiple=True,
    type=click.Choice(sorted(PEERS)),
    help="A peer to run (repeatable).  [default: every peer]",
)
@click.option("--report-dir", type=click.Path(path_type=Path), help="With one --peer: where its reports go.")
@click.option(
    "--doc",
    type=click.Path(path_type=Path),
    help="With one --peer: its findings document. With --matrix: the page (its .json beside it).",
)
@click.option("--jobs", default=6, show_default=True, help="Checks run at the same time.")
@click.option(
    "--profile",
    type=click.Choice(["contract", "protocol"]),
    default="contract",
    show_default=True,
    help="contract: the protocols' rules and the contract's additions, reported apart; protocol: the protocols' only.",
)
@click.option(
    "--matrix",
    is_flag=True,
    help="Run every peer, then write docs/implementations.md (all peers side by side) and docs/implementations.json.",
)
@click.option(
    "--doc-only",
    is_flag=True,
    help="With --matrix: run nothing, only rebuild docs/implementations.md and .json from reports/<target>/"
    "conformance.json; a peer without a report keeps its verdicts of the committed docs/implementations.json.",
)
def main(
    names: tuple[str, ...],
    report_dir: Path | None,
    doc: Path | None,
    jobs: int,
    profile: str,
    matrix: bool,
    doc_only: bool,
) -> None:
    """Run the conformance suite against each peer in a loopback-only network namespace."""
    if doc_only and not matrix:
        raise click.UsageError("--doc-only goes with --matrix")
    if matrix and (names or report_dir or profile != "contract"):
        raise click.UsageError("--matrix runs every peer into its default reports, with the contract profile")
    page, doc = (doc, None) if matrix else (None, doc)  # with --matrix, --doc names the page
    if matrix and doc_only:
        sys.exit(_write_matrix(page))
    names = names or tuple(PEERS)
    if (report_dir or doc) and len(names) != 1:
        raise click.UsageError("--report-dir and --doc go with exactly one --peer")
    if inside(MODULE):
        from conformance.harness.run_and_report import run_and_echo

        target_file = str(get_peer(names[0]).target_file)
        code = run_and_echo(target_file, report_dir.resolve(), doc.resolve(), jobs=jobs, only=None, profile=profile)
        sys.exit(code)
    codes = {}
    for name in names:
        target = get_peer(name).target
        codes[name] = run_peer(
            name,
            (report_dir or default_report_dir(target)).resolve(),
            (doc or default_doc(target)).resolve(),
            jobs,
            profile,
        )
    failed = [name for name, code in codes.items() if code != 0]
    written = _write_matrix(page) if matrix else 0
    if failed:
        click.echo(f"peers whose run did not match its baseline: {', '.join(failed)}", err=True)
    sys.exit(1 if failed or written else 0)


def _write_matrix(doc: Path | None) -> int:
    """The page (`doc`, default docs/implementations.md) and its .json from the reports (peers/matrix.py); 1 when
    there is nothing to build it from."""
    from .matrix import MATRIX_DOC, write_matrix

    out = (doc or MATRIX_DOC).resolve()
    try:
        kept = write_matrix(REPO / "reports", out)
    except FileNotFoundError as exc:  # no report, and no committed verdicts either
        click.echo(f"{exc}: run `python3 tasks.py peers --matrix` (or --peer NAME) first", err=True)
        return 1
    if kept:
        click.echo(
            f"no report of {', '.join(kept)}: their verdicts are those of the committed docs/implementations.json"
        )
    click.echo(f"wrote {out} and {out.with_suffix('.json').name}")
    return 0


if __name__ == "__main__":
    main()
