"""conformance/harness/netns.py, the one helper of the GNS3 and peers runners: a module re-run inside a new user and
network namespace has loopback, up, as its only interface, and knows it is inside; where none can be made, the runner
exits with its own reason."""

from __future__ import annotations

import json

import pytest

from conformance.harness import netns

PROBE = """
import json, os, socket, subprocess, sys
from conformance.harness.netns import inside
up = "UP" in subprocess.run(["ip", "-o", "link", "show", "lo"], capture_output=True, text=True).stdout
names = [name for _, name in socket.if_nameindex()]
json.dump({"names": names, "up": up, "inside": inside("probe"), "args": sys.argv[1:]}, open(sys.argv[1], "w"))
"""


def test_inside_is_true_only_for_the_module_re_run(monkeypatch):
    monkeypatch.setenv(netns.MARKER, "peers.run")
    assert netns.inside("peers.run") and not netns.inside("conformance.gns3.run")
    monkeypatch.delenv(netns.MARKER)
    assert not netns.inside("peers.run")


def test_without_a_namespace_the_runner_exits_with_its_reason(monkeypatch):
    monkeypatch.setattr(netns, "network_namespace_available", lambda: False)
    with pytest.raises(SystemExit) as stopped:
        netns.rerun_inside("probe", [], why="the X run needs one")
    assert str(stopped.value.code) == "cannot create a network namespace (`unshare -rn` with `ip`): the X run needs one"


def test_a_module_re_run_inside_has_only_loopback_up(tmp_path, monkeypatch):
    if not netns.network_namespace_available():
        pytest.skip("no network namespace here (`unshare -rn` and `ip` are needed)")
    (tmp_path / "probe.py").write_text(PROBE, encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    out = tmp_path / "out.json"
    assert netns.rerun_inside("probe", [str(out), "--flag"], why="unused") == 0
    assert json.loads(out.read_text()) == {"names": ["lo"], "up": True, "inside": True, "args": [str(out), "--flag"]}
