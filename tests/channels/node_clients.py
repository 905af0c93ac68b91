"""The protocols' real JavaScript clients, run from Python: npm `ai` (Vercel AI SDK UI message stream) and
`@ag-ui/client` (AG-UI), pinned in package.json and installed by `npm ci` at the repository root.

Each driver is a short `node tests/channels/js/<name>.mjs` process that reads {"cases": [...]} on stdin and
writes {"results": [...]} on stdout, one result dict per case (see the header of each .mjs for the fields).
Batch the cases of a test into one call: a node start costs about 0.2 s.

    ui_read([{"body": sse_text}, ...])              ai: parseJsonEventStream + readUIMessageStream
    ui_read([{"url": u, "request": {...}, "headers": {...}}])   the same over a live POST
    ui_chat([{"url": u, "token": t, "id": chat_id, "messages": ["hi", ...]}])   ai: AbstractChat + DefaultChatTransport
    ag_ui_run([{"body": sse_text, "threadId": ..., "runId": ..., "messages": [...]}])   @ag-ui/client: HttpAgent
    ui_validate([{"messages": [...]}])              ai: safeValidateUIMessages

Node missing, the packages not installed, a driver crashing or running past its timeout: a pytest failure
(never a skip), with the driver's stderr in the message.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
JS = Path(__file__).resolve().parent / "js"
DEFAULT_TIMEOUT = 60.0


def node_executable() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH: the real-client tests need Node 20 or newer (and `npm ci` at the root)")
    if not (ROOT / "node_modules" / "ai").is_dir() or not (ROOT / "node_modules" / "@ag-ui" / "client").is_dir():
        pytest.fail(f"node_modules/ is missing or incomplete: run `npm ci` in {ROOT}")
    return node


def run_driver(script: str, cases: list[dict[str, Any]], timeout: float = DEFAULT_TIMEOUT) -> list[dict[str, Any]]:
    """Run tests/channels/js/<script> over `cases`; one result dict per case, in order."""
    command = [node_executable(), str(JS / script)]
    try:
        completed = subprocess.run(
            command,
            input=json.dumps({"cases": cases}),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
            check=False,
        )
    except subprocess.TimeoutExpired as error:
        stderr = error.stderr.decode() if isinstance(error.stderr, bytes) else (error.stderr or "")
        pytest.fail(f"{script} ran past its {timeout} s timeout over {len(cases)} case(s); stderr:\n{stderr[-4000:]}")
    if completed.returncode != 0:
        pytest.fail(f"{script} exited with {completed.returncode}; stderr:\n{completed.stderr[-4000:]}")
    try:
        results = json.loads(completed.stdout)["results"]
    except (ValueError, KeyError) as error:
        pytest.fail(
            f"{script} wrote no results ({error}); stdout:\n{completed.stdout[-2000:]}\n"
            f"stderr:\n{completed.stderr[-4000:]}"
        )
    if len(results) != len(cases):
        pytest.fail(
            f"{script} returned {len(results)} results for {len(cases)} cases; stderr:\n{completed.stderr[-4000:]}"
        )
    for result in results:
        # Kept for failure messages: the clients log their warnings (e.g. AG-UI's stripped fields) there.
        result.setdefault("stderr", completed.stderr[-4000:])
        if result.get("driverError"):
            pytest.fail(f"{script} failed on a case: {result['error']}; stderr:\n{completed.stderr[-4000:]}")
    return results


def ui_read(cases: list[dict[str, Any]], timeout: float = DEFAULT_TIMEOUT) -> list[dict[str, Any]]:
    return run_driver("ui-read.mjs", cases, timeout)


def ui_read_body(body: str) -> dict[str, Any]:
    return ui_read([{"body": body}])[0]


def ui_chat(cases: list[dict[str, Any]], timeout: float = DEFAULT_TIMEOUT) -> list[dict[str, Any]]:
    return run_driver("ui-chat.mjs", cases, timeout)


def ag_ui_run(cases: list[dict[str, Any]], timeout: float = DEFAULT_TIMEOUT) -> list[dict[str, Any]]:
    return run_driver("ag-ui-run.mjs", cases, timeout)


def ag_ui_run_body(body: str, **options: Any) -> dict[str, Any]:
    return ag_ui_run([{"body": body, **options}])[0]


def ui_validate(cases: list[dict[str, Any]], timeout: float = DEFAULT_TIMEOUT) -> list[dict[str, Any]]:
    return run_driver("ui-validate.mjs", cases, timeout)
