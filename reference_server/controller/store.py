"""The controller's own database: users, projects and per-user LLM configurations (not the chat data)."""

from __future__ import annotations

import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiosqlite

from reference_server.private_files import private_dir, private_file
from reference_server.timestamps import utc_now

from .roles import ACCESS_SCHEMA

SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    user_id TEXT PRIMARY KEY,
    username TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    full_name TEXT,
    email TEXT,
    is_superadmin BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TEXT NOT NULL,
    is_active BOOLEAN NOT NULL DEFAULT TRUE,
    token_version INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS revoked_tokens (
    token_id TEXT PRIMARY KEY,
    expires_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS projects (
    project_id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL CHECK (status IN ('opened', 'closed')),
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS llm_model_configs (
    config_id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(user_id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    model_type TEXT NOT NULL,
    provider TEXT NOT NULL,
    base_url TEXT,
    model TEXT NOT NULL,
    temperature REAL NOT NULL,
    max_tokens INTEGER,
    api_key_sealed TEXT,
    context_limit INTEGER,
    copilot_mode TEXT,
    is_default BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
"""
SCHEMA += ACCESS_SCHEMA  # roles, privileges and access control entries (controller/access.py)


@dataclass(frozen=True)
class User:
    user_id: str
    username: str
    password_hash: str
    full_name: str | None
    email: str | None
    is_superadmin: bool
    created_at: str
    is_active: bool = True  # false: its tokens and its logins are refused until a superadmin reactivates it
    token_version: int = 0  # the `ver` of its valid tokens, as in gns3-server: a password change bumps it

    def public(self) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "username": self.username,
            "full_name": self.full_name,
            "email": self.email,
            "is_active": self.is_active,
            "is_superadmin": self.is_superadmin,
            "created_at": self.created_at,
        }


@dataclass(frozen=True)
class Project:
    project_id: str
    name: str
    status: str
    created_at: str


class Conflict(Exception):
    pass


BUSY_TIMEOUT_MS = 30_000


class ControllerStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: aiosqlite.Connection | None = None

    async def open(self) -> None:
        private_dir(self.path.parent)
        private_file(self.path)  # password hashes and sealed keys: 0600, and so its -wal and -shm files
        # Autocommit: every write is one statement, committed as it runs, so that no transaction stays open across
        # an await while other coroutines use this connection (under load one held the write lock for seconds,
        # and the other workers' writes failed with "database is locked").
        self._db = await aiosqlite.connect(self.path, isolation_level=None)
        try:
            self._db.row_factory = aiosqlite.Row
            # Several workers share this file (--workers): in WAL mode their reads never block a write, and a
            # write waits for another's rather than failing at once with "database is locked".
            await self._db.execute("PRAGMA journal_mode = WAL")
            await self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            await self._db.execute("PRAGMA foreign_keys = ON")
            await self._db.executescript(SCHEMA)  # a corrupt file, or not SQLite, fails here
            await self._upgrade()
            await self._db.commit()
        except BaseException:
            await self.close()  # its thread is not a daemon: left open, the process would never exit
            raise

    # Columns added since the first schema, by table: CREATE TABLE IF NOT EXISTS leaves an existing table as it was.
    _ADDED_COLUMNS = {
        "users": {"is_active": "BOOLEAN NOT NULL DEFAULT TRUE", "token_version": "INTEGER NOT NULL DEFAULT 0"},
    }

    async def _upgrade(self) -> None:
        """A controller.db made by an older version gets the columns it lacks (their defaults fill its rows)."""
        for table, columns in self._ADDED_COLUMNS.items():
            present = {row["name"] for row in await self._rows(f"PRAGMA table_info({table})")}
            for column, declaration in columns.items():
                if column not in present:
                    await self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")

    async def abandon_failed_write(self) -> None:
        """After a request failed inside a write: roll back the transaction it left open on the shared connection,
        which would otherwise hold the database's write lock and refuse every other worker's writes."""
        if self._db is not None and self._db.in_transaction:
            await self._db.rollback()

    async def close(self) -> None:
        if self._db is not None:
            await self._db.close()
            self._db = None

    @property
    def db(self) -> aiosqlite.Connection:
        assert self._db is not None, "ControllerStore.open() was not awaited"
        return self._db

    async def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[aiosqlite.Row]:
        """A whole read in one call: no statement stays open across an await on the shared connection."""
        return list(await self.db.execute_fetchall(sql, params))

    # --- users ------------------------------------------------------------------------------------------

    async def remove_user(self, user_id: str) -> bool:
        """The user and (ON DELETE CASCADE) its LLM configurations; its chat sessions stay in their projects, as in
        gns3-server, and go with them."""
        cursor = await self.db.execute("DELETE FROM users WHERE user_id = ?", (user_id,))
        await self.db.commit()
        return cursor.rowcount > 0

    async def count_users(self) -> int:
        return (await self._rows("SELECT COUNT(*) FROM users"))[0][0]

    async def add_user(
        self,
        username: str,
        password_hash: str,
        *,
        is_superadmin: bool = False,
        full_name: str | None = None,
        email: str | None = None,
    ) -> User:
        user = User(str(uuid.uuid4()), username, password_hash, full_name, email, is_superadmin, utc_now())
        row = {k: v for k, v in user.__dict__.items() if k not in ("is_active", "token_version")}  # their defaults
        try:
            await self.db.execute(
                f"INSERT INTO users ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values())
            )
            await self.db.commit()
        except sqlite3.IntegrityError as exc:
            raise Conflict(f"Username '{username}' is already registered") from exc
        return user

    async def _user(self, where: str, value: str) -> User | None:
        rows = await self._rows(f"SELECT * FROM users WHERE {where} = ?", (value,))
        return _user(dict(rows[0])) if rows else None

    async def user_by_id(self, user_id: str) -> User | None:
        return await self._user("user_id", user_id)

    async def user_by_name(self, username: str) -> User | None:
        return await self._user("username", username)

    async def list_users(self) -> list[User]:
        ids = [row[0] for row in await self._rows("SELECT user_id FROM users ORDER BY created_at")]
        return [user for user_id in ids if (user := await self.user_by_id(user_id))]

    async def update_user(self, user_id: str, values: dict[str, Any]) -> User | None:
        """Sets the given columns; a new `password_hash` also bumps `token_version`, revoking the tokens issued
        before it."""
        if values:
            assignments = ", ".join(f"{column} = ?" for column in values)
            if "password_hash" in values:
                assignments += ", token_version = token_version + 1"
            try:
                await self.db.execute(f"UPDATE users SET {assignments} WHERE user_id = ?", (*values.values(), user_id))
                await self.db.commit()
            except sqlite3.IntegrityError as exc:
                await self.db.rollback()
                raise Conflict(f"Username '{values.get('username')}' is already registered") from exc
        return await self.user_by_id(user_id)

    async def rehash_password(self, user_id: str, password_hash: str) -> None:
        """The same password under new hash parameters: its tokens stay valid (update_user revokes them)."""
        await self.db.execute("UPDATE users SET password_hash = ? WHERE user_id = ?", (password_hash, user_id))
        await self.db.commit()

    # --- revoked tokens (logout) ------------------------------------------------------------------------

    async def revoke_token(self, token_id: str, expires_at: int) -> None:
        """Kept until the token would have expired anyway; the expired ones go now, so the table stays small."""
        await self.db.execute("DELETE FROM revoked_tokens WHERE expires_at < ?", (int(time.time()),))
        await self.db.execute("INSERT OR IGNORE INTO revoked_tokens VALUES (?, ?)", (token_id, expires_at))
        await self.db.commit()

    async def bearer(self, user_id: str, token_id: str) -> tuple[User | None, bool]:
        """A token's user and whether the token was revoked, in one read: every request asks (AUTH-001)."""
        rows = await self._rows(
            "SELECT EXISTS (SELECT 1 FROM revoked_tokens WHERE token_id = ?) AS token_revoked, users.*"
            " FROM (SELECT 1) LEFT JOIN users ON users.user_id = ?",
            (token_id, user_id),
        )
        row = dict(rows[0])
        revoked = bool(row.pop("token_revoked"))
        return (None if row["user_id"] is None else _user(row)), revoked

    # --- projects ---------------------------------------------------------------------------------------

    async def add_project(self, name: str) -> Project:
        project = Project(str(uuid.uuid4()), name, "opened", utc_now())
        try:
            await self.db.execute("INSERT INTO projects VALUES (?, ?, ?, ?)", tuple(project.__dict__.values()))
            await self.db.commit()
        except sqlite3.IntegrityError as exc:
            raise Conflict(f'Project "{name}" already exists') from exc
        return project

    async def project(self, project_id: str) -> Project | None:
        rows = await self._rows("SELECT * FROM projects WHERE project_id = ?", (project_id,))
        return Project(**dict(rows[0])) if rows else None

    async def list_projects(self) -> list[Project]:
        return [Project(**dict(row)) for row in await self._rows("SELECT * FROM projects ORDER BY created_at, name")]

    async def set_project_status(self, project_id: str, status: str) -> None:
        await self.db.execute("UPDATE projects SET status = ? WHERE project_id = ?", (status, project_id))
        await self.db.commit()

    async def remove_project(self, project_id: str) -> None:
        await self.db.execute("DELETE FROM projects WHERE project_id = ?", (project_id,))
        await self.db.commit()

    # --- LLM model configurations -------------------------------------------------------------------------

    async def add_llm_config(self, user_id: str, values: dict[str, Any]) -> dict[str, Any]:
        now = utc_now()
        row = {"config_id": str(uuid.uuid4()), "user_id": user_id, **values, "created_at": now, "updated_at": now}
        columns = ", ".join(row)
        await self.db.execute(
            f"INSERT INTO llm_model_configs ({columns}) VALUES ({', '.join('?' * len(row))})", tuple(row.values())
        )
        await self.db.commit()
        return await self.llm_config(user_id, row["config_id"])

    async def llm_config(self, user_id: str, config_id: str) -> dict[str, Any] | None:
        rows = await self._rows(
            "SELECT * FROM llm_model_configs WHERE user_id = ? AND config_id = ?", (user_id, config_id)
        )
        return dict(rows[0]) if rows else None

    async def llm_configs(self, user_id: str) -> list[dict[str, Any]]:
        rows = await self._rows(
            "SELECT * FROM llm_model_configs WHERE user_id = ? ORDER BY is_default DESC, created_at, config_id",
            (user_id,),
        )
        return [dict(row) for row in rows]

    async def update_llm_config(self, user_id: str, config_id: str, values: dict[str, Any]) -> dict[str, Any] | None:
        if values:
            assignments = ", ".join(f"{column} = ?" for column in values)
            await self.db.execute(
                f"UPDATE llm_model_configs SET {assignments}, updated_at = ? WHERE user_id = ? AND config_id = ?",
                (*values.values(), utc_now(), user_id, config_id),
            )
            await self.db.commit()
        return await self.llm_config(user_id, config_id)

    async def remove_llm_config(self, user_id: str, config_id: str) -> bool:
        cursor = await self.db.execute(
            "DELETE FROM llm_model_configs WHERE user_id = ? AND config_id = ?", (user_id, config_id)
        )
        await self.db.commit()
        return cursor.rowcount > 0


def _user(row: dict[str, Any]) -> User:
    return User(**{**row, **{flag: bool(row[flag]) for flag in ("is_superadmin", "is_active")}})
