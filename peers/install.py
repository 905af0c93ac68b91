"""`python -m peers.install [peer...]`: each peer in its own virtual environment, .cache/peers/<peer>/venv.

`ensure(peer)` installs exactly the peer's pin list (peers/requirements-<peer>-<version>.txt) and returns the
environment's python; it does nothing while the list is unchanged (a stamp holds its sha256). The environment
holds only third-party packages: the peer's app imports our agent from the repository (`peers.serve` puts the
repository on PYTHONPATH), so it always runs the agent of the working tree.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path

from conformance.harness.install_lock import installing

from . import PEERS, REPO, Peer, get_peer

STAMP = ".installed-from"


class InstallError(RuntimeError):
    pass


def fingerprint(peer: Peer) -> str:
    digest = hashlib.sha256(peer.requirements_file.read_bytes())
    digest.update(sys.version.encode())  # a venv is made for one interpreter
    return digest.hexdigest()


def installed(peer: Peer) -> Path | None:
    """The peer's python when its environment holds exactly its current pin list; None otherwise."""
    stamp = peer.venv / STAMP
    if peer.python.exists() and stamp.exists() and stamp.read_text() == fingerprint(peer):
        return peer.python
    return None


def ensure(peer: Peer | str) -> Path:
    """The peer's environment, (re)installed from its pin list when needed (by one process at a time); its python."""
    peer = get_peer(peer) if isinstance(peer, str) else peer
    with installing(peer.venv):
        return _ensure(peer)


def _ensure(peer: Peer) -> Path:
    if not peer.requirements_file.exists():
        raise InstallError(
            f"{peer.requirements_file.relative_to(REPO)} is missing: run `python -m peers.pins {peer.name}`"
        )
    if (python := installed(peer)) is not None:
        return python
    shutil.rmtree(peer.venv, ignore_errors=True)
    started = time.monotonic()
    where = peer.venv.relative_to(REPO)
    print(f"installing {peer.requirement} into {where} (once; under a minute)...", file=sys.stderr, flush=True)
    venv.EnvBuilder(with_pip=True).create(peer.venv)
    command = [str(peer.python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    result = subprocess.run([*command, "-r", str(peer.requirements_file)], capture_output=True, text=True)
    if result.returncode != 0:
        shutil.rmtree(peer.venv, ignore_errors=True)
        raise InstallError(
            f"installing {peer.requirement} from {peer.requirements_file.relative_to(REPO)} failed "
            f"(pip exit {result.returncode}; the package registry must be reachable the first time):\n"
            f"{result.stdout[-3000:]}{result.stderr[-3000:]}"
        )
    (peer.venv / STAMP).write_text(fingerprint(peer))
    print(f"installed {peer.distribution} in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return peer.python


def main(names: list[str]) -> int:
    try:
        for name in names or PEERS:
            print(ensure(get_peer(name)))
    except (InstallError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
