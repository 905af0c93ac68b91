"""The controller surface around the chat API, shaped like gns3-server's (see ../shared notes' runbook): one
router of the modules that each serve one part of it. The part a chat client relies on is in the contract
(openapi.yaml, tag `controller`: CONTROLLER-001); the rest (users, roles, ACL) is what the suite provisions with."""

from __future__ import annotations

from fastapi import APIRouter

from . import acl, llm_configs, projects, users

router = APIRouter()
for part in (users, acl, projects, llm_configs):
    router.include_router(part.router)
