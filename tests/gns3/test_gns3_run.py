"""The GNS3 run, as `python3 tasks.py gns3 --version V` does it: the newest supported release of gns3-server
(tests/third_party.py), installed (cached), run in a network namespace with loopback only, judged against its
committed baseline. Skipped, with the reason, only where a network namespace cannot be made. (Every supported
release is run by `python3 tasks.py gns3 --matrix`; one here keeps the test time small.)"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conformance.gns3.matrix import committed_verdicts, summarize
from conformance.gns3.run import ensure_gns3_venv
from conformance.harness.netns import network_namespace_available
from tests.third_party import TESTED_GNS3_VERSIONS

pytestmark = pytest.mark.slow  # installs and judges gns3-server: left out of `python3 tasks.py test --quick`

REPO = Path(__file__).resolve().parents[2]


def _gns3_run(version: str, folder: Path, *only: str, check: bool = True) -> tuple[dict, str, str]:
    """`python -m conformance.gns3.run` for one release (its checks judging `only`, or all): the report's data, the
    findings document and the run's last line. With `check`, the run must pass (exit 0)."""
    reports, doc = folder / "reports", folder / "gns3.md"
    selection = [arg for rid in only for arg in ("--only", rid)]
    command = [sys.executable, "-m", "conformance.gns3.run", "--version", version, "--report-dir", str(reports)]
    completed = subprocess.run(
        [*command, "--doc", str(doc), *selection], cwd=REPO, capture_output=True, text=True, timeout=900
    )
    assert completed.returncode in ((0,) if check else (0, 1)), completed.stdout[-4000:] + completed.stderr[-3000:]
    return json.loads((reports / "conformance.json").read_text()), doc.read_text(), completed.stdout.splitlines()[-1]


def test_the_gns3_runs_match_their_baselines(tmp_path):
    """Each release in a namespace of its own, side by side: a GNS3 run waits on its server most of its time (its
    silences, its slow turns, its checks judged again alone)."""
    if not network_namespace_available():
        pytest.skip("no network namespace here (`unshare -rn` and `ip` are needed): the GNS3 run cannot be isolated")
    for version in TESTED_GNS3_VERSIONS:
        ensure_gns3_venv(version)  # needs the package registry the first time; cached in .cache/ afterwards
    with ThreadPoolExecutor(max_workers=len(TESTED_GNS3_VERSIONS)) as pool:
        outcomes = list(pool.map(lambda v: _judged(v, tmp_path / v), TESTED_GNS3_VERSIONS))
    failed = [f"gns3-server {version}: {problem}" for version, problem in outcomes if problem]
    assert not failed, "\n".join(failed)


def _judged(version: str, folder: Path) -> tuple[str, str | None]:
    """One release judged against its baseline: (version, what differs, or None)."""
    try:
        _matches_its_baseline(version, folder)
    except AssertionError as problem:
        return version, str(problem)
    return version, None


def _matches_its_baseline(version: str, folder: Path) -> None:
    data, text, last_line = _gns3_run(version, folder / "run", check=False)
    assert data["target"]["name"] == f"gns3-{version}"
    # The verdicts docs/gns3-versions.md shows for this release (none FAIL, STALE or ERROR) are still what a run
    # gives. A verdict that differs is tolerated only where a run of its checks alone gives the baseline again: the
    # server met transient errors (FLAKY) or the machine's load during the whole run, and nothing else differs.
    baseline = committed_verdicts()[version]["requirements"]
    expected = {r["id"]: r for r in baseline}
    got = {r["id"]: r for r in summarize(data)["requirements"]}
    assert set(got) == set(expected)
    differing = sorted(rid for rid in got if got[rid] != expected[rid])
    documents = {rid: text for rid in expected}  # the findings document that shows each requirement's evidence
    if differing:
        alone, alone_text, _ = _gns3_run(version, folder / "alone", *differing)
        documents.update({rid: alone_text for rid in differing})  # the run that gave the baseline documents it
        again = {r["id"]: r for r in summarize(alone)["requirements"] if r["id"] in differing}
        assert again == {rid: expected[rid] for rid in differing}, (
            f"differing from the baseline in the whole run: {[got[rid] for rid in differing]}"
        )
        print(f"\n{version}: differed in the whole run, the baseline again alone: {[got[rid] for rid in differing]}")
    else:
        assert data["passed"]
    for rid, record in expected.items():
        assert record["verdict"] not in {"FAIL", "STALE", "ERROR"}
        if record["verdict"] == "XFAIL":
            assert f"### {rid} (" in documents[rid]  # every known deviation is documented with its evidence
    print(f"\n{version}: {last_line}")
