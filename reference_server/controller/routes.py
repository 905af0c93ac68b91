"""The controller surface around the chat API, shaped like gns3-server's (see ../shared notes' runbook): one
router of the modules that each serve one part of it."""

from __future__ import annotations

from fastapi import APIRouter

from . import acl, llm_configs, projects, users

router = APIRouter()
for part in (users, acl, projects, llm_configs):
    router.include_router(part.router)
