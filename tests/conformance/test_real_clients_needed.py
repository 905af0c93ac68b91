"""A run whose checks read answers with a protocol's real JavaScript client needs those clients installed: where they
cannot be found it stops before anything starts, with exit 2 and the command that installs them; a run that needs
none of them never asks."""

from __future__ import annotations

import copy

import pytest
from click.testing import CliRunner

from conformance.channels import node
from conformance.checks import select
from conformance.cli import cli
from conformance.errors import ClientsMissing
from conformance.harness.engine import require_real_clients
from conformance.harness.target import load_target, parse_target


@pytest.fixture
def no_clients(tmp_path, monkeypatch):
    """Nowhere to find them: an empty folder named, no checkout above the working folder, an empty cache."""
    monkeypatch.setattr(node, "JS", tmp_path / "installed" / "js")
    monkeypatch.setenv("COPILOT_CONFORMANCE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(node.NODE_MODULES_VARIABLE, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("area", ["channel_ui", "channel_ag_ui", "channels", "across_channels"])
def test_checks_that_read_with_a_real_client_need_it(no_clients, area):
    with pytest.raises(ClientsMissing, match="run `copilot-conformance clients install` once"):
        require_real_clients(select([area]), load_target(None))


def test_checks_that_read_with_no_real_client_need_nothing(no_clients):
    require_real_clients(select(["titles", "channel_openai"]), load_target(None))


def test_a_target_without_the_ui_and_ag_ui_channels_needs_nothing(no_clients):
    data = copy.deepcopy(load_target(None).data)
    data["channels"] = {name: value for name, value in data["channels"].items() if name not in ("ui", "ag_ui")}
    require_real_clients(select(["channels"]), parse_target(data, path=load_target(None).path))


def test_the_run_stops_with_exit_2_and_the_command_before_anything_starts(no_clients, tmp_path):
    result = CliRunner().invoke(
        cli, ["run", "--only", "channel_ui", "--report-dir", str(tmp_path / "reports")], prog_name="copilot-conformance"
    )
    assert result.exit_code == 2, result.output
    assert "copilot-conformance clients install" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "reports").exists()
