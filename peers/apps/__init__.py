"""The peers' apps: each run with a peer's python (`python -m peers.apps.<app> --port P --fake-llm URL`), serving
the reference server's agent with the peer on 127.0.0.1:P, its model the fake LLM at URL over HTTP.

The repository is on PYTHONPATH (peers.serve sets it); the contract and the generated models, installed under
their distinctive names in the project's own environment, are made importable by those names here from the
repository's folders, so that the peer's environment holds third-party packages only.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import socket
import sys
from pathlib import Path

from .. import REPO

# pyproject.toml [tool.setuptools] package-dir: installed name -> repository folder
_RENAMED = {"gns3_copilot_spec": "spec", "gns3_copilot_generated": "generated"}


def _import_renamed() -> None:
    for name, folder in _RENAMED.items():
        if name in sys.modules or importlib.util.find_spec(name) is not None:
            continue
        path = REPO / folder
        spec = importlib.util.spec_from_file_location(
            name, path / "__init__.py", submodule_search_locations=[str(path)]
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)


_import_renamed()


def arguments(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--port", type=int, required=True, help="port on 127.0.0.1")
    parser.add_argument("--fake-llm", required=True, help="the fake LLM's OpenAI base URL, ending in /v1")
    parser.add_argument("--project-dir", type=Path, required=True, help="the agent's tools' project folder")
    return parser.parse_args()


def llm_settings(fake_llm_url: str):
    """The agent's model: the fake LLM over HTTP, through the agent's own OpenAI client (provider "openai")."""
    from reference_server.agent.context import LlmSettings

    return LlmSettings(provider="openai", model="fake-model", temperature=0.0, base_url=fake_llm_url, api_key="unused")


def serve(app, name: str, port: int) -> None:
    """uvicorn on 127.0.0.1:port; prints `<name> listening on URL` once the socket is bound. The peer's own
    warnings and errors (langgraph-openai-serve logs a failed stream only there) go to stderr, which the suite
    keeps as the target's output."""
    import uvicorn

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    print(f"{name} listening on http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2)
    uvicorn.Server(config).run(sockets=[sock])
