"""What every controller route module shares: the authenticated caller and the application's services."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from reference_server.auth import Caller, authenticated

Authenticated = Annotated[Caller, Depends(authenticated)]


def services_of(request: Request):
    return request.app.state.services
