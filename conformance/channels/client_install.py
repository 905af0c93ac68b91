"""`copilot-conformance clients install`: the protocols' real clients for an installed suite. The wheel carries their
package.json and package-lock.json (js/clients/, the versions of the repository's own lock); `npm ci` installs
exactly those into the user's cache (node.clients_home()), where node.node_modules() finds them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from conformance.channels.node import CLIENTS, PACKAGES, RealClientUnavailable, clients_home

NPM_TIMEOUT = 600.0  # seconds: a first install downloads some 30 packages


def install() -> Path:
    """Install the pinned clients (again, when asked); the node_modules/ they are in. A failed install leaves the
    previous one, if any, in place (it is built beside it and renamed)."""
    npm = shutil.which("npm")
    if npm is None:
        raise RealClientUnavailable("npm is not on PATH: install Node 20 or newer (npm comes with it)")
    home = clients_home()
    staging = home.with_name(home.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy2(CLIENTS / name, staging / name)
    command = [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"]
    try:
        completed = subprocess.run(command, cwd=staging, capture_output=True, text=True, timeout=NPM_TIMEOUT)
    except subprocess.TimeoutExpired as error:
        raise RealClientUnavailable(f"`npm ci` in {staging} ran past {NPM_TIMEOUT:.0f} s") from error
    if completed.returncode != 0:
        raise RealClientUnavailable(
            f"`npm ci` in {staging} exited with {completed.returncode}:\n{completed.stderr[-3000:]}"
        )
    missing = [package for package in PACKAGES if not (staging / "node_modules" / package).is_dir()]
    if missing:
        raise RealClientUnavailable(f"`npm ci` in {staging} installed no {', '.join(missing)}")
    shutil.rmtree(home, ignore_errors=True)
    staging.rename(home)
    return home / "node_modules"
