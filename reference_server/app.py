"""The reference server's application: controller surface + chat API, one `Services` per app."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

import gns3_copilot_spec as spec

from .body_limit import BodyLimit
from .channels.routes import build_channels_router
from .chat.routes import build_router
from .controller.routes import router as controller_router
from .errors import install_handlers
from .playground import build_playground_router
from .services import Services
from .settings import Settings
from .storage_faults import install_storage_fault_handlers


def create_app(settings: Settings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.services = await Services.start(settings)
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
    install_handlers(app)
    app.add_middleware(BodyLimit)  # outermost: 413 before anything else, authentication included (INPUT-010)
    install_storage_fault_handlers(app)  # 503 storage_unavailable / project_unavailable (ERROR-003)
    app.include_router(controller_router)
    app.include_router(build_router(settings.chat_prefix))
    app.include_router(build_channels_router(settings.chat_prefix))  # the same turns, other protocols
    app.include_router(build_playground_router(settings))  # the playground page, /playground (playground.py)
    return app
