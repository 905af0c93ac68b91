"""`python -m peers.install [peer...]`: each peer in its own environment under .cache/peers/<distribution>/.

`ensure(peer)` installs exactly the peer's pins and returns what runs it; it does nothing while the pins are
unchanged (a stamp holds their sha256). A Python peer: its pin list (peers/requirements-<distribution>-<version>.txt)
into the virtual environment venv/, and `ensure` returns its python. A Node peer: `npm ci` of its lock
(peers/node/<name>/package-lock.json, copied with package.json into node/, so that no node_modules is ever written
into the repository), and `ensure` returns node/node_modules. The environment holds only third-party packages: a
Python peer's app imports our agent from the repository (`peers.serve` puts the repository on PYTHONPATH), and a
Node peer's modules are laid out from the working tree for each run (`lay_out_node_app`).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

from conformance.harness.install_lock import installing
from conformance.harness.virtualenvs import create_with, installer

from . import PEERS, REPO, Peer, get_peer

STAMP = ".installed-from"


class InstallError(RuntimeError):
    pass


NODE_PINS = ("package.json", "package-lock.json")


def fingerprint(peer: Peer) -> str:
    if peer.runtime == "node":
        digest = hashlib.sha256()
        for name in NODE_PINS:
            digest.update((peer.node_package / name).read_bytes())
        return digest.hexdigest()
    digest = hashlib.sha256(peer.requirements_file.read_bytes())
    digest.update(sys.version.encode())  # a venv is made for one interpreter
    return digest.hexdigest()


def home(peer: Peer) -> Path:
    """What runs the peer once installed: a Python peer's python, a Node peer's node_modules."""
    return peer.node_home / "node_modules" if peer.runtime == "node" else peer.python


def installed(peer: Peer) -> Path | None:
    """The peer's python (or node_modules) when its environment holds exactly its current pins; None otherwise."""
    stamp = (peer.node_home if peer.runtime == "node" else peer.venv) / STAMP
    if home(peer).exists() and stamp.exists() and stamp.read_text() == fingerprint(peer):
        return home(peer)
    return None


def ensure(peer: Peer | str) -> Path:
    """The peer's environment, (re)installed from its pin list when needed (by one process at a time); its python."""
    peer = get_peer(peer) if isinstance(peer, str) else peer
    if peer.runtime == "node":
        with installing(peer.node_home):
            return _ensure_node(peer)
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
    result = create_with(peer.venv, peer.requirements_file, capture_output=True, text=True)  # uv, or pip
    source = f"{peer.requirement} from {peer.requirements_file.relative_to(REPO)}"
    _installed(peer, installer(), result, peer.venv, source, started)
    return peer.python


def _ensure_node(peer: Peer) -> Path:
    missing = [name for name in NODE_PINS if not (peer.node_package / name).exists()]
    if missing:
        raise InstallError(f"{peer.node_package.relative_to(REPO)} lacks {', '.join(missing)}: see peers/pins.py")
    if (modules := installed(peer)) is not None:
        return modules
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError(f"{peer.name} is a Node peer: Node.js 20 or newer and npm are needed to install it")
    shutil.rmtree(peer.node_home, ignore_errors=True)
    peer.node_home.mkdir(parents=True)
    for name in NODE_PINS:
        shutil.copyfile(peer.node_package / name, peer.node_home / name)
    started = time.monotonic()
    where = peer.node_home.relative_to(REPO)
    print(f"installing {peer.distribution} {peer.version} into {where} (npm ci, once)...", file=sys.stderr, flush=True)
    # --ignore-scripts: the pinned packages are plain JavaScript; nothing of theirs runs at install time.
    command = [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"]
    source = f"{peer.name} from {peer.node_package.relative_to(REPO)}/package-lock.json"
    result = subprocess.run(command, cwd=peer.node_home, capture_output=True, text=True)
    _installed(peer, "npm", result, peer.node_home, source, started)
    return home(peer)


def _installed(
    peer: Peer, tool: str, result: subprocess.CompletedProcess, where: Path, source: str, started: float
) -> None:
    """After `tool` installed `source` into `where`: stamp it with the pin list's fingerprint; on failure remove
    `where` and raise with the installer's own words."""
    if result.returncode != 0:
        shutil.rmtree(where, ignore_errors=True)
        raise InstallError(
            f"installing {source} failed ({tool} exit {result.returncode}; the package registry must be reachable "
            "the first time):\n"
            f"{result.stdout[-3000:]}{result.stderr[-3000:]}"
        )
    (where / STAMP).write_text(fingerprint(peer))
    print(f"installed {peer.distribution} in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)


def lay_out_node_app(peer: Peer, folder: Path) -> Path:
    """A Node peer's modules from the working tree, copied into folder beside a link to its installed node_modules
    (Node resolves packages from a module's own folder upwards, never from the repository's); the server module."""
    modules = installed(peer)
    if modules is None:
        raise InstallError(
            f"{peer.name} is not installed (or its lock changed): run `python3 tasks.py peers --install-only`"
        )
    folder.mkdir(parents=True, exist_ok=True)
    for source in peer.node_package.iterdir():
        if source.is_file() and source.name not in NODE_PINS:
            shutil.copyfile(source, folder / source.name)
    link = folder / "node_modules"
    if not link.is_symlink():
        link.symlink_to(modules, target_is_directory=True)
    return folder / peer.app


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
