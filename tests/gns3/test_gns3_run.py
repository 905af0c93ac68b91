"""The GNS3 runs, as `python3 tasks.py gns3 --version V` does them: the oldest and the newest supported release
of gns3-server, installed (cached), run in a network namespace with loopback only, judged against their committed
baselines. Skipped, with the reason, only where a network namespace cannot be made. (The releases between them
are run by `python3 tasks.py gns3 --matrix`; two here keep the test time small.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.gns3 import VERSIONS
from conformance.gns3.matrix import committed_verdicts, summarize
from conformance.gns3.run import ensure_gns3_venv, network_namespace_available

pytestmark = pytest.mark.slow  # installs and judges gns3-server: left out of `python3 tasks.py test --quick`
XDIST_SPREAD = True  # each test installs and judges a server of its own: any worker may take it

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("version", [VERSIONS[0], VERSIONS[-1]])
def test_the_gns3_run_matches_its_baseline(tmp_path, version):
    if not network_namespace_available():
        pytest.skip("no network namespace here (`unshare -rn` and `ip` are needed): the GNS3 run cannot be isolated")
    ensure_gns3_venv(version)  # needs the package registry the first time; cached in .cache/ afterwards
    reports, doc = tmp_path / "reports", tmp_path / "gns3.md"
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "conformance.gns3.run",
            "--version",
            version,
            "--report-dir",
            str(reports),
            "--doc",
            str(doc),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-3000:]
    data = json.loads((reports / "conformance.json").read_text())
    assert data["passed"] and data["target"]["name"] == f"gns3-{version}"
    verdicts = {r["id"]: r["verdict"] for r in data["requirements"]}
    assert not {"FAIL", "STALE", "ERROR"} & set(verdicts.values())
    # ... and the verdicts docs/gns3-versions.md shows for this release are still what a run gives
    assert summarize(data)["requirements"] == committed_verdicts()[version]["requirements"]
    text = doc.read_text()
    for rid, verdict in verdicts.items():
        if verdict == "XFAIL":
            assert f"### {rid} (" in text  # every known deviation is documented with its evidence
    print(f"\n{completed.stdout.splitlines()[-1]}")
