"""`python3 tasks.py gns3` (= `python -m conformance.gns3.run`): the whole GNS3 run, from a clean clone.

1. install gns3-server[ai-features]==3.1.0a7 from the pinned list into .cache/gns3-3.1.0a7/venv (reused while
   the list is unchanged);
2. re-run itself inside `unshare -rn` (a user and network namespace whose only interface is loopback, brought
   up with `ip link set lo up`), so neither server can reach anything but 127.0.0.1;
3. run the suite with conformance/targets/gns3-3.1.0a7.yaml (the suite starts the fake LLM and the server,
   provisions users, LLM configurations and projects through GNS3's REST API, and stops both by pid);
4. write the reports to reports/gns3-3.1.0a7/ and the findings document to docs/gns3-3.1.0a7.md.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path

import click

from . import VERSION

REPO = Path(__file__).resolve().parents[2]
REQUIREMENTS = Path(__file__).with_name(f"requirements-{VERSION}.txt")
CACHE = REPO / ".cache" / f"gns3-{VERSION}"
VENV = CACHE / "venv"
STAMP = VENV / ".installed-from"
INSIDE = "COPILOT_CONFORMANCE_NETNS"


def ensure_gns3_venv() -> Path:
    fingerprint = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == fingerprint and (VENV / "bin" / "gns3server").exists():
        return VENV
    shutil.rmtree(VENV, ignore_errors=True)
    started = time.monotonic()
    click.echo(f"installing gns3-server {VERSION} into {VENV.relative_to(REPO)} (about a minute, once)...", err=True)
    venv.EnvBuilder(with_pip=True).create(VENV)
    subprocess.run(
        [
            str(VENV / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
            str(REQUIREMENTS),
        ],
        check=True,
    )
    STAMP.write_text(fingerprint)
    click.echo(f"installed in {time.monotonic() - started:.0f} s", err=True)
    return VENV


def network_namespace_available() -> bool:
    if not shutil.which("unshare") or not shutil.which("ip"):
        return False
    probe = subprocess.run(["unshare", "-rn", "ip", "link", "set", "lo", "up"], capture_output=True)
    return probe.returncode == 0


def _inside(report_dir: Path, doc: Path, jobs: int) -> int:
    from conformance.engine import run_suite
    from conformance.findings_doc import write_findings
    from conformance.reports import write_reports
    from conformance.reports.console import summary_text
    from conformance.reports.model import report_data
    from conformance.target import load_target

    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    target = load_target(f"gns3-{VERSION}")
    result = run_suite(target, jobs=jobs)
    report_dir.mkdir(parents=True, exist_ok=True)
    paths = write_reports(result, report_dir)
    click.echo(summary_text(report_data(result)))
    write_findings(report_dir / "conformance.json", doc)
    for path in [*paths, doc]:
        click.echo(f"wrote {path}")
    return 0 if result.passed else 1


@click.command()
@click.option(
    "--report-dir", type=click.Path(path_type=Path), default=REPO / "reports" / f"gns3-{VERSION}", show_default=True
)
@click.option(
    "--doc",
    type=click.Path(path_type=Path),
    default=REPO / "docs" / f"gns3-{VERSION}.md",
    show_default=True,
    help="The findings document generated from conformance.json.",
)
@click.option("--jobs", default=6, show_default=True, help="Checks run at the same time.")
def main(report_dir: Path, doc: Path, jobs: int) -> None:
    """Run the conformance suite against gns3-server 3.1.0a7 in a loopback-only network namespace."""
    if os.environ.get(INSIDE) == "1":
        sys.exit(_inside(report_dir.resolve(), doc.resolve(), jobs))
    started = time.monotonic()
    ensure_gns3_venv()
    if not network_namespace_available():
        sys.exit(
            "cannot create a network namespace (`unshare -rn` with `ip`): the GNS3 run needs one, so that "
            "nothing it starts can reach beyond loopback"
        )
    env = {**os.environ, INSIDE: "1"}
    command = [
        "unshare",
        "-rn",
        sys.executable,
        "-m",
        "conformance.gns3.run",
        "--report-dir",
        str(report_dir),
        "--doc",
        str(doc),
        "--jobs",
        str(jobs),
    ]
    code = subprocess.run(command, env=env, cwd=REPO).returncode
    click.echo(f"GNS3 run took {time.monotonic() - started:.0f} s (exit {code})")
    sys.exit(code)


if __name__ == "__main__":
    main()
