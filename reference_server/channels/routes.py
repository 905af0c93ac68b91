"""Every channel's routes, beside the GNS3 chat API and under the same chat prefix (CHANNEL-001), and the error shape
of the channels whose protocol has its own error body."""

from __future__ import annotations

from fastapi import APIRouter

from gns3_copilot_generated.constants import CHANNEL_PATHS
from reference_server.errors import ErrorShapes

from . import ag_ui, openai_chat, openai_responses, ui_stream
from .openai_common import render_openai_error

OPENAI_PATH_MARKER = CHANNEL_PATHS["openai"] + "/"


# Every refusal under the OpenAI paths, from authentication to the body limit and the last resort, in OpenAI's error
# body (OPENAI-004); the UI and AG-UI channels keep the contract's error body (CHANNEL-005). Read by create_app, which
# gives them to the app it builds (errors.install_handlers): a variant may add shapes before.
ERROR_SHAPES: ErrorShapes = ((OPENAI_PATH_MARKER, render_openai_error),)

# Included by the app under the chat prefix (app.py), as the chat API's router is.
router = APIRouter(tags=["Channels"])
for protocol in (openai_chat, openai_responses, ui_stream, ag_ui):
    router.include_router(protocol.router)
