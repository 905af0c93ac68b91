"""A failing requirement's report entry reproduces it: its rerun command (the run's seed, only its checks) fails it
again, and its standalone replay (the exported scripts served by `python -m fake_llm serve`, the user's token,
the exchange as curl) shows the failure again against the server, without the suite."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conformance.harness.processes import free_port, start_module
from conformance.harness.target import load_target
from tests.quality.fork_server import forked
from tests.readme import readme_command
from tests.reference_server.conftest import events_of

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MUTANT = "missing-done"  # tests/quality/mutants.py: streams end without `done` (STREAM-ORDER-003)


def suite(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "copilot-conformance"), *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow  # whole suite runs or servers: left out of --quick
def test_a_failing_requirement_is_rerun_by_its_command_and_replayed_by_its_curl(tmp_path):
    server, base_url = start_module(
        "mutant server",
        [
            *forked("tests.quality.mutant_server"),
            MUTANT,
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--data-dir",
            str(tmp_path / "data"),
            "--heartbeat-interval",
            "1",
            "--log-level",
            "warning",
        ],
        ready_path="/v3/version",
        env={"PYTHONPATH": str(ROOT)},
    )
    try:
        data = load_target(None).data
        del data["start"]
        fake_port = free_port()
        data.update(name="missing-done-over-http", base_url=base_url, fake_llm={"port": fake_port})
        data["declarations"]["database"]["project_dir"] = str(tmp_path / "data" / "projects" / "{project_id}")
        target = tmp_path / "my-server.yaml"
        target.write_text(yaml.safe_dump(data), encoding="utf-8")

        command = readme_command(".venv/bin/copilot-conformance run --target my-server.yaml")
        first = suite(
            *command[1:],
            "--only",
            "STREAM-ORDER-003",
            "--keep",
            "-q",
            "--report-dir",
            "first",
            cwd=tmp_path,
        )
        assert first.returncode == 1, first.stdout + first.stderr
        report = json.loads((tmp_path / "first" / "conformance.json").read_text())
        entry = next(r for r in report["requirements"] if r["id"] == "STREAM-ORDER-003")
        assert entry["verdict"] == "FAIL"
        assert report["cleanup"]["kept"] is True and report["cleanup"]["removed"]["user"] == 4  # with the stranger

        # (a) the rerun command: the same checks with the same seed fail it again
        rerun = entry["reproduce"]["rerun"]
        assert rerun == f"copilot-conformance run --target {target} --only STREAM-ORDER-003 --seed {report['seed']}"
        again = suite(*shlex.split(rerun)[1:], "-q", "--report-dir", "again", cwd=tmp_path)
        assert again.returncode == 1, again.stdout + again.stderr
        rerun_report = json.loads((tmp_path / "again" / "conformance.json").read_text())
        assert next(r for r in rerun_report["requirements"] if r["id"] == "STREAM-ORDER-003")["verdict"] == "FAIL"
        assert {c["id"] for c in rerun_report["checks"]} == {c["id"] for c in report["checks"]}

        # (b) the standalone replay, as the report gives it, in a shell that has the installed commands
        lines = entry["reproduce"]["standalone"]
        assert any(line.startswith("TOKEN=$(curl") for line in lines), lines
        replay = tmp_path / "replay"
        replay.mkdir()
        shell = subprocess.run(
            ["bash", "-c", "set -e\n" + "\n".join(lines)],
            cwd=replay,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "NO_PROXY": "127.0.0.1"},
        )
        assert shell.returncode == 0, shell.stdout[-2000:] + shell.stderr[-2000:]
        assert (replay / "cs-scripts" / "cs-plain.yaml").is_file()
        events = events_of(shell.stdout)
        types = [event["type"] for event in events]
        assert "content" in types, shell.stdout[-2000:]  # the fake LLM served the scripted answer again
        assert "done" not in types  # and the stream ends without `done`, as the finding says
    finally:
        server.stop(5)
