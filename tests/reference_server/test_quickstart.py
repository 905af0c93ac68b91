"""The README's quick start, run as written: only the port and the data directory are swapped."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def quick_start_block() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("### Quick start", 1)[1]
    return re.search(r"```sh\n(.*?)```", section, flags=re.S).group(1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.covers("FRAME-001", "SESSION-001", "LIST-001", "TITLE-002")
def test_the_quick_start_runs(tmp_path):
    block = quick_start_block()
    port = free_port()
    script = block.replace("BASE=http://127.0.0.1:3080", f"BASE=http://127.0.0.1:{port}")
    assert script != block, "the quick start no longer sets BASE=http://127.0.0.1:3080"
    script = "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + script  # never leave the server behind
    env = {
        **os.environ,
        "COPILOT_REF_PORT": str(port),
        "COPILOT_REF_DATA_DIR": str(tmp_path / "data"),
        "COPILOT_REF_LOG_LEVEL": "warning",
    }
    env["PATH"] = f"{Path(README.parent, '.venv', 'bin')}:{env['PATH']}"
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=README.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr + result.stdout
    lines = result.stdout.splitlines()
    events = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
    assert [e["type"] for e in events][-3:] == ["content", "content", "done"]
    assert "tool_start" in [e["type"] for e in events]
    sessions = json.loads(next(line for line in lines if line.startswith("[")))
    assert [(s["title"], s["message_count"], s["llm_calls_count"]) for s in sessions] == [("Topology overview", 4, 3)]
