"""No committed document names a path of the machine that wrote it: the checkout, the team's notes folder, a pytest
temporary folder or a user's cache mean nothing to a reader elsewhere (issue 29: "no absolute path of the generating
machine in any committed document"). Example commands with paths of the reader's choosing (`/tmp/copilot-pg`,
`/opt/gns3-dev`) are not machine paths and are allowed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
DOCUMENTS = ("*.md", "*.yaml", "*.yml", "*.json", "*.html", "*.txt")
MACHINE_PATH = re.compile(r"(?<![\w.-])/work/|pytest-of-|/root/\.cache/|/home/[^/\s]+/\.cache/")


def _committed_documents() -> list[str]:
    listed = subprocess.run(["git", "ls-files", *DOCUMENTS], cwd=REPOSITORY, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.strip()}")
    # Test fixtures are recorded answers, and package locks are npm's: neither is prose of ours.
    return [name for name in listed.stdout.splitlines() if not name.startswith("tests/") and "package-lock" not in name]


def test_no_committed_document_names_a_path_of_the_machine_that_wrote_it():
    documents = _committed_documents()
    assert "README.md" in documents and any(name.startswith("docs/") for name in documents)
    found = [
        f"{name}:{number}: {line.strip()[:160]}"
        for name in documents
        if (REPOSITORY / name).is_file()
        for number, line in enumerate((REPOSITORY / name).read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if MACHINE_PATH.search(line) or str(REPOSITORY) in line
    ]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    "line",
    [
        "(see /work/shared/notes/protocols.md)",
        "File /tmp/pytest-of-root/run-7/x.py",
        "at /root/.cache/y",
        "/home/a/.cache/z",
    ],
)
def test_each_kind_of_machine_path_is_found(line):
    assert MACHINE_PATH.search(line)


@pytest.mark.parametrize(
    "line", ["--dir /tmp/copilot-pg", "python3 -m venv /opt/gns3-dev", "served at '/v1', not '/work'"]
)
def test_a_path_of_the_reader_s_choosing_is_not(line):
    assert not MACHINE_PATH.search(line)
