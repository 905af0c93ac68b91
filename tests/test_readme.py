"""The README stays true: its Python examples run and print what they claim, its commands exist."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_python_examples_run_and_print_what_their_comments_say():
    blocks = python_blocks()
    assert blocks
    for block in blocks:
        output = io.StringIO()
        with contextlib.redirect_stdout(output):
            exec(compile(block, "README.md", "exec"), {})
        expected = [m.group(1) for m in re.finditer(r"^print\(.*\)  # (.+)$", block, flags=re.M)]
        assert output.getvalue().splitlines() == expected


def test_the_two_commands_exist_and_ci_runs_the_test_command():
    text = README.read_text()
    assert "python3 tasks.py conformance" in text and "python3 tasks.py test" in text
    ci = (README.parent / ".ci" / "run").read_text()
    assert "python3 tasks.py test" in ci
