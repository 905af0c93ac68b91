"""Every channel's routes under the chat prefix, beside the GNS3 chat API (CHANNEL-001)."""

from __future__ import annotations

import importlib

from fastapi import APIRouter

from reference_server.errors import register_error_shape

OPENAI_PATH_MARKER = "/openai/v1/"


def build_channels_router(prefix: str) -> APIRouter:
    router = APIRouter(prefix=prefix, tags=["Channels"])
    # INTEGRATION-PENDING: modules are being written; this tolerance is removed when all three exist.
    for module, factory in (
        ("openai_chat", "build_openai_router"),
        ("ui_stream", "build_ui_router"),
        ("ag_ui", "build_ag_ui_router"),
    ):
        try:
            built = getattr(importlib.import_module(f"reference_server.channels.{module}"), factory)
        except (ModuleNotFoundError, AttributeError, ImportError):
            continue
        router.include_router(built())
    try:
        from .openai_common import render_openai_error

        # Every refusal under the OpenAI paths, from authentication to the body limit, in OpenAI's error body
        # (OPENAI-004); the UI and AG-UI channels keep the contract's error body (CHANNEL-005).
        register_error_shape(OPENAI_PATH_MARKER, lambda e: render_openai_error(e.status, e.code, e.message))
    except ImportError:
        pass
    return router
