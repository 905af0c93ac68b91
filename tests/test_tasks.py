"""The task runner: pytest's "no tests ran" never passes silently, in no group of the test command; the groups
together run every test exactly once; unknown commands are refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import tasks

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


def test_a_group_that_collects_nothing_or_fails_fails_the_whole_command(tmp_path, capsys):
    (tmp_path / "test_passes.py").write_text("def test_one():\n    pass\n")
    (tmp_path / "test_fails.py").write_text("def test_one():\n    assert False\n")
    (tmp_path / "empty").mkdir()
    python = Path(sys.executable)
    passing = {"a": [str(tmp_path / "test_passes.py")], "b": [str(tmp_path / "test_passes.py")]}
    assert tasks._run_groups(python, passing) == 0
    assert tasks._run_groups(python, {"a": passing["a"], "none": [str(tmp_path / "empty")]}) == 1
    assert "no tests" in capsys.readouterr().err
    assert tasks._run_groups(python, {"a": passing["a"], "red": [str(tmp_path / "test_fails.py")]}) == 1
    out = capsys.readouterr().out
    assert "[red] " in out and "test group red: pytest exit 1" in out  # every line says its group


def collected(*args: str) -> list[str]:
    listing = subprocess.run(
        # (without syrupy, which calls a run that uses none of its snapshots a failure)
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:syrupy", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert listing.returncode == 0, listing.stdout[-2000:] + listing.stderr[-2000:]
    return [line for line in listing.stdout.splitlines() if "::" in line]


def test_the_groups_run_every_test_once():
    every = collected("tests")
    grouped = [test for args in tasks.TEST_GROUPS.values() for test in collected(*args)]
    assert sorted(grouped) == sorted(every) and len(every) > 800


def test_unknown_command_prints_usage(capsys):
    assert tasks.main(["frobnicate"]) == 2
    assert "python3 tasks.py test" in capsys.readouterr().out
