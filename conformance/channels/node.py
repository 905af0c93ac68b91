"""The protocols' real JavaScript clients, run from Python: npm `ai` (UI message stream) and `@ag-ui/client`
(AG-UI), pinned in the repository's package.json and installed by `npm ci` at its root; for an installed suite, at
the same versions (js/clients/package-lock.json), by `copilot-conformance clients install` into the user's cache
(client_install.py).

Each driver is a short `node conformance/channels/js/<name>.mjs` process that reads {"cases": [...]} on stdin and
writes {"results": [...]} on stdout, one result dict per case (the header of each .mjs gives the fields).
Batch the cases of a check into one call: a node start costs about 0.2 s.

    ui-read.mjs      ai: parseJsonEventStream + readUIMessageStream, over a recorded body or a live POST
    ui-chat.mjs      ai: AbstractChat + DefaultChatTransport, as useChat drives it
    ag-ui-run.mjs    @ag-ui/client: HttpAgent's pipeline (verification included) over a recorded body
    ui-validate.mjs  ai: safeValidateUIMessages
    request-bodies.mjs  ai's DefaultChatTransport and @ag-ui/client's HttpAgent: the body each sends, captured

Node missing, the packages not installed, a driver crashing or running past its timeout: RealClientUnavailable,
the suite's own set-up failing (a HarnessError), never the target's fault.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from conformance.errors import HarnessError

JS = Path(__file__).resolve().parent / "js"
DEFAULT_TIMEOUT = 60.0
PACKAGES = ("ai", "@ag-ui/client")


class RealClientUnavailable(HarnessError):
    """A protocol's real client could not be run: the suite's set-up, not the target."""


NODE_MODULES_VARIABLE = "COPILOT_CONFORMANCE_NODE_MODULES"
CLIENTS = JS / "clients"  # package.json and package-lock.json of the clients alone, for an installed suite
# The areas whose checks read a UI message stream or AG-UI answer with its real client, when the target serves it.
AREAS_READ_BY_REAL_CLIENTS = frozenset({"channel_ui", "channel_ag_ui", "channels", "across_channels"})
CHANNELS_READ_BY_REAL_CLIENTS = frozenset({"ui", "ag_ui"})


def needs_real_clients(areas: set[str], channels: set[str]) -> bool:
    """Whether checks of `areas` against a target serving `channels` run a protocol's real JavaScript client."""
    return bool(areas & AREAS_READ_BY_REAL_CLIENTS) and bool(channels & CHANNELS_READ_BY_REAL_CLIENTS)


@cache
def _lock_digest() -> str:
    return hashlib.sha256((CLIENTS / "package-lock.json").read_bytes()).hexdigest()[:12]


def clients_home() -> Path:
    """Where `copilot-conformance clients install` puts the clients: the user's cache, one folder per lock file."""
    from conformance.harness.contract_check import default_cache_dir

    return default_cache_dir() / f"clients-{_lock_digest()}"


def _complete(folder: Path) -> bool:
    return all((folder / package).is_dir() for package in PACKAGES)


def node_modules() -> Path:
    """The node_modules/ holding the pinned clients: the one named by $COPILOT_CONFORMANCE_NODE_MODULES, else one
    above the drivers (a checkout after `npm ci`), else one above the current directory, else the one
    `copilot-conformance clients install` made."""
    named = os.environ.get(NODE_MODULES_VARIABLE)
    if named:
        if _complete(Path(named)):
            return Path(named).resolve()
        raise RealClientUnavailable(f"${NODE_MODULES_VARIABLE} is {named}, which holds no {' and '.join(PACKAGES)}")
    for folder in [*JS.parents, *Path.cwd().resolve().parents, Path.cwd().resolve(), clients_home()]:
        if _complete(folder / "node_modules"):
            return folder / "node_modules"
    raise RealClientUnavailable(
        f"the protocols' real clients ({', '.join(PACKAGES)}) are not installed: run `copilot-conformance clients "
        f"install` once (npm ci of their pinned versions into {clients_home()}; Node 20 or newer)"
    )


def _drivers() -> Path:
    """Where the drivers run from: their own folder when the clients are installed above it; else a copy of them
    beside a link to the node_modules/ found (Node resolves a script's imports from its real location upward)."""
    modules = node_modules()
    if modules.parent in JS.parents:
        return JS
    digest = hashlib.sha256(str(modules).encode() + b"".join(p.read_bytes() for p in sorted(JS.glob("*.mjs"))))
    place = Path(tempfile.gettempdir()) / f"copilot-conformance-js-{digest.hexdigest()[:16]}"
    if not (place / "node_modules").exists():
        place.mkdir(parents=True, exist_ok=True)
        for script in JS.glob("*.mjs"):
            shutil.copy2(script, place / script.name)
        (place / "node_modules").symlink_to(modules, target_is_directory=True)
    return place


def node_executable() -> str:
    node = shutil.which("node")
    if node is None:
        raise RealClientUnavailable("node is not on PATH: the real-client checks need Node 20 or newer")
    return node


def run_driver(script: str, cases: list[dict[str, Any]], timeout: float = DEFAULT_TIMEOUT) -> list[dict[str, Any]]:
    """Run js/<script> over `cases`; one result dict per case, in order (each with the driver's stderr)."""
    drivers = _drivers()
    command = [node_executable(), str(drivers / script)]
    root = node_modules().parent
    try:
        completed = subprocess.run(
            command, input=json.dumps({"cases": cases}), capture_output=True, text=True, timeout=timeout, cwd=root
        )
    except subprocess.TimeoutExpired as error:
        stderr = error.stderr.decode() if isinstance(error.stderr, bytes) else (error.stderr or "")
        raise RealClientUnavailable(
            f"{script} ran past its {timeout} s timeout over {len(cases)} case(s); stderr:\n{stderr[-4000:]}"
        ) from error
    if completed.returncode != 0:
        raise RealClientUnavailable(f"{script} exited with {completed.returncode}; stderr:\n{completed.stderr[-4000:]}")
    try:
        results = json.loads(completed.stdout)["results"]
    except (ValueError, KeyError) as error:
        raise RealClientUnavailable(
            f"{script} wrote no results ({error}); stdout:\n{completed.stdout[-2000:]}\n"
            f"stderr:\n{completed.stderr[-4000:]}"
        ) from error
    if len(results) != len(cases):
        raise RealClientUnavailable(f"{script} returned {len(results)} results for {len(cases)} cases")
    for result in results:
        result.setdefault("stderr", completed.stderr[-4000:])  # the clients log their warnings there
        if result.get("driverError"):
            stderr = completed.stderr[-4000:]
            raise RealClientUnavailable(f"{script} failed on a case: {result['error']}; stderr:\n{stderr}")
    return results
