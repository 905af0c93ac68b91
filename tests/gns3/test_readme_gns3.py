"""Every command the README's GNS3 section shows runs here, in a cheap form: `--help` and the matrix document's
rebuild for real; the commands that start servers or resolve pins are parsed with the runner's own options (and
`--version` checked against the supported releases); the offline recipe for any GNS3 build runs, with its target
file, against the cached 3.1.0a7 install and one check."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conformance.gns3 import VERSIONS
from conformance.gns3.matrix import MATRIX_DOC, MATRIX_VERDICTS, load_reports
from conformance.gns3.run import ensure_gns3_venv, main
from conformance.harness.netns import network_namespace_available
from conformance.harness.target import parse_target
from tests.readme import page_text

pytestmark = pytest.mark.slow  # installs and runs gns3-server: left out of `python3 tasks.py test --quick`

REPO = Path(__file__).resolve().parents[2]


def section() -> str:
    return page_text("The real GNS3 server")  # the README's page docs/gns3-server.md


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section(), flags=re.S)


def task_commands() -> list[list[str]]:
    lines = [line.split("  #")[0].strip() for block in blocks("sh") for line in block.splitlines()]
    return [shlex.split(line)[3:] for line in lines if line.startswith("python3 tasks.py gns3")]


def test_the_section_shows_every_option_and_every_release():
    options = {arg for args in task_commands() for arg in args if arg.startswith("--")}
    assert {"--version", "--matrix", "--doc-only", "--resolve-pins", "--help"} <= options
    text = section()
    assert f"{VERSIONS[0]} to {VERSIONS[-1]}" in text
    for placeholder in ("{python}", "{port}", "{workdir}", "{fake_llm_url}", "{repo}"):
        assert f"`{placeholder}`" in text


@pytest.mark.parametrize("args", task_commands(), ids=" ".join)
def test_each_task_command_is_accepted(args):
    if "--help" in args:
        completed = subprocess.run(
            [sys.executable, "tasks.py", "gns3", *args], cwd=REPO, capture_output=True, text=True
        )
        assert completed.returncode == 0 and "--matrix" in completed.stdout, completed.stderr
    elif args == ["--matrix", "--doc-only"]:  # cheap: no server; the committed document must come out unchanged
        before, verdicts_before = MATRIX_DOC.read_bytes(), MATRIX_VERDICTS.read_bytes()
        completed = subprocess.run(
            [sys.executable, "tasks.py", "gns3", *args], cwd=REPO, capture_output=True, text=True
        )
        after = MATRIX_DOC.read_bytes()
        MATRIX_DOC.write_bytes(before)
        MATRIX_VERDICTS.write_bytes(verdicts_before)
        found = load_reports(REPO / "reports", VERSIONS)
        if not found:  # reports/ is not committed (.gitignore): a fresh clone has none, and is told so
            assert completed.returncode == 1, completed.stdout + completed.stderr
            assert "no reports/gns3-<release>/conformance.json" in completed.stderr
        else:
            assert completed.returncode == 0, completed.stdout + completed.stderr
        if len(found) == len(VERSIONS):  # where every release was run, the committed document is up to date
            assert after == before, "docs/gns3-versions.md is not what reports/gns3-*/ give: rebuild and commit it"
    else:  # would install and start servers (or resolve pins): parse only, with the runner's own options
        context = main.make_context("run", list(args))
        assert context.params["version"] in VERSIONS


def test_an_unknown_release_is_refused_with_the_supported_ones():
    completed = subprocess.run(
        [sys.executable, "-m", "conformance.gns3.run", "--version", "3.0.0"], cwd=REPO, capture_output=True, text=True
    )
    assert completed.returncode == 2
    assert "gns3-server 3.0.0 is not supported; supported releases: " + ", ".join(VERSIONS) in completed.stderr


def test_the_offline_recipe_for_any_gns3_build_runs(tmp_path):
    (target_text,) = blocks("yaml")
    target = yaml.safe_load(target_text)
    parse_target(target)  # the README's target file is valid as written
    (recipe,) = [line for block in blocks("sh") for line in block.splitlines() if line.startswith("unshare -rn")]
    if not network_namespace_available():
        pytest.skip("no network namespace here (`unshare -rn` and `ip` are needed)")
    venv = ensure_gns3_venv(VERSIONS[-1])  # the README's /opt/gns3-dev: any venv with gns3server in it
    (tmp_path / "my-gns3.yaml").write_text(target_text.replace("/opt/gns3-dev", str(venv)), encoding="utf-8")
    command = recipe.replace("my-gns3.yaml", str(tmp_path / "my-gns3.yaml"))
    command = command.replace("reports/my-gns3", str(tmp_path / "reports"))
    command = command.replace("--report-dir", "--quiet --only prefix --report-dir")  # one check keeps it cheap
    completed = subprocess.run(command, shell=True, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    assert (tmp_path / "reports" / "conformance.json").exists()
