"""Servers the suite starts for a run (the fake LLM, and the target when its file says how): each on
127.0.0.1, watched, and stopped by pid (SIGTERM, then SIGKILL after a grace period)."""

from __future__ import annotations

import collections
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from conformance.errors import HarnessError
from conformance.transport.http import tls_context

REPO_ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Process:
    name: str
    popen: subprocess.Popen
    output: collections.deque = field(default_factory=lambda: collections.deque(maxlen=400))

    def drain(self) -> None:
        threading.Thread(target=lambda: self.output.extend(self.popen.stdout), daemon=True).start()

    def tail(self, lines: int = 30) -> str:
        return "".join(list(self.output)[-lines:])

    def stop(self, grace: float = 10, sig: int = signal.SIGTERM) -> int | None:
        """Stop by pid: `sig` (SIGTERM), then SIGKILL when the process is still there after `grace` seconds."""
        if self.popen.poll() is None:
            os.kill(self.popen.pid, sig)
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                os.kill(self.popen.pid, signal.SIGKILL)
                self.popen.wait(10)
        return self.popen.returncode


def _clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """No proxies (loopback only), no tracing, no settings inherited by accident."""
    drop = (
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "LANGCHAIN_TRACING_V2",
        "LANGSMITH_TRACING",
        "LANGCHAIN_API_KEY",
        "LANGSMITH_API_KEY",
        "OPENAI_API_KEY",
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if k.lower() not in drop and k not in drop and not k.startswith("COPILOT_REF_")
    }
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def _wait_until_ready(process: Process, url: str, timeout: float) -> bool:
    """Poll `url` until it answers below 500; False when the process exits or the time is up. One client for every
    poll: httpx.get makes a client, and a TLS context, for each (20 ms of CPU, some 20 times while a server starts on
    a busy machine)."""
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=2, trust_env=False, verify=tls_context()) as client:
        while time.monotonic() < deadline:
            if process.popen.poll() is not None:
                return False
            try:
                if client.get(url).status_code < 500:
                    return True
            except httpx.TransportError:
                pass
            time.sleep(0.05)
    return False


def start_module(
    name: str,
    arguments: list[str],
    *,
    ready_path: str | None = None,
    timeout: float = 30,
    env: dict[str, str] | None = None,
) -> tuple[Process, str]:
    """`python -m ARGUMENTS` for our own servers (fake LLM, reference server, bench), which print
    `... listening on URL ...` as their first line once their socket is bound; returns the process and the URL.
    With `ready_path`, also waits until URL's host answers it (the socket is bound before the app is ready)."""
    popen = subprocess.Popen(
        [sys.executable, "-m", *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=REPO_ROOT,
        env=_clean_env(env),
    )
    process = Process(name, popen)
    line = popen.stdout.readline()
    match = re.search(r"listening on (http://\S+)", line)
    if not match:
        process.stop(1)
        raise HarnessError(f"{name} did not start: {line}{popen.stdout.read()}")
    process.output.append(line)
    process.drain()
    url = match.group(1)
    if ready_path is not None:
        origin = str(httpx.URL(url).copy_with(path="/"))[:-1]
        if not _wait_until_ready(process, origin + ready_path, timeout):
            process.stop(5)
            raise HarnessError(f"{name} never answered {ready_path} within {timeout:g} s:\n{process.tail()}")
    return process, url


# What follows `python -m` to serve the fake LLM. The project's own tests, which make hundreds of runs in their
# process, put there a command that forks it from a process that imported it once (tests/quality/fork_server.py).
fake_llm_module: Callable[[], list[str]] = lambda: ["fake_llm"]  # noqa: E731 - replaced as a whole by the tests


def start_fake_llm(scripts: Path, port: int = 0) -> tuple[Process, str]:
    return start_module(
        "the fake LLM",
        [
            *fake_llm_module(),
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--scripts",
            str(scripts),
            "--log-level",
            "warning",
        ],
    )


def start_target(
    command: list[str], *, env: dict[str, str], base_url: str, ready_path: str, timeout: float, workdir: Path
) -> Process:
    popen = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=workdir, env=_clean_env(env)
    )
    process = Process("target", popen)
    process.drain()
    if _wait_until_ready(process, base_url + ready_path, timeout):
        return process
    if popen.poll() is not None:
        raise HarnessError(f"the target exited with {popen.returncode} before it was ready:\n{process.tail()}")
    process.stop(5)
    raise HarnessError(f"the target was not ready at {base_url + ready_path} within {timeout:g} s:\n{process.tail()}")
