"""The entry points: `copilot-conformance` (click), `python -m conformance`, and the pytest plugin
(`pytest --pyargs conformance`). The end-to-end test runs the whole suite against the reference server with the
README's commands (the main job, then a part through the pytest plugin), as subprocesses: it takes some 30 s and
is part of the normal test run on purpose."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import gns3_copilot_spec as spec
from conformance.__main__ import arguments
from conformance.checks import select
from conformance.cli import cli
from conformance.pytest_plugin import REQUIREMENT_TESTS
from tests.readme import readme_command

from .test_target_file import minimal

ROOT = Path(__file__).resolve().parents[2]
IDS = [r["id"] for r in spec.load_requirements()["requirements"]]
REPORTS = ["conformance.json", "junit.xml", "report.html", "summary.txt"]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), prog_name="copilot-conformance")


def script() -> list[str]:
    found = Path(sys.executable).parent / "copilot-conformance"
    if found.exists():
        return [str(found)]
    which = shutil.which("copilot-conformance")
    return [which] if which else [sys.executable, "-m", "conformance"]


def test_run_help_names_every_option():
    result = invoke("run", "--help")
    assert result.exit_code == 0
    for option in ("--target", "--report-dir", "--jobs", "--only", "--seed", "--keep", "--quiet"):
        assert option in result.output
    assert "Exit status: 0 when the run passes, 1 when it does not, 2 for a bad target" in " ".join(
        result.output.split()
    )


def test_a_bad_target_file_exits_2_with_its_message_and_no_traceback(tmp_path):
    data = minimal()
    data["colour"] = "blue"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    result = invoke("run", "--target", str(path), "--report-dir", str(tmp_path / "reports"))
    assert result.exit_code == 2
    assert f"copilot-conformance: bad target: {path.resolve()} is not a valid target file" in result.output
    assert "'colour'" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "reports").exists()


def test_an_unknown_target_name_exits_2():
    result = invoke("run", "--target", "no-such-target")
    assert result.exit_code == 2
    assert "no built-in target of that name" in result.output and "Traceback" not in result.output


def test_only_that_selects_no_check_exits_2_naming_the_closest():
    result = invoke("run", "--only", "no.such.check")
    assert result.exit_code == 2
    assert "--only no.such.check: no requirement id, area or check id of that name" in result.output
    result = invoke("run", "--only", "stats", "TITLE-03")  # the second of two values after one --only
    assert result.exit_code == 2 and "did you mean TITLE-003" in result.output and "Traceback" not in result.output
    result = invoke("run", "--only", "TITLE-005")
    assert result.exit_code == 2 and "TITLE-005 is excluded from the suite" in result.output
    result = invoke("run", "--only")
    assert result.exit_code == 2 and "requires an argument" in result.output


def test_jobs_must_be_positive():
    assert invoke("run", "--jobs", "0").exit_code == 2


def test_checks_are_selected_by_id_prefix():
    every = [c.id for c in select(None)]
    assert "framing.frames" in every
    assert [c.id for c in select(["framing.frames"])] == ["framing.frames"]
    assert {c.id for c in select(["framing."])} == {c for c in every if c.startswith("framing.")}


def test_targets_lists_the_built_in_targets():
    result = invoke("targets")
    assert result.exit_code == 0
    assert "reference" in result.output and "reference-server" in result.output


def test_requirements_lists_the_registry():
    result = invoke("requirements")
    assert result.exit_code == 0
    for rid in IDS:
        assert rid in result.output
    assert f"{len(IDS)} requirements" in result.output
    framing = invoke("requirements", "--section", "framing", "--level", "SHOULD")
    assert "FRAME-004" in framing.output and "FRAME-001" not in framing.output


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], ["run"]),
        (["--target", "x.yaml"], ["run", "--target", "x.yaml"]),
        (["targets"], ["targets"]),
        (["run", "-q"], ["run", "-q"]),
        (["--help"], ["--help"]),
    ],
)
def test_python_m_conformance_is_run(argv, expected):
    assert arguments(argv) == expected


def test_python_m_conformance_reports_a_bad_target():
    completed = subprocess.run(
        [sys.executable, "-m", "conformance", "--target", "no-such-target"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 2
    assert "bad target" in completed.stderr and "Traceback" not in completed.stderr


def test_our_own_pytest_does_not_collect_the_requirement_tests():
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "tests/conformance/test_cli.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "test_requirements.py" not in completed.stdout
    configured = (ROOT / "pyproject.toml").read_text()
    assert 'testpaths = ["tests"]' in configured
    assert REQUIREMENT_TESTS.parent.name == "conformance" and not str(REQUIREMENT_TESTS).startswith(str(ROOT / "tests"))


def test_the_plugin_reports_a_bad_target_as_a_usage_error():
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "conformance", "--copilot-target", "no-such-target", "-q"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 4  # pytest's usage error
    assert "bad target: no target file 'no-such-target'" in completed.stdout + completed.stderr


def check_reports(directory: Path) -> dict:
    assert sorted(p.name for p in directory.iterdir()) == sorted(REPORTS)
    data = json.loads((directory / "conformance.json").read_text())
    assert [r["id"] for r in data["requirements"]] == IDS
    cases = ET.parse(directory / "junit.xml").getroot().find("testsuite").findall("testcase")
    assert [c.get("name") for c in cases] == IDS
    return data


@pytest.mark.slow  # whole suite runs or servers: left out of --quick
def test_end_to_end_against_the_reference_server(tmp_path):
    """The console script, its output and its four reports, on a part of the suite (a GNS3 area and a channel's, whose
    checks run the protocol's Node client): the whole suite runs through the same `run` as the README's main job
    (tests/test_readme.py) and from the installed wheel (tests/test_packaging.py). Then a part of it through the
    pytest plugin."""
    cli_reports = tmp_path / "cli"
    command = readme_command(".venv/bin/copilot-conformance run")
    completed = subprocess.run(
        [
            str(ROOT / command[0]),
            *command[1:],
            "--only",
            "titles",
            "--only",
            "channel_ui",
            "--report-dir",
            str(cli_reports),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = completed.stdout
    data = check_reports(cli_reports)
    failing = {r["id"]: (r["verdict"], r["message"][:200]) for r in data["requirements"] if r["failing"]}
    assert "run took " in output and " s\n" in output
    assert "reference-server" in output and data["base_url"] in output
    for name in REPORTS:
        assert str(cli_reports / name) in output
    assert completed.returncode == 0, f"not passing: {failing}\n{completed.stderr[-2000:]}"
    assert data["passed"] is True and "RESULT: PASSED" in output

    # The plugin, with tests selected by requirement id: only the checks that judge them run.
    plugin_reports = tmp_path / "plugin"
    command = readme_command(".venv/bin/pytest --pyargs conformance --copilot-target reference -k TITLE-004")
    completed = subprocess.run(
        [
            str(ROOT / command[0]),
            *command[1:],
            "-q",
            "-p",
            "no:cacheprovider",
            "--copilot-report-dir",
            str(plugin_reports),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-2000:]
    data = check_reports(plugin_reports)
    assert [c["id"] for c in data["checks"]] == [c.id for c in select(["TITLE-004"])] == ["titles.once"]
    judged = {r["id"]: r["verdict"] for r in data["requirements"] if r["verdict"] not in ("NOT SELECTED", "EXCLUDED")}
    assert judged == {"TITLE-004": "PASS"}
    others = len(spec.load_requirements()["requirements"]) - 1  # one test per requirement: all but TITLE-004
    assert f"1 passed, {others} deselected" in completed.stdout
    assert "copilot-conformance" in completed.stdout and "run took" in completed.stdout


@pytest.mark.slow  # whole suite runs or servers: left out of --quick
def test_the_plugin_is_inactive_without_a_copilot_option(tmp_path):
    """Installed, the plugin loads in every pytest of the environment: without a --copilot-* option it runs
    nothing, and its options are all prefixed (an unprefixed --target is not its own)."""
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "conformance", "-q", "-p", "no:cacheprovider", "-rs"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-2000:]
    assert f"{len(IDS)} skipped" in completed.stdout
    assert "copilot-conformance is inactive: give --copilot-target" in completed.stdout
    assert not (tmp_path / "reports").exists() and "run took" not in completed.stdout
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "conformance", "--target", "reference", "-q"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 4 and "unrecognized arguments: --target" in completed.stderr
    help_text = subprocess.run(
        [sys.executable, "-m", "pytest", "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    ).stdout
    for option in ("--copilot-target", "--copilot-report-dir", "--copilot-only", "--copilot-seed", "--copilot-keep"):
        assert option in help_text


def test_a_target_that_does_not_start_is_a_harness_error_with_reports(tmp_path):
    data = minimal()
    del data["base_url"]
    data["start"] = {
        "command": ["{python}", "-c", "import sys; print('boom: cannot start'); sys.exit(3)"],
        "timeout_seconds": 10,
    }
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(data))
    result = invoke("run", "--target", str(path), "--report-dir", str(tmp_path / "reports"), "--quiet")
    assert result.exit_code == 1
    assert "HARNESS ERROR: the target exited with 3 before it was ready" in result.output
    assert "boom: cannot start" in result.output and "run took" in result.output
    report = check_reports(tmp_path / "reports")
    assert report["passed"] is False and report["harness_error"]
    assert {r["verdict"] for r in report["requirements"]} <= {"ERROR", "N/A", "EXCLUDED"}


def test_an_exception_the_engine_lets_through_becomes_error_verdicts(monkeypatch):
    import conformance.harness.engine
    from conformance.harness.engine import run_suite
    from conformance.harness.target import parse_target

    async def broken_prepare(*args, **kwargs):  # a bug of the suite's own, during provisioning
        raise KeyError("tokens")

    monkeypatch.setattr(conformance.harness.engine, "prepare", broken_prepare)
    result = run_suite(parse_target(minimal()), only=["framing.frames"])
    assert result.passed is False
    assert result.harness_error.startswith("harness error: KeyError")
    assert {v.verdict for v in result.verdicts} <= {"ERROR", "N/A", "EXCLUDED"}
    assert len(result.verdicts) == len(IDS)


@pytest.mark.parametrize("requirement_id", IDS)
def test_explain_prints_the_four_locations_of_every_requirement(requirement_id):
    result = invoke("explain", requirement_id)
    assert result.exit_code == 0, result.output
    for heading in ("specified:", "checked by:", "implemented in", "proven by mutants:"):
        assert heading in result.output, (requirement_id, heading)
    assert f"{requirement_id} (" in result.output.splitlines()[0]
    source = next(r["source"] for r in spec.load_requirements()["requirements"] if r["id"] == requirement_id)
    assert f"\nsource: {source} (" in result.output  # whose rule: the protocol's or the contract's


def test_the_readme_explain_command():
    command = readme_command(".venv/bin/copilot-conformance explain TOOLCALL-005")
    completed = subprocess.run([str(ROOT / command[0]), *command[1:]], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("TOOLCALL-005 (") and "proven by mutants:" in completed.stdout


def test_the_readme_scripts_export_command_writes_scripts_the_fake_llm_loads(tmp_path):
    from fake_llm.scripts import ScriptLibrary

    command = readme_command(".venv/bin/copilot-conformance scripts export cs-scripts")
    completed = subprocess.run(
        [str(ROOT / command[0]), *command[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    written = sorted(p.stem for p in (tmp_path / "cs-scripts").glob("*.yaml"))
    assert completed.stdout.strip() == f"wrote {len(written)} scripts for target reference-server to cs-scripts"
    assert set(written) <= set(ScriptLibrary.from_folders([tmp_path / "cs-scripts"]).names())
    assert "cs-plain" in written and "cs-slow" in written
    bad = invoke("scripts", "export", str(tmp_path / "x"), "--target", "no-such-target")
    assert bad.exit_code == 2 and "bad target" in bad.output


def test_explain_an_unknown_id_exits_2_naming_the_closest():
    result = invoke("explain", "TOOLCALL-05")
    assert result.exit_code == 2
    assert "unknown requirement id 'TOOLCALL-05'" in result.output and "TOOLCALL-005" in result.output


def _not_starting(tmp_path: Path) -> Path:
    """A target file whose server exits at once: a quick run, every requirement ERROR, with its reports."""
    data = minimal()
    del data["base_url"]
    data["start"] = {"command": ["{python}", "-c", "import sys; sys.exit(3)"], "timeout_seconds": 10}
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_run_and_report_writes_the_reports_and_the_findings_document(tmp_path):
    from conformance.harness.run_and_report import EXIT_FAILED, run_and_report
    from conformance.harness.target import load_target

    doc = tmp_path / "docs" / "findings.md"
    reported = run_and_report(load_target(str(_not_starting(tmp_path))), tmp_path / "reports", findings_doc=doc)
    assert reported.status == EXIT_FAILED and reported.error is None
    assert [p.name for p in reported.written] == [*REPORTS, "findings.md"]
    assert reported.files["json"] == str(tmp_path / "reports" / "conformance.json") and doc.exists()
    assert json.loads((tmp_path / "reports" / "conformance.json").read_text())["harness_error"]


def test_reports_that_cannot_be_written_are_said_and_the_result_kept(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = invoke("run", "--target", str(_not_starting(tmp_path)), "--report-dir", str(blocker / "reports"), "-q")
    assert result.exit_code == 1  # the run's verdict (every requirement ERROR), not a crash
    assert f"cannot write the reports to {blocker / 'reports'}" in result.output
    assert "RESULT: FAILED" in result.output
