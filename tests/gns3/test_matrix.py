"""docs/gns3-versions.md is built from per-release conformance.json files alone (conformance/gns3/matrix.py):
checked here on small synthetic reports, without any server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.gns3 import VERSIONS
from conformance.gns3.matrix import MATRIX_DOC, committed_verdicts, load_reports, render_matrix, summarize, write_matrix

RELEASES = ("9.0.0a1", "9.0.0a2", "9.0.0a3")


def report(verdicts: dict[str, str], passed: bool = True) -> dict:
    counts: dict[str, int] = {}
    for verdict in verdicts.values():
        counts[verdict] = counts.get(verdict, 0) + 1
    return {
        "passed": passed,
        "counts": counts,
        "requirements": [{"id": rid, "level": "MUST", "verdict": v} for rid, v in verdicts.items()],
    }


def write_reports(root: Path, reports: dict[str, dict]) -> None:
    for version, data in reports.items():
        folder = root / f"gns3-{version}"
        folder.mkdir(parents=True)
        (folder / "conformance.json").write_text(json.dumps(data))


@pytest.fixture
def reports(tmp_path) -> Path:
    write_reports(
        tmp_path,
        {
            "9.0.0a1": report({"A-001": "PASS", "B-001": "XFAIL", "C-001": "NOT TESTABLE", "D-001": "EXCLUDED"}),
            "9.0.0a2": report({"A-001": "PASS", "B-001": "XFAIL", "C-001": "PASS", "D-001": "EXCLUDED"}),
            "9.0.0a3": report({"A-001": "XFAIL", "B-001": "PASS", "C-001": "PASS", "D-001": "EXCLUDED"}, passed=False),
        },
    )
    return tmp_path


def rows(text: str) -> dict[str, list[str]]:
    table = text.split("## Requirements by release")[1].split("## What changed")[0]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines() if line.startswith("| ")]
    return {row[0]: row[2:] for row in cells[1:]}


def test_the_table_has_a_row_for_each_requirement_not_pass_everywhere(reports):
    text = render_matrix(load_reports(reports, RELEASES))
    assert "| requirement | level | 9.0.0a1 | 9.0.0a2 | 9.0.0a3 |" in text
    assert rows(text) == {
        "A-001": ["PASS", "PASS", "**XFAIL**"],
        "B-001": ["**XFAIL**", "**XFAIL**", "PASS"],
        "C-001": ["**NOT TESTABLE**", "PASS", "PASS"],
        "D-001": ["**EXCLUDED**", "**EXCLUDED**", "**EXCLUDED**"],
    }
    assert "Only the 4 requirements that are not PASS in at least one release are shown; the other 0" in text


def test_changes_between_consecutive_releases(reports):
    text = render_matrix(load_reports(reports, RELEASES))
    changes = text.split("## What changed between consecutive releases")[1]
    first, second = changes.split("### 9.0.0a2 -> 9.0.0a3")
    assert "### 9.0.0a1 -> 9.0.0a2" in first
    assert "- C-001 (MUST): NOT TESTABLE -> PASS" in first and "A-001" not in first and "B-001" not in first
    assert "- A-001 (MUST): PASS -> XFAIL" in second and "- B-001 (MUST): XFAIL -> PASS" in second
    assert "C-001" not in second and "D-001" not in second


def test_each_release_links_its_findings_and_says_whether_its_run_passed(reports):
    text = render_matrix(load_reports(reports, RELEASES))
    assert "| release | run | PASS | XFAIL | NOT TESTABLE | EXCLUDED | findings |" in text  # verdicts some run has
    assert "| 9.0.0a1 | passed | 1 | 1 | 1 | 1 | [gns3-9.0.0a1.md](gns3-9.0.0a1.md) |" in text
    line = next(line for line in text.splitlines() if line.startswith("| 9.0.0a3 |"))
    assert "**failed**" in line and "[gns3-9.0.0a3.md](gns3-9.0.0a3.md)" in line
    assert "python3 tasks.py gns3 --matrix --doc-only" in text


def test_the_document_has_no_date_and_is_stable(reports, tmp_path):
    out = tmp_path / "out.md"
    write_matrix(reports, out, RELEASES)
    first = out.read_bytes()
    write_matrix(reports, out, RELEASES)
    assert out.read_bytes() == first
    assert "20" + "26-" not in first.decode() and "started_at" not in first.decode()


def test_a_release_without_a_report_is_left_out_and_no_report_at_all_is_an_error(tmp_path):
    write_reports(tmp_path, {"9.0.0a2": report({"A-001": "PASS"})})
    text = render_matrix(load_reports(tmp_path, RELEASES))
    assert "9.0.0a1" not in text and "Only one release has a report." in text
    with pytest.raises(FileNotFoundError):
        write_matrix(tmp_path / "nothing", tmp_path / "out.md")


def test_the_committed_document_is_what_the_committed_verdicts_give():
    """docs/gns3-versions.json (every release's verdicts) is committed with the document; the reports are not."""
    verdicts = committed_verdicts()
    assert tuple(verdicts) == VERSIONS
    assert MATRIX_DOC.read_text(encoding="utf-8") == render_matrix(verdicts), (
        "rebuild: tasks.py gns3 --matrix --doc-only"
    )
    reports = load_reports(MATRIX_DOC.parents[1] / "reports", VERSIONS)
    if reports:  # where releases were run here, their reports give the committed verdicts
        assert {v: summarize(data) for v, data in reports.items()} == {v: verdicts[v] for v in reports}
