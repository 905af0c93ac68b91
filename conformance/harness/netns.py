"""A loopback-only network namespace, for the runners that start third-party servers (conformance.gns3.run,
peers.run): `unshare -rn` makes a user and network namespace whose only interface, loopback, is brought up with
`ip link set lo up`; nothing started inside can reach anything but 127.0.0.1. A runner re-runs itself inside one
(`rerun_inside`) and, there, knows it is inside (`inside`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MARKER = "COPILOT_NETNS"  # set to the module's name on its re-run inside the namespace
# What runs first inside the namespace: loopback up, then the module (`sh -c ENTER python -m module args...`).
ENTER = 'ip link set lo up && exec "$0" "$@"'


def network_namespace_available() -> bool:
    """Whether a loopback-only namespace can be made here: `unshare` and `ip` exist and the kernel lets this user."""
    if not shutil.which("unshare") or not shutil.which("ip"):
        return False
    probe = subprocess.run(["unshare", "-rn", "ip", "link", "set", "lo", "up"], capture_output=True)
    return probe.returncode == 0


def inside(module: str) -> bool:
    """Whether this process is `module` re-run inside its namespace by rerun_inside."""
    return os.environ.get(MARKER) == module


def rerun_inside(module: str, args: list[str], *, why: str) -> int:
    """`python -m module ARGS` again, inside a new loopback-only namespace, from the repository's root; its exit
    code. Where no namespace can be made, exits saying so and `why` the runner needs one."""
    if not network_namespace_available():
        sys.exit(f"cannot create a network namespace (`unshare -rn` with `ip`): {why}")
    command = ["unshare", "-rn", "sh", "-c", ENTER, sys.executable, "-m", module, *args]
    return subprocess.run(command, env={**os.environ, MARKER: module}, cwd=REPO).returncode
