"""Storage faults as the contract's answers (ERROR-003).

A disk that cannot be written (full, read-only, or the server's own files made unwritable) answers 503
`storage_unavailable`; a project database that cannot be read (corrupt, or not SQLite) answers 503
`project_unavailable` for that project only. Any other exception is left to the server's other handlers.
"""

from __future__ import annotations

import errno
import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from .errors import ApiError, shapes_of

log = logging.getLogger(__name__)

# SQLite's primary result codes; the extended ones (SQLITE_IOERR_WRITE, SQLITE_READONLY_DBMOVED...) start with them.
# On a full disk SQLite says SQLITE_FULL, or SQLITE_IOERR when the WAL's first write already fails.
_STORAGE_CODES = ("SQLITE_FULL", "SQLITE_READONLY", "SQLITE_IOERR", "SQLITE_CANTOPEN")
_CORRUPT_CODES = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
_STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}


def _sqlite_code(exc: BaseException) -> str:
    return (getattr(exc, "sqlite_errorname", None) or "") if isinstance(exc, sqlite3.Error) else ""


def storage_fault(exc: BaseException) -> str | None:
    """Why storage cannot be written, when `exc` says so; None for any other failure."""
    if _sqlite_code(exc).startswith(_STORAGE_CODES):
        return str(exc)
    if isinstance(exc, OSError) and exc.errno in _STORAGE_ERRNOS:
        return exc.strerror or str(exc)
    return None


def corruption(exc: BaseException) -> str | None:
    """Why a database cannot be read at all (corrupt, or not SQLite), when `exc` says so."""
    return str(exc) if _sqlite_code(exc).startswith(_CORRUPT_CODES) else None


class ProjectUnavailable(Exception):
    """A project whose database cannot be opened or read: it answers 503, every other project keeps working."""

    def __init__(self, project_id: str, reason: str) -> None:
        super().__init__(f"The database of project {project_id} cannot be used: {reason}")
        self.project_id, self.reason = project_id, reason


@contextmanager
def project_database(project_id: str) -> Iterator[None]:
    """Name the project whose database turned out corrupt, so that the answer is that project's 503."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        if (reason := corruption(exc)) is None:
            raise
        raise ProjectUnavailable(project_id, reason) from exc


def install_storage_fault_handlers(app: FastAPI) -> None:
    async def unavailable(request: Request, exc: Exception) -> JSONResponse:
        if isinstance(exc, ProjectUnavailable):
            log.error("%s %s: %s", request.method, request.url.path, exc)
            return ApiError(503, "project_unavailable", str(exc)).response(request.url.path, shapes_of(request.app))
        if isinstance(exc, sqlite3.Error):  # a write of the controller's that failed half-way holds its lock
            await request.app.state.services.store.abandon_failed_write()
        reason = storage_fault(exc)
        if reason is None:
            raise exc  # not a storage fault: the server's own error, as before
        log.error("%s %s: storage is not writable: %s", request.method, request.url.path, reason)
        return ApiError(503, "storage_unavailable", f"Storage is not writable: {reason}").response(
            request.url.path, shapes_of(request.app)
        )

    for kind in (ProjectUnavailable, sqlite3.Error, OSError):
        app.add_exception_handler(kind, unavailable)
