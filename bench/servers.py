"""Servers in their own processes on 127.0.0.1 with a free port: started, waited for, stopped by pid."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from conformance.harness.processes import Process, free_port, start_fake_llm, start_module


@dataclass
class ServerProcess:
    name: str
    handle: Process
    base_url: str

    def stop(self, timeout: float = 10) -> None:
        self.handle.stop(timeout)


def start(name: str, module: str, *args: str, ready_path: str) -> ServerProcess:
    """`python -m module --host 127.0.0.1 --port 0 ...`; it prints `... listening on http://HOST:PORT ...`."""
    handle, url = start_module(name, [module, "--host", "127.0.0.1", "--port", "0", *args], ready_path=ready_path)
    return ServerProcess(name, handle, url)


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


def start_fake_llm_server(scripts_dir: Path) -> ServerProcess:
    """`python -m fake_llm serve --scripts DIR`; its base_url is the OpenAI base URL (ending in /v1)."""
    handle, url = start_fake_llm(scripts_dir)
    return ServerProcess("fake LLM", handle, url)


def start_peer(peer: str, fake_llm_url: str, workdir: Path, *, ready_path: str) -> ServerProcess:
    """`python -m peers.serve PEER` (peers/): our agent served by a third-party server on 127.0.0.1, its model the
    fake LLM over HTTP. It starts only inside a loopback-only network namespace."""
    arguments = ["peers.serve", peer, "--port", str(free_port()), "--fake-llm", fake_llm_url, "--workdir", str(workdir)]
    handle, url = start_module(peer, arguments, ready_path=ready_path, timeout=120)
    return ServerProcess(peer, handle, url)
