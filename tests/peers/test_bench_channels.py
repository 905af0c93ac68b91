"""`python -m bench --only channels --quick` still runs: our channels next to the peers serving the same agent.
Only the output's shape is checked, never a number (timing is the bench's business, printed as ratios)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conformance.harness.netns import network_namespace_available
from peers import PEERS, REPO
from peers.install import ensure

pytestmark = pytest.mark.slow  # installs the peers and benchmarks them: left out of `python3 tasks.py test --quick`


def _bench(*arguments: str, timeout: float) -> str:
    command = [sys.executable, "-m", "bench", *arguments]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"exit code {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_quick_channels_bench_runs_and_prints_ratios():
    """`--only channels` serves our agent through our channels and through the peers (peers/), in a loopback-only
    network namespace. It runs in the peers' test group, after their install (or installs them itself)."""
    for name in PEERS:
        ensure(name)  # cached: the registry is needed the first time only
    if not network_namespace_available():
        pytest.skip("no network namespace (`unshare -rn` with `ip`): the peers run only inside one")
    output = _bench("--only", "channels", "--quick", timeout=180)
    assert "== Channels:" in output
    subjects = ["GNS3 stream", "OpenAI chat", "OpenAI responses", "UI stream", "AG-UI"]
    rows = [f"ours: {name}" for name in subjects] + ["peer: langgraph-openai-serve", "peer: ag-ui-langgraph"]
    for variant in ("text", "tool"):
        for subject in [*rows, "bare LangGraph"]:
            assert re.search(rf"^{variant} +{re.escape(subject)} +\d+ ", output, re.M), (variant, subject)
        for subject, against, goal in [
            ("ours: OpenAI chat", "peer: langgraph-openai-serve", ">= 1.0"),
            ("ours: AG-UI", "peer: ag-ui-langgraph", ">= 1.0"),
            *((f"ours: {name}", "bare LangGraph", ">= 0.8") for name in subjects),
        ]:
            pattern = rf"^{variant} +{re.escape(subject)} +{re.escape(against)} +[\d.]+ +[\d.]+ +[\d.]+ +{goal} "
            assert re.search(pattern, output, re.M), (variant, subject, against)
    assert "SEARCH chat_sessions" not in output  # only the channels part ran
