"""The task runner: pytest's "no tests ran" never passes silently; the test command is one pytest over every test
with workers, its quick loop leaves out only the slow modules, its load is stopped at its end; unknown commands
are refused."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import tasks
from tests.readme import readme_command

ROOT = Path(__file__).resolve().parent.parent


def test_no_tests_collected_is_a_failure(monkeypatch, capsys):
    monkeypatch.setattr(tasks, "ensure_venv", lambda: "python")
    monkeypatch.setattr(tasks, "_run", lambda *args, **kwargs: tasks.PYTEST_NO_TESTS)
    assert tasks.cmd_test(["-k", "nothing"]) == 1
    assert "no tests" in capsys.readouterr().err


def test_test_failures_pass_through(monkeypatch):
    monkeypatch.setattr(tasks, "ensure_venv", lambda: "python")
    monkeypatch.setattr(tasks, "_run", lambda *args, **kwargs: 1)
    assert tasks.cmd_test(["-x"]) == 1
    monkeypatch.setattr(tasks, "_run", lambda *args, **kwargs: 0)
    assert tasks.cmd_test(["-x"]) == 0


def test_the_whole_command_is_one_pytest_over_every_test_with_workers(monkeypatch):
    """One pytest whose closing line totals every worker's tests; its `--quick` and `--under-load` forms too."""
    calls: list[tuple[str, ...]] = []
    monkeypatch.setattr(tasks, "_run", lambda *args, **kwargs: calls.append(tuple(map(str, args))) or 0)
    for step in ("ensure_venv", "ensure_node_modules", "ensure_python_sdk", "ensure_playground", "ensure_chromium"):
        monkeypatch.setattr(tasks, step, lambda *args: "python")
    started: list[subprocess.Popen] = []
    monkeypatch.setattr(tasks, "LOAD_PROCESSES", 1)
    original_enter = tasks._Load.__enter__

    def enter(self):
        loaded = original_enter(self)
        started.extend(self.processes)
        assert all(p.poll() is None for p in self.processes)  # running beside the tests
        return loaded

    monkeypatch.setattr(tasks._Load, "__enter__", enter)
    installs: list[tuple[str, ...]] = []  # set-up in the background: the GNS3 releases and peers
    background = tasks._background

    def spy(*args, log):
        installs.append(tuple(map(str, args)))
        return background(sys.executable, "-c", "pass", log=log)

    monkeypatch.setattr(tasks, "_background", spy)
    assert tasks.cmd_test([]) == 0
    assert tasks.main(readme_command("python3 tasks.py test --quick")[2:]) == 0
    assert tasks.main(readme_command("python3 tasks.py test --under-load")[2:]) == 0
    assert installs == [("python", "-m", "tests.third_party")] * 2  # --quick installs none
    full, quick, loaded = calls
    assert full[-1] == "tests" and "-n" in full and "loadgroup" in full and "not slow" not in full
    assert "--no-loadscope-reorder" in full  # the units in the collection's order, longest first
    # only the plugins the tests use: no installed plugin's modules are rewritten in every process (tasks.PLUGINS)
    assert full[full.index("--disable-plugin-autoload") + 1 :].count("-p") == len(tasks._USED_PLUGINS)
    assert quick[-1] == "tests" and "not slow" in quick
    assert loaded == full and len(started) == 1
    assert started[0].returncode is not None  # stopped (and reaped) when the tests ended


def collected(*args: str) -> tuple[list[str], int]:
    """The tests a `pytest --collect-only` with `args` selects, and how many it collected before deselecting."""
    listing = subprocess.run(
        # (without syrupy, which calls a run that uses none of its snapshots a failure)
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:syrupy", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert listing.returncode == 0, listing.stdout[-2000:] + listing.stderr[-2000:]
    counts = re.search(r"^(?:\d+/)?(\d+) tests? collected", listing.stdout, flags=re.M)
    assert counts, listing.stdout[-2000:]
    return [line for line in listing.stdout.splitlines() if "::" in line], int(counts.group(1))


@pytest.mark.slow  # whole suite runs or servers: left out of --quick
def test_the_quick_loop_has_every_package_and_leaves_out_only_slow_modules():
    quick, every = collected("tests", "-m", "not slow")  # one collection: `every` counts the deselected too
    assert every > 1700 and 0 < len(quick) < every
    folders = {path.parent.name for path in (ROOT / "tests").glob("*/test_*.py")}
    for folder in folders - {"quality", "gns3", "peers", "sdk", "playground"}:  # runs of whole servers, all slow
        assert any(test.startswith(f"tests/{folder}/") for test in quick), f"--quick runs nothing of tests/{folder}"


def test_unknown_command_prints_usage(capsys):
    assert tasks.main(["frobnicate"]) == 2
    assert "python3 tasks.py test" in capsys.readouterr().out
