"""Resolving a peer's pin list, peers/requirements-<peer>-<version>.txt: never edited by hand.

`python -m peers.pins [peer...]` installs the peer (`name[extras]==version`) and what our agent needs beside it
(`Peer.extra`) into a throw-away virtual environment, constrained by requirements/lock.txt, so that the agent's
own stack (langgraph, langchain-core, langchain-openai, openai, pydantic, ...) is exactly the reference server's
and only the peer differs; then writes its `pip freeze` (without pip, setuptools and wheel). Commit the result;
`peers.install.ensure` installs exactly that list.

A Node peer is pinned by npm itself: its package.json (peers/node/<name>/) names exact versions, and
`npm install --package-lock-only` there rewrites its package-lock.json without installing anything (so no
node_modules lands in the repository). To move a Node peer to other versions, edit its package.json, then run
`python -m peers.pins <name>`; commit both files.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

from . import PEERS, REPO, Peer, get_peer

LOCK = REPO / "requirements" / "lock.txt"
SKIPPED = ("pip==", "setuptools==", "wheel==")


def resolve_node_lock(peer: Peer) -> Path:
    """npm resolves the lock of the package.json's exact versions, writing package-lock.json only."""
    npm = shutil.which("npm") or sys.exit(f"{peer.name} is a Node peer: npm is needed to resolve its lock")
    command = [npm, "install", "--package-lock-only", "--no-audit", "--no-fund", "--ignore-scripts"]
    result = subprocess.run(command, cwd=peer.node_package, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command[1:])} in {peer.node_package} failed:\n{result.stdout}{result.stderr}")
    lock = peer.node_package / "package-lock.json"
    print(f"wrote {lock}")
    return lock


def resolve_pins(peer: Peer) -> Path:
    if peer.runtime == "node":
        return resolve_node_lock(peer)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"peer-{peer.distribution}-pins-") as tmp:
        venv.EnvBuilder(with_pip=True).create(tmp)
        python = str(Path(tmp) / "bin" / "python")
        pip = [python, "-m", "pip", "--disable-pip-version-check"]
        wanted = [peer.requirement, *peer.extra]
        installed = subprocess.run(
            [*pip, "install", "--quiet", "-c", str(LOCK), *wanted], capture_output=True, text=True
        )
        if installed.returncode != 0:
            sys.exit(f"pip install {' '.join(wanted)} -c {LOCK} failed:\n{installed.stdout}{installed.stderr}")
        frozen = subprocess.run([*pip, "freeze", "--all"], check=True, capture_output=True, text=True).stdout
    pins = sorted((line for line in frozen.splitlines() if line and not line.startswith(SKIPPED)), key=str.lower)
    peer.requirements_file.write_text(
        f"# {' '.join(wanted)}\n"
        "# and everything they pulled in, constrained by requirements/lock.txt, as resolved by\n"
        f"# `python -m peers.pins {peer.name}` (peers/pins.py); do not edit by hand.\n" + "\n".join(pins) + "\n",
        encoding="utf-8",
    )
    print(f"wrote {peer.requirements_file} ({len(pins)} packages) in {time.monotonic() - started:.0f} s")
    return peer.requirements_file


if __name__ == "__main__":
    for name in sys.argv[1:] or PEERS:
        resolve_pins(get_peer(name))
