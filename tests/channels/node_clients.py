"""The protocols' real JavaScript clients for the channel tests: conformance/channels/node.py's drivers, with
anything that keeps them from running (Node missing, `npm ci` not run, a driver crash) a pytest failure, never a
skip.

    ui_read([{"body": sse_text}, ...])              ai: parseJsonEventStream + readUIMessageStream
    ui_read([{"url": u, "request": {...}, "headers": {...}}])   the same over a live POST
    ui_chat([{"url": u, "token": t, "id": chat_id, "messages": ["hi", ...]}])   ai: AbstractChat + DefaultChatTransport
    ag_ui_run([{"body": sse_text, "threadId": ..., "runId": ..., "messages": [...]}])   @ag-ui/client: HttpAgent
    ui_validate([{"messages": [...]}])              ai: safeValidateUIMessages
    request_bodies([{"protocol": "ui", "id": chat_id, "text": "hi", ...}, {"protocol": "ag_ui", ...}])
                                                    the body DefaultChatTransport / HttpAgent sends, captured
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.channels.node import DEFAULT_TIMEOUT, RealClientUnavailable
from conformance.channels.node import run_driver as _run_driver


def run_driver(script: str, cases: list[dict[str, Any]], timeout: float = DEFAULT_TIMEOUT) -> list[dict[str, Any]]:
    try:
        return _run_driver(script, cases, timeout)
    except RealClientUnavailable as error:
        pytest.fail(str(error))


def ui_read(cases: list[dict[str, Any]], timeout: float = DEFAULT_TIMEOUT) -> list[dict[str, Any]]:
    return run_driver("ui-read.mjs", cases, timeout)


def ui_chat(cases: list[dict[str, Any]], timeout: float = DEFAULT_TIMEOUT) -> list[dict[str, Any]]:
    return run_driver("ui-chat.mjs", cases, timeout)


def ag_ui_run(cases: list[dict[str, Any]], timeout: float = DEFAULT_TIMEOUT) -> list[dict[str, Any]]:
    return run_driver("ag-ui-run.mjs", cases, timeout)


def ui_validate(cases: list[dict[str, Any]], timeout: float = DEFAULT_TIMEOUT) -> list[dict[str, Any]]:
    return run_driver("ui-validate.mjs", cases, timeout)


def request_bodies(cases: list[dict[str, Any]], timeout: float = DEFAULT_TIMEOUT) -> list[dict[str, Any]]:
    return run_driver("request-bodies.mjs", cases, timeout)
