"""The README's smallest target file works as it is against a server already running: its users, projects, access
entries and LLM configurations are made through the controller API, and the checks judge (a part of the suite here:
the whole runs in tests/test_readme.py and tests/quality)."""

from __future__ import annotations

import pytest
import yaml
from click.testing import CliRunner

from conformance.cli import cli
from conformance.harness.target import load_target
from tests.readme import readme_command, readme_example
from tests.reference_server.conftest import start_server_process

pytestmark = pytest.mark.slow  # a server and a suite run: left out of `python3 tasks.py test --quick`


def test_the_readme_s_smallest_target_file_runs_against_a_running_server(tmp_path):
    example = yaml.safe_load(readme_example("yaml minimal-target"))
    assert example["base_url"] == "http://127.0.0.1:3080"  # the server's default port, as the README says
    command = readme_command(".venv/bin/copilot-conformance run --target my-server.yaml")
    server = start_server_process(tmp_path / "data")  # a port of its own: 3080 may be taken on this machine
    try:
        path = tmp_path / "my-server.yaml"
        path.write_text(yaml.safe_dump({**example, "base_url": server.base_url}), encoding="utf-8")
        assert load_target(str(path)).capabilities == {"controller_auth", "channel_gns3"}
        arguments = [*command[1:-1], str(path), "--only", "titles,access", "--report-dir", str(tmp_path / "reports")]
        result = CliRunner().invoke(cli, arguments, prog_name="copilot-conformance")
        left = server.what_is_on()
    finally:
        server.stop()
    assert result.exit_code == 0, result.output
    assert "RESULT: PASSED" in result.output and "NOT TESTABLE" not in result.output
    assert left == {"users": ["admin"], "projects": []}
