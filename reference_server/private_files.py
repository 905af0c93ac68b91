"""The server's files hold password hashes, sealed API keys and chats: folders 0700 and files 0600 when the server
creates them, whatever the umask (mkdir's and open's modes are masked by it, chmod's are not)."""

from __future__ import annotations

import os
from pathlib import Path

DIR_MODE, FILE_MODE = 0o700, 0o600


def private_dir(path: Path) -> Path:
    """`path` and its missing parents, created 0700; folders that exist already keep their mode."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    path.mkdir(parents=True, exist_ok=True)
    for created in reversed(missing):
        os.chmod(created, DIR_MODE)
    return path


def private_file(path: Path) -> Path:
    """An empty file created 0600 unless it exists: SQLite gives a database's -wal, -shm and -journal files the
    database file's mode, so a database is created this way before the first connection."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return path
    os.fchmod(fd, FILE_MODE)
    os.close(fd)
    return path


def write_private(path: Path, text: str) -> None:
    """Write a text file with mode 0600."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        os.fchmod(fd, FILE_MODE)
        handle.write(text)
