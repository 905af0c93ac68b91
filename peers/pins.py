"""Resolving a peer's pin list, peers/requirements-<peer>-<version>.txt: never edited by hand.

`python -m peers.pins [peer...]` installs the peer (`name[extras]==version`) and what our agent needs beside it
(`Peer.extra`) into a throw-away virtual environment, constrained by requirements/lock.txt, so that the agent's
own stack (langgraph, langchain-core, langchain-openai, openai, pydantic, ...) is exactly the reference server's
and only the peer differs; then writes its `pip freeze` (without pip, setuptools and wheel). Commit the result;
`peers.install.ensure` installs exactly that list.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

from . import PEERS, REPO, Peer, get_peer

LOCK = REPO / "requirements" / "lock.txt"
SKIPPED = ("pip==", "setuptools==", "wheel==")


def resolve_pins(peer: Peer) -> Path:
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
