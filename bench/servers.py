"""Servers in their own processes on 127.0.0.1 with a free port: started, waited for, stopped by pid."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO_ROOT = Path(__file__).resolve().parent.parent
LISTENING = re.compile(r"listening on (http://\S+)")


@dataclass
class ServerProcess:
    name: str
    process: subprocess.Popen
    base_url: str
    output: list[str]

    def stop(self, timeout: float = 10) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout)


def _drain(stream, into: list[str]) -> None:
    """Keep reading the server's output so that a full pipe never blocks it."""
    for line in stream:
        into.append(line)
        del into[:-200]


def start(name: str, module: str, *args: str, ready_path: str) -> ServerProcess:
    """`python -m module --host 127.0.0.1 --port 0 ...`; it prints `... listening on http://HOST:PORT ...`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COPILOT_REF_")}
    process = subprocess.Popen(
        [sys.executable, "-m", module, "--host", "127.0.0.1", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=REPO_ROOT,
        env=env,
    )
    line = process.stdout.readline()
    match = LISTENING.search(line)
    if not match:
        process.kill()
        raise RuntimeError(f"{name} did not start: {line}{process.stdout.read()}")
    output: list[str] = [line]
    threading.Thread(target=_drain, args=(process.stdout, output), daemon=True).start()
    server = ServerProcess(name, process, match.group(1), output)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the socket is bound before the app's lifespan has completed
        try:
            if httpx.get(server.base_url + ready_path, timeout=1).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        if process.poll() is not None:
            break
        time.sleep(0.05)
    server.stop()
    raise RuntimeError(f"{name} never answered {ready_path}: {''.join(output)}")


def start_reference(data_dir: Path, scripts_dir: Path) -> ServerProcess:
    return start(
        "reference server",
        "reference_server",
        "--data-dir",
        str(data_dir),
        "--fake-llm-scripts",
        str(scripts_dir),
        "--log-level",
        "warning",
        ready_path="/v3/version",
    )


def start_bare_sse(frames_dir: Path) -> ServerProcess:
    return start("bare FastAPI SSE", "bench.bare_sse", "--frames-dir", str(frames_dir), ready_path="/ready")
