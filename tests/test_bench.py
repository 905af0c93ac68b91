"""`python -m bench --quick` still runs and still prints what bench/README.md describes (no timing asserts)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # runs the benchmarks: left out of `python3 tasks.py test --quick`

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
        assert f"[{variant}] TTFE reference/bare-LangGraph: " in output
    assert "(goal >= 0.95: " in output  # the text and tool variants' events/s (issue 33)
    short_ttfe = next(line for line in output.splitlines() if line.startswith("[short] TTFE reference/bare-LangGraph"))
    assert "(goal <= 1.5: " in short_ttfe, short_ttfe
    assert "ratio latency(500)/latency(100):" in output
    assert "EXPLAIN QUERY PLAN of LISTING_QUERY" in output
    assert "SEARCH chat_sessions" in output
    assert "index serves both the filter and the order:" in output
    assert "order check (pinned first, then updated_at descending):" in output


SCALE_CONFIGURATIONS = ("SQLite, 1 process", "PostgreSQL, 1 worker", "PostgreSQL, 2 workers", "PostgreSQL, 4 workers")


def test_quick_scale_bench_prints_the_table_with_ratios_and_no_errors():
    """`--only scale --quick`: 32 streams over 8 projects per configuration, 1 000 / 10 000 sessions (~30-45 s)."""
    output = _bench("--only", "scale", "--quick", timeout=600)
    lines = output.splitlines()
    assert any(line.startswith("== Scale: 32 concurrent streams over 8 projects") for line in lines), output
    for name in SCALE_CONFIGURATIONS:
        row = next((line for line in lines if line.startswith(name + " ")), None)
        assert row is not None, f"no row for {name!r}\n{output}"
        # answered by (N of M), errors, wall s, events/s, x, TTFE p50 ms, x, TTFE p99 ms, x
        answered, of, workers, errors, _wall, _eps, x_eps, _p50, x_p50, _p99, x_p99 = row[len(name) :].split()
        assert of == "of" and int(workers) == int(name.split(", ")[1].split()[0]) and 1 <= int(answered) <= int(workers)
        assert errors == "0", row
        for value in (x_eps, x_p50, x_p99):
            float(value)  # a ratio, whatever it is
        if name == SCALE_CONFIGURATIONS[0]:
            assert (x_eps, x_p50, x_p99) == ("1.00", "1.00", "1.00"), row  # the baseline
    assert any(line.startswith("errors: 0 of 128 streams") and "PASS" in line for line in lines), output
    # the balance of each multi-worker configuration, with its goal (32 streams are too few to hold it to it)
    balance = [line for line in lines if line.startswith("balance, PostgreSQL, ")]
    assert len(balance) == 2 and all("(goal 0.8..1.2: " in line for line in balance), balance
    # every session had one identical turn: one whose statistics differ was counted twice (STATS-007)
    differ = [line for line in lines if line.startswith("sessions whose statistics differ from the others'")]
    assert differ and differ[0].split(": ")[-1].startswith("0 of "), differ
    assert any(line.startswith("server log lines (warnings and errors") for line in lines)
    assert "== CPU during the loads" in output and "us of server + PostgreSQL CPU per event" in output
    # issue 33's goals, each a ratio or a figure of this run with its goal
    assert any(
        line.startswith("ratio events/s 'PostgreSQL, 4 workers' / 'PostgreSQL, 2 workers': ") and "(goal >= 1: " in line
        for line in lines
    ), output
    assert any(
        line.startswith("server + PostgreSQL CPU per event, 'PostgreSQL, 2 workers': ") and "(goal <= 163 us" in line
        for line in lines
    ), output
    assert "== Profile: 'PostgreSQL, 2 workers' again with cProfile in each worker (2 profiles;" in output
    assert "busy time by package" in output
    assert "ratio latency(10000)/latency(1000):" in output
    assert "listing check (the user's 20 sessions, pinned first, then updated_at descending): OK" in output
    assert "EXPLAIN (ANALYZE, BUFFERS) of LISTING_QUERY at 10000 sessions" in output
    assert "listing plan uses idx_sessions_listing with no Sort node: YES" in output
