"""The task runner: pytest's "no tests ran" never passes silently, and unknown commands are refused."""

from __future__ import annotations

import tasks


def test_no_tests_collected_is_a_failure(monkeypatch, capsys):
    monkeypatch.setattr(tasks, "ensure_venv", lambda: "python")
    monkeypatch.setattr(tasks, "_run", lambda *args, **kwargs: tasks.PYTEST_NO_TESTS)
    assert tasks.cmd_test([]) == 1
    assert "no tests" in capsys.readouterr().err


def test_test_failures_pass_through(monkeypatch):
    monkeypatch.setattr(tasks, "ensure_venv", lambda: "python")
    monkeypatch.setattr(tasks, "_run", lambda *args, **kwargs: 1)
    assert tasks.cmd_test([]) == 1
    monkeypatch.setattr(tasks, "_run", lambda *args, **kwargs: 0)
    assert tasks.cmd_test([]) == 0


def test_unknown_command_prints_usage(capsys):
    assert tasks.main(["frobnicate"]) == 2
    assert "python3 tasks.py test" in capsys.readouterr().out
