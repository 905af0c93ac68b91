"""The fork server of the variant servers (tests/quality/fork_server.py): a forked variant serves as its own process
would, stops on the SIGTERM the suite sends its client, ends when its client is killed, and a wrong variant name
ends the client with the usage message."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from conformance.harness.machine_load import stretched
from conformance.harness.processes import free_port

from .fork_server import fork_server

REPO = Path(__file__).resolve().parents[2]


def _client(tmp_path, *args: str) -> subprocess.Popen:
    socket_path = fork_server()
    assert socket_path is not None
    command = [sys.executable, "-m", "tests.quality.fork_client", socket_path, *args]
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
    }  # as the suite starts it (runs.mutant_target), from a folder of its own
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path, env=env)


def _variant(tmp_path, port: int) -> subprocess.Popen:
    arguments = ["--host", "127.0.0.1", "--port", str(port), "--data-dir", str(tmp_path / "data")]
    client = _client(tmp_path, "missing-done", *arguments)
    first = client.stdout.readline()
    if "reference server listening on" not in first:
        client.kill()
        raise AssertionError(f"the forked variant did not start: {first}{client.stdout.read()}")
    return client


def _serving(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v3/version", timeout=2) as answer:
            return answer.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _becomes(port: int, serving: bool) -> bool:
    deadline = time.monotonic() + stretched(10)
    while _serving(port) != serving and time.monotonic() < deadline:
        time.sleep(0.1)
    return _serving(port) == serving


def _served_then_stopped(tmp_path, stop) -> subprocess.Popen:
    """A variant that serves, then `stop` applied to its client (whatever the assertions did); the client, ended."""
    port = free_port()
    client = _variant(tmp_path, port)
    try:
        assert _becomes(port, serving=True)
    finally:
        stop(client)
    client.wait(stretched(15))
    assert _becomes(port, serving=False)
    return client


def test_a_forked_variant_serves_and_stops_on_sigterm(tmp_path):
    client = _served_then_stopped(tmp_path, subprocess.Popen.terminate)
    assert "Application shutdown complete" in client.stdout.read()  # the variant's own graceful end, seen by us


def test_a_forked_variant_ends_when_its_client_is_killed(tmp_path):
    _served_then_stopped(tmp_path, subprocess.Popen.kill)


def test_an_unknown_variant_ends_its_client_with_the_usage(tmp_path):
    client = _client(tmp_path, "no-such-variant")
    assert client.wait(stretched(15)) == 1
    assert "usage: python -m tests.quality.mutant_server NAME" in client.stdout.read()
