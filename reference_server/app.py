"""The reference server's application: controller surface + chat API, one `Services` per app."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

import gns3_copilot_spec as spec

from . import playground
from .body_limit import BodyLimit
from .channels import routes as channel_routes
from .chat import routes as chat_routes
from .controller import routes as controller_routes
from .errors import install_handlers
from .services import Services
from .settings import Settings
from .storage_faults import install_storage_fault_handlers


class NameTheWorker:
    """`X-Copilot-Worker: <pid>` on every answer of a worker of several: which process answered, how a test shows
    that two requests reached two workers. Plain ASGI, so that streams pass through untouched."""

    def __init__(self, app) -> None:
        self.app, self.worker = app, str(os.getpid()).encode()  # built in the forked worker itself

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def named(message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"x-copilot-worker", self.worker)]}
            await send(message)

        await self.app(scope, receive, named)


# The answers' own headers a browser page may read: the UI message stream's marker, the retry hint of a refusal and
# the worker that served it (with several workers).
EXPOSED_HEADERS = ["x-vercel-ai-ui-message-stream", "x-should-retry", "x-copilot-worker"]


def create_app(settings: Settings, *, prepared: bool = False) -> FastAPI:
    """`prepared`: a worker of several, whose databases the supervisor prepared (workers.py)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.services = await Services.start(settings, prepare=not prepared)
        try:
            yield
        finally:
            await app.state.services.stop()

    app = FastAPI(
        title="GNS3 Copilot Chat API: reference server",
        version=spec.contract_version(),
        description="Implements spec/openapi.yaml; the contract is spec/, not this app's generated OpenAPI.",
        lifespan=lifespan,
    )
    install_handlers(app, channel_routes.ERROR_SHAPES)  # read at build time: a variant may add shapes
    if settings.workers > 1:
        app.add_middleware(NameTheWorker)
    app.add_middleware(BodyLimit)  # 413 before anything else, authentication included (INPUT-010)
    if settings.cors_origin:  # outermost: a refused answer (401, 413) still carries the headers a browser needs
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origin,
            allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
            allow_headers=["*"],  # Authorization and Content-Type, and what a protocol's client adds
            expose_headers=EXPOSED_HEADERS,
            max_age=600,
        )
    install_storage_fault_handlers(app)  # 503 storage_unavailable / project_unavailable (ERROR-003)
    # Every router is a module's `router`, built when it is imported; the app gives the chat API and the channels the
    # configured prefix (PREFIX-001, CHANNEL-001).
    app.include_router(controller_routes.router)
    app.include_router(chat_routes.router, prefix=settings.chat_prefix)
    app.include_router(channel_routes.router, prefix=settings.chat_prefix)  # the same turns, other protocols
    app.include_router(playground.router)  # the playground page, /playground (playground.py)
    return app
