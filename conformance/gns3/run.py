"""`python3 tasks.py gns3` (= `python -m conformance.gns3.run`): the whole GNS3 run, from a clean clone.

For one release V (`--version`, default the newest supported; `conformance.gns3.VERSIONS` lists them):

1. install gns3-server from the pinned list conformance/gns3/requirements-<V>.txt into .cache/gns3-<V>/venv
   (reused while the list is unchanged; `--resolve-pins` re-resolves the list, see pins.py);
2. re-run itself inside `unshare -rn` (a user and network namespace whose only interface is loopback, brought
   up with `ip link set lo up`), so neither server can reach anything but 127.0.0.1;
3. run the suite with conformance/targets/gns3-<V>.yaml (the suite starts the fake LLM and the server,
   provisions users, LLM configurations and projects through GNS3's REST API, and stops both by pid);
4. write the reports to reports/gns3-<V>/ and the findings document to docs/gns3-<V>.md.

`--matrix` does that for every supported release, one after the other, each in its own namespace, then writes
docs/gns3-versions.md from the reports (matrix.py); `--matrix --doc-only` only rebuilds that document.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import time
from pathlib import Path

import click

from conformance.gns3 import REPO, VERSION, VERSIONS, check_version, requirements_file, target_name, venv_dir
from conformance.harness.install_lock import installing
from conformance.harness.netns import inside, rerun_inside
from conformance.harness.virtualenvs import create_with

MODULE = "conformance.gns3.run"  # what re-runs inside the namespace


def ensure_gns3_venv(version: str = VERSION) -> Path:
    """.cache/gns3-<V>/venv with exactly the release's pin list; reinstalled only when the list changed (by one
    process at a time)."""
    env_dir = venv_dir(check_version(version))
    with installing(env_dir):
        return _ensure_gns3_venv(version, env_dir)


def _ensure_gns3_venv(version: str, env_dir: Path) -> Path:
    requirements = requirements_file(version)
    stamp = env_dir / ".installed-from"
    fingerprint = hashlib.sha256(requirements.read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == fingerprint and (env_dir / "bin" / "gns3server").exists():
        return env_dir
    shutil.rmtree(env_dir, ignore_errors=True)
    started = time.monotonic()
    click.echo(f"installing gns3-server {version} into {env_dir.relative_to(REPO)} (about a minute, once)...", err=True)
    create_with(env_dir, requirements, check=True)  # uv beside this Python, or pip
    stamp.write_text(fingerprint)
    click.echo(f"installed in {time.monotonic() - started:.0f} s", err=True)
    return env_dir


def default_report_dir(version: str) -> Path:
    return REPO / "reports" / target_name(version)


def default_doc(version: str) -> Path:
    return REPO / "docs" / f"{target_name(version)}.md"


def run_version(version: str, report_dir: Path, doc: Path, jobs: int, only: tuple[str, ...] = ()) -> int:
    """Install (cached), then run the suite against one release inside `unshare -rn`; the run's exit code."""
    started = time.monotonic()
    ensure_gns3_venv(version)
    args = ["--version", version, "--report-dir", str(report_dir), "--doc", str(doc), "--jobs", str(jobs)]
    args += [arg for selector in only for arg in ("--only", selector)]
    why = "the GNS3 run needs one, so that nothing it starts can reach beyond loopback"
    code = rerun_inside(MODULE, args, why=why)
    click.echo(f"GNS3 {version} run took {time.monotonic() - started:.0f} s (exit {code})")
    return code


def _version(_ctx, _param, value: str) -> str:
    try:
        return check_version(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


@click.command()
@click.option(
    "--version",
    default=VERSION,
    show_default=True,
    callback=_version,
    help=f"The gns3-server release to run: one of {', '.join(VERSIONS)}.",
)
@click.option("--matrix", is_flag=True, help="Run every supported release, then write docs/gns3-versions.md.")
@click.option(
    "--doc-only",
    is_flag=True,
    help="With --matrix: only rebuild docs/gns3-versions.md from the reports in reports/gns3-*/ (no server runs).",
)
@click.option(
    "--resolve-pins",
    is_flag=True,
    help="Re-resolve conformance/gns3/requirements-<version>.txt in a throw-away venv (pip freeze), then stop.",
)
@click.option(
    "--report-dir",
    type=click.Path(path_type=Path),
    help="Where the reports go.  [default: reports/gns3-<version>]",
)
@click.option(
    "--doc",
    type=click.Path(path_type=Path),
    help="The findings document generated from conformance.json.  [default: docs/gns3-<version>.md]",
)
@click.option("--jobs", default=6, show_default=True, help="Checks run at the same time.")
@click.option(
    "--only",
    multiple=True,
    help="Run only the checks that judge these (requirement ids, areas or check ids, as `copilot-conformance run "
    "--only`); repeat the option for several. Not with --matrix.",
)
def main(
    version: str,
    matrix: bool,
    doc_only: bool,
    resolve_pins: bool,
    report_dir: Path | None,
    doc: Path | None,
    jobs: int,
    only: tuple[str, ...],
) -> None:
    """Run the conformance suite against a gns3-server 3.1 pre-release in a loopback-only network namespace."""
    if inside(MODULE):
        from conformance.harness.run_and_report import run_and_echo

        sys.exit(
            run_and_echo(target_name(version), report_dir.resolve(), doc.resolve(), jobs=jobs, only=list(only) or None)
        )
    if resolve_pins:
        from conformance.gns3.pins import resolve_pins as resolve

        resolve(version)
        return
    if doc_only and not matrix:
        raise click.UsageError("--doc-only goes with --matrix")
    if only:
        from conformance.checks import SelectionError, select

        try:
            select(list(only))  # a wrong selector is the caller's error, before anything is installed or started
        except SelectionError as exc:
            raise click.UsageError(str(exc)) from exc
    if matrix:
        if only:
            raise click.UsageError("--only goes with one --version, not with --matrix (the matrix is every check)")
        if report_dir or doc:
            raise click.UsageError("--matrix writes every release's default reports and documents")
        sys.exit(_matrix(jobs, doc_only))
    sys.exit(
        run_version(
            version,
            (report_dir or default_report_dir(version)).resolve(),
            (doc or default_doc(version)).resolve(),
            jobs,
            only,
        )
    )


def _matrix(jobs: int, doc_only: bool) -> int:
    from conformance.gns3.matrix import MATRIX_DOC, write_matrix

    codes: dict[str, int] = {}
    if not doc_only:
        for version in VERSIONS:
            codes[version] = run_version(version, default_report_dir(version), default_doc(version), jobs)
    try:
        out = write_matrix(REPO / "reports", MATRIX_DOC)
    except FileNotFoundError as exc:  # reports/ is not committed: a fresh clone has none until a run made them
        click.echo(f"{exc}: run `python3 tasks.py gns3 --matrix` (or --version V) first", err=True)
        return 1
    click.echo(f"wrote {out}")
    failed = [v for v, code in codes.items() if code != 0]
    if failed:
        click.echo(f"releases whose run did not pass against its baseline: {', '.join(failed)}", err=True)
    return 1 if failed else 0


if __name__ == "__main__":
    main()
