"""The suite against each peer, as `python3 tasks.py peers` runs it: installed (cached), run in a loopback-only
network namespace, judged against its committed baseline (peers/baselines/). The committed findings document of
each peer (docs/<target>.md) must document every known deviation the run confirms. Skipped, with the reason, only
where a network namespace cannot be made."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from conformance.harness.netns import network_namespace_available
from peers import PEERS, REPO, get_peer
from peers.install import ensure
from tests.readme import readme_command

pytestmark = pytest.mark.slow  # installs and judges the peers: left out of `python3 tasks.py test --quick`
XDIST_SPREAD = True  # each test installs and judges a server of its own: any worker may take it


@pytest.mark.parametrize("name", sorted(PEERS))
def test_the_peer_run_matches_its_baseline(tmp_path, name):
    if not network_namespace_available():
        pytest.skip("no network namespace here (`unshare -rn` and `ip` are needed): a peer cannot be isolated")
    peer = get_peer(name)
    ensure(name)  # needs the package registry the first time; cached in .cache/ afterwards
    reports, doc = tmp_path / "reports", tmp_path / "peer.md"
    # The README's command, for one peer and into the test's folder.
    command = readme_command("python3 tasks.py peers") + ["--peer", name, "--report-dir", str(reports)]
    command += ["--doc", str(doc)]
    completed = subprocess.run(
        [sys.executable, *command[1:]],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-3000:]
    data = json.loads((reports / "conformance.json").read_text())
    assert data["passed"] and data["target"]["name"] == peer.target
    verdicts = {r["id"]: r["verdict"] for r in data["requirements"]}
    assert not {"FAIL", "STALE", "ERROR", "FLAKY"} & set(verdicts.values()), verdicts
    # A peer serves one protocol: it is judged on the channel rules, and nothing of the GNS3 chat API applies.
    judged = {rid for rid, verdict in verdicts.items() if verdict not in ("N/A", "EXCLUDED")}
    assert judged and all(rid.split("-")[0] in ("CHANNEL", "OPENAI", "UI", "AGUI") for rid in judged), judged
    committed = (REPO / "docs" / f"{peer.target}.md").read_text()
    baseline = yaml.safe_load((REPO / "peers" / "baselines" / f"{peer.target}.yaml").read_text(encoding="utf-8"))
    for rid, verdict in verdicts.items():
        if verdict == "XFAIL":
            assert f"### {rid} (" in committed, f"docs/{peer.target}.md does not document {rid}"
            assert rid in baseline["known_failures"]
    print(f"\n{completed.stdout.splitlines()[-1]}")


def test_the_install_only_command_installs_both_peers_and_runs_nothing():
    command = readme_command("python3 tasks.py peers --install-only")
    completed = subprocess.run([sys.executable, *command[1:]], cwd=REPO, capture_output=True, text=True, timeout=900)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    assert all(get_peer(name).python.exists() for name in PEERS)
    assert "peers.run" not in completed.stdout  # nothing was judged
