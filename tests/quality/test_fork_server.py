"""The fork server (tests/quality/fork_server.py): a forked variant serves as its own process would, stops on the
SIGTERM the suite sends its client, ends when its client is killed; a wrong variant name ends the client with the usage
message, a module the fork server does not run with the list of those it does; the fake LLM and the unmodified
reference server, forked, start as `python -m` starts them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conformance.harness.machine_load import stretched
from conformance.harness.processes import free_port

from .fork_server import fork_server, forked

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
    client = _client(tmp_path, "tests.quality.mutant_server", "missing-done", *arguments)
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
    client = _client(tmp_path, "tests.quality.mutant_server", "no-such-variant")
    assert client.wait(stretched(15)) == 1
    assert "usage: python -m tests.quality.mutant_server NAME" in client.stdout.read()


def test_a_module_the_fork_server_does_not_run_ends_its_client_with_the_list(tmp_path):
    client = _client(tmp_path, "os")
    assert client.wait(stretched(15)) == 1
    assert (
        "the fork server runs fake_llm, reference_server, tests.quality.mutant_server; not os" in client.stdout.read()
    )
    with pytest.raises(ValueError, match="not os"):
        forked("os")


@pytest.mark.parametrize(
    ("module", "arguments", "first_line"),
    [
        ("fake_llm", ["serve", "--host", "127.0.0.1", "--port", "0"], "fake-llm listening on http://127.0.0.1:"),
        ("reference_server", ["--host", "127.0.0.1", "--port", "0"], "reference server listening on http://127.0.0.1:"),
    ],
)
def test_the_fake_llm_and_the_reference_server_start_forked_as_python_m_starts_them(
    tmp_path, module, arguments, first_line
):
    extra = ["--data-dir", str(tmp_path / "data")] if module == "reference_server" else []
    client = _client(tmp_path, module, *arguments, *extra)
    try:
        assert client.stdout.readline().startswith(first_line)
    finally:
        client.terminate()
    client.wait(stretched(15))  # ended by the SIGTERM, as the suite stops it (its code is not judged by the suite)
