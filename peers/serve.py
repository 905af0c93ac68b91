"""`python -m peers.serve <peer> --port P --fake-llm URL --workdir W`: become the peer serving our agent.

The start command of a peer's target file (peers/targets/): checks that it runs inside a loopback-only network
namespace and that the peer's environment is installed, then execs `python -m peers.apps.<app>` of that
environment (with the repository on PYTHONPATH), so the pid the suite started is the server's, and stopping it
stops everything. The app listens on 127.0.0.1:P; the agent's tools keep their project in W/<peer>/project.
A Node peer execs `node` on its server module instead, laid out with its installed packages in W/<peer>/app
(`peers.install.lay_out_node_app`), with the same arguments.
"""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import click

from . import PEERS, REPO, get_peer
from .install import installed, lay_out_node_app


def loopback_only() -> bool:
    """True inside a network namespace whose only interface is loopback (`unshare -rn`)."""
    return [name for _, name in socket.if_nameindex()] == ["lo"]


@click.command()
@click.argument("peer", type=click.Choice(list(PEERS)))
@click.option("--port", required=True, type=click.IntRange(1, 65535))
@click.option("--fake-llm", "fake_llm", required=True, help="The fake LLM's OpenAI base URL (ending in /v1).")
@click.option("--workdir", required=True, type=click.Path(path_type=Path, file_okay=False))
def main(peer: str, port: int, fake_llm: str, workdir: Path) -> None:
    chosen = get_peer(peer)
    if not loopback_only():
        raise click.ClickException(
            f"{peer} runs only inside a network namespace with loopback only; this one has "
            f"{', '.join(name for _, name in socket.if_nameindex())}. Run it through `python3 tasks.py peers` "
            "(or inside `unshare -rn` after `ip link set lo up`, with the suite and the fake LLM)"
        )
    python = installed(chosen)
    if python is None:
        where = chosen.node_home if chosen.runtime == "node" else chosen.venv
        raise click.ClickException(
            f"{chosen.requirement} is not installed (or its pins changed) in {where}: "
            "run `python3 tasks.py peers --install-only` (needs the package registry once)"
        )
    project = workdir.resolve() / chosen.name / "project"
    project.mkdir(parents=True, exist_ok=True)
    if chosen.runtime == "node":
        node = shutil.which("node")
        if node is None:
            raise click.ClickException(f"{peer} is a Node peer: Node.js 20 or newer is needed")
        server = lay_out_node_app(chosen, workdir.resolve() / chosen.name / "app")
        argv = [node, str(server), "--port", str(port), "--fake-llm", fake_llm, "--project-dir", str(project)]
        os.execve(node, argv, dict(os.environ))
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{path}" if path else str(REPO)}
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # nothing written into the repository by the peer's interpreter
    argv = [str(python), "-m", chosen.app, "--port", str(port), "--fake-llm", fake_llm, "--project-dir", str(project)]
    os.execve(python, argv, env)


if __name__ == "__main__":
    main()
