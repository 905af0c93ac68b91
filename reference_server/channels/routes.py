"""Every channel's routes under the chat prefix, beside the GNS3 chat API (CHANNEL-001)."""

from __future__ import annotations

from fastapi import APIRouter

from gns3_copilot_generated.constants import CHANNEL_PATHS
from reference_server.errors import ErrorShapes

from .ag_ui import build_ag_ui_router
from .openai_chat import build_openai_router
from .openai_common import render_openai_error
from .openai_responses import build_responses_router
from .ui_stream import build_ui_router

OPENAI_PATH_MARKER = CHANNEL_PATHS["openai"] + "/"


# Every refusal under the OpenAI paths, from authentication to the body limit and the last resort, in OpenAI's error
# body (OPENAI-004); the UI and AG-UI channels keep the contract's error body (CHANNEL-005). The app owns them.
ERROR_SHAPES: ErrorShapes = ((OPENAI_PATH_MARKER, render_openai_error),)


def build_channels_router(prefix: str) -> APIRouter:
    router = APIRouter(prefix=prefix, tags=["Channels"])
    router.include_router(build_openai_router())
    router.include_router(build_responses_router())
    router.include_router(build_ui_router())
    router.include_router(build_ag_ui_router())
    return router
