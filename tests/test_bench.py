"""`python -m bench --quick` still runs and still prints what bench/README.md describes (no timing asserts)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _bench(*arguments: str, timeout: float) -> str:
    """`python -m bench ARGUMENTS`, which must succeed; its stdout (the report)."""
    command = [sys.executable, "-m", "bench", *arguments]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"exit code {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_quick_bench_runs_and_prints_ratios_and_plan():
    output = _bench("--quick", timeout=120)
    for subject in ("reference server", "bare LangGraph", "bare FastAPI SSE"):
        assert subject in output
    for variant in ("text", "tool"):
        assert f"[{variant}] ratio reference/bare-LangGraph events/s:" in output
        assert f"[{variant}] ratio reference/bare-FastAPI events/s:" in output
    assert "ratio latency(500)/latency(100):" in output
    assert "EXPLAIN QUERY PLAN of LISTING_QUERY" in output
    assert "SEARCH chat_sessions" in output
    assert "index serves both the filter and the order:" in output
    assert "order check (pinned first, then updated_at descending):" in output
