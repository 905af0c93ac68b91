"""The suite against each peer, as `python3 tasks.py peers` runs it: installed (cached), run in a loopback-only
network namespace, judged against its committed baseline (peers/baselines/). The committed findings document of
each peer (docs/<target>.md) must document every known deviation the run confirms. Skipped, with the reason, only
where a network namespace cannot be made."""

from __future__ import annotations

import atexit
import json
import shutil
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

import pytest
import yaml

import gns3_copilot_spec as spec
from conformance.harness.netns import network_namespace_available
from peers import PEERS, REPO, get_peer
from peers.install import ensure, installed
from tests.ahead import once
from tests.readme import readme_command

pytestmark = pytest.mark.slow  # installs and judges the peers: left out of `python3 tasks.py test --quick`
XDIST_SPREAD = True  # each test installs and judges a server of its own: any worker may take it
# Each peer's run, started a test ahead (tests/ahead.py): a run mostly waits on its peer.
AHEAD = {"test_the_peer_run_matches_its_baseline": lambda params: partial(peer_run, params["name"])}


SOURCES = {r["id"]: r["source"] for r in spec.load_requirements()["requirements"]}


def peer_run(name: str) -> tuple[dict, subprocess.CompletedProcess]:
    """`_peer_run` of one peer with the README's options, made once per process, into a folder of its own."""

    def make() -> tuple[dict, subprocess.CompletedProcess]:
        folder = Path(tempfile.mkdtemp(prefix=f"peer-run-{name}-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        return _peer_run(folder, name)

    return once(("peer", name), make)


def _peer_run(tmp_path, name: str, *extra: str) -> tuple[dict, subprocess.CompletedProcess]:
    """The README's command, for one peer and into the test's folder: the run's conformance.json."""
    if not network_namespace_available():
        pytest.skip("no network namespace here (`unshare -rn` and `ip` are needed): a peer cannot be isolated")
    ensure(name)  # needs the package registry the first time; cached in .cache/ afterwards
    reports, doc = tmp_path / "reports", tmp_path / "peer.md"
    command = readme_command("python3 tasks.py peers") + ["--peer", name, "--report-dir", str(reports)]
    command += ["--doc", str(doc), *extra]
    completed = subprocess.run([sys.executable, *command[1:]], cwd=REPO, capture_output=True, text=True, timeout=900)
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-3000:]
    return json.loads((reports / "conformance.json").read_text()), completed


# The profile is one mechanism of the engine (tests/conformance/test_profiles.py): run end to end on the two peers
# issue 29 names, one of each protocol family; every peer's protocol voice is also judged in its contract run below.
PROFILE_PEERS = ("ag-ui-langgraph", "langgraph-openai-serve")


def _baseline(target: str) -> dict:
    return yaml.safe_load((REPO / "peers" / "baselines" / f"{target}.yaml").read_text(encoding="utf-8"))


def _protocol_known(target: str) -> set[str]:
    return {rid for rid in _baseline(target)["known_failures"] if SOURCES[rid] == "protocol"}


@pytest.mark.parametrize("name", PROFILE_PEERS)
def test_the_protocol_profile_reports_exactly_the_peers_protocol_violations(tmp_path, name):
    """What a user of the peer's protocol learns: only the protocol's own rules are judged, and the violations found
    are exactly the baseline's protocol entries (each documented in docs/<target>.md with the text it breaks)."""
    peer = get_peer(name)
    data, _ = _peer_run(tmp_path, name, "--profile", "protocol")
    assert data["profile"] == "protocol"
    verdicts = {r["id"]: r["verdict"] for r in data["requirements"]}
    judged = {rid for rid, verdict in verdicts.items() if verdict not in ("N/A", "EXCLUDED", "NOT SELECTED")}
    assert judged and all(SOURCES[rid] == "protocol" for rid in judged), judged
    assert not {"FAIL", "STALE", "ERROR", "FLAKY"} & set(verdicts.values()), verdicts
    assert {rid for rid, verdict in verdicts.items() if verdict == "XFAIL"} == _protocol_known(peer.target) != set()


@pytest.mark.parametrize("name", sorted(PEERS))
def test_the_peer_run_matches_its_baseline(name):
    peer = get_peer(name)
    data, completed = peer_run(name)
    assert data["passed"] and data["target"]["name"] == peer.target
    verdicts = {r["id"]: r["verdict"] for r in data["requirements"]}
    assert not {"FAIL", "STALE", "ERROR", "FLAKY"} & set(verdicts.values()), verdicts
    # A peer serves one protocol: it is judged on the channel rules, and nothing of the GNS3 chat API applies.
    judged = {rid for rid, verdict in verdicts.items() if verdict not in ("N/A", "EXCLUDED")}
    assert judged and all(rid.split("-")[0] in ("CHANNEL", "OPENAI", "UI", "AGUI") for rid in judged), judged
    # Its protocol voice: the protocol's rules it breaks are exactly the baseline's protocol entries.
    protocol_failing = {rid for rid, verdict in verdicts.items() if verdict == "XFAIL" and SOURCES[rid] == "protocol"}
    assert protocol_failing == _protocol_known(peer.target)
    committed = (REPO / "docs" / f"{peer.target}.md").read_text()
    for rid, verdict in verdicts.items():
        if verdict == "XFAIL":
            assert f"### {rid} (" in committed, f"docs/{peer.target}.md does not document {rid}"
            assert rid in _baseline(peer.target)["known_failures"]
    print(f"\n{completed.stdout.splitlines()[-1]}")


def test_the_install_only_command_installs_both_peers_and_runs_nothing():
    command = readme_command("python3 tasks.py peers --install-only")
    completed = subprocess.run([sys.executable, *command[1:]], cwd=REPO, capture_output=True, text=True, timeout=900)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    assert all(installed(get_peer(name)) is not None for name in PEERS)  # a venv's python, a Node peer's modules
    assert "peers.run" not in completed.stdout  # nothing was judged
