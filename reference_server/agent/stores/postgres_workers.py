"""What the workers of one deployment share besides the data: the busy leases and the stop requests.

A lease is a PostgreSQL session advisory lock taken on this worker's own lease connection, keyed by (project,
session) (PostgreSQL Coordination in ../shared/seeds/langgraph-openai-serve-reference.txt). It lives as long as that
connection: a worker that dies frees its leases as soon as PostgreSQL sees the connection close, at once when the
process dies on a live host (its kernel closes the socket), within LEASE_RELEASE_BOUND_SECONDS by TCP keepalive when
the host or the network goes. Advisory locks are re-entrant per connection, so the worker's own memory (AgentService.
running) decides first between two requests that reach the same worker.

Stop requests (abort, a deleted session, a closed project) travel by LISTEN/NOTIFY: every worker hears them, the one
that runs the turn stops it and answers on the asking worker's own channel.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg

log = logging.getLogger(__name__)

CONTROL_CHANNEL = "copilot_control"
# TCP keepalive of the lease connection, on both ends: idle 5 s, then 3 probes 2 s apart.
KEEPALIVE = {"keepalives": 1, "keepalives_idle": 5, "keepalives_interval": 2, "keepalives_count": 3}
LEASE_RELEASE_BOUND_SECONDS = 5 + 2 * 3
STOP_REPLY_SECONDS = 3.0  # how long an asking worker waits for the worker that holds the lease to answer
STOPPED_TURN_SECONDS = 30.0  # how long a deleting worker waits for a stopped turn to finish its writes

# handler(kind, project_id, session_id, reason) -> whether a running turn was stopped (None: not this worker's)
Handler = Callable[[str, str, str | None, str], Awaitable[bool | None]]


def lock_key(text: str) -> int:
    """A stable 31-bit key: a project, or a session within its project (a collision only makes a spurious 409)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=4).digest(), "big") & 0x7FFFFFFF


_HELD = (
    "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2"
    " AND classid = %s::bigint::oid"
)


class WorkerLink:
    def __init__(self, url: str) -> None:
        self.url = url
        self.reply_channel = f"copilot_reply_{os.getpid()}_{uuid.uuid4().hex[:12]}"
        self.handler: Handler | None = None
        self._lease: psycopg.AsyncConnection | None = None
        self._listen: psycopg.AsyncConnection | None = None
        self._listener: asyncio.Task[None] | None = None
        self._waiting: dict[str, asyncio.Future[bool]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def open(self) -> None:
        self._lease = await self._connect()
        self._listen = await self._listening()
        self._listener = asyncio.create_task(self._listen_forever(), name="copilot-listen")

    async def _listening(self) -> psycopg.AsyncConnection:
        conn = await self._connect()
        await conn.execute(f"LISTEN {CONTROL_CHANNEL}")
        await conn.execute(f"LISTEN {self.reply_channel}")
        return conn

    async def _lease_connection(self) -> psycopg.AsyncConnection:
        """The lease connection, again after PostgreSQL dropped it (a restart): its leases went with it."""
        if self._lease is None or self._lease.closed:
            log.error("the lease connection was lost: this worker's running turns no longer hold their leases")
            self._lease = await self._connect()
        return self._lease

    async def _connect(self) -> psycopg.AsyncConnection:
        conn = await psycopg.AsyncConnection.connect(self.url, autocommit=True, **KEEPALIVE)
        if not conn.info.host.startswith("/"):  # TCP: the server side probes too (a unix socket needs none)
            for name in ("idle", "interval", "count"):
                await conn.execute(f"SET tcp_keepalives_{name} = {KEEPALIVE['keepalives_' + name]}")
        return conn

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(BaseException):
                await self._listener
        for conn in (self._listen, self._lease):
            if conn is not None:
                await conn.close()  # the leases go with it

    # --- leases ---------------------------------------------------------------------------------------------------

    async def try_lock(self, project_id: str, session_id: str) -> bool:
        conn = await self._lease_connection()
        row = await (
            await conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (lock_key(project_id), lock_key(session_id)))
        ).fetchone()
        return bool(row[0])

    async def unlock(self, project_id: str, session_id: str) -> None:
        try:
            conn = await self._lease_connection()
            await conn.execute("SELECT pg_advisory_unlock(%s, %s)", (lock_key(project_id), lock_key(session_id)))
        except psycopg.Error:  # the connection went, and its leases with it: nothing left to release
            log.exception("releasing the lease of session %s (project %s) failed", session_id, project_id)

    async def held(self, project_id: str, session_id: str | None = None) -> bool:
        """Whether any worker holds the session's lease (or, without a session, any lease of the project)."""
        sql, params = _HELD, [lock_key(project_id)]
        if session_id is not None:
            sql += " AND objid = %s::bigint::oid"
            params.append(lock_key(session_id))
        row = await (await (await self._lease_connection()).execute(sql, params)).fetchone()
        return row[0] > 0

    async def wait_released(self, project_id: str, session_id: str | None, timeout: float) -> bool:
        deadline = asyncio.get_running_loop().time() + timeout
        while await self.held(project_id, session_id):
            if asyncio.get_running_loop().time() > deadline:
                return False
            await asyncio.sleep(0.02)
        return True

    # --- stop requests --------------------------------------------------------------------------------------------

    async def _notify(self, channel: str, message: dict[str, Any]) -> None:
        conn = await self._lease_connection()
        await conn.execute("SELECT pg_notify(%s, %s)", (channel, json.dumps(message)))

    async def broadcast(self, kind: str, project_id: str, reason: str) -> None:
        """Tell every worker (this one included), without waiting for answers: a project closed or deleted."""
        await self._notify(CONTROL_CHANNEL, {"kind": kind, "project": project_id, "reason": reason})

    async def request_stop(self, project_id: str, session_id: str, reason: str) -> bool:
        """Ask the worker running the session's turn to stop it: whether one was stopped. No answer comes when the
        turn ended meanwhile, so the lease is watched while waiting."""
        request_id = uuid.uuid4().hex
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = answer
        try:
            await self._notify(
                CONTROL_CHANNEL,
                {
                    "kind": "stop",
                    "project": project_id,
                    "session": session_id,
                    "reason": reason,
                    "id": request_id,
                    "reply": self.reply_channel,
                },
            )
            deadline = asyncio.get_running_loop().time() + STOP_REPLY_SECONDS
            released_at = None
            while asyncio.get_running_loop().time() < deadline:
                with contextlib.suppress(TimeoutError):
                    return await asyncio.wait_for(asyncio.shield(answer), 0.05)
                now = asyncio.get_running_loop().time()
                if released_at is None and not await self.held(project_id, session_id):
                    released_at = now  # the turn ended; its worker may still answer that it stopped it
                elif released_at is not None and now - released_at > 0.25:
                    return False
            log.warning("no worker answered the stop of session %s (project %s)", session_id, project_id)
            return False
        finally:
            self._waiting.pop(request_id, None)

    async def _listen_forever(self) -> None:
        while True:
            try:
                async for notice in self._listen.notifies():
                    self._dispatch(notice)
            except psycopg.OperationalError:
                # PostgreSQL went away: listen again once it is back (messages sent meanwhile are lost, so an
                # abort asked then answers false after STOP_REPLY_SECONDS).
                log.exception("the listening connection was lost; reconnecting")
                await asyncio.sleep(1.0)
                with contextlib.suppress(psycopg.OperationalError):
                    self._listen = await self._listening()

    def _dispatch(self, notice: psycopg.Notify) -> None:
        try:
            message = json.loads(notice.payload)
            if notice.channel == self.reply_channel:
                waiting = self._waiting.get(message["id"])
                if waiting is not None and not waiting.done():
                    waiting.set_result(bool(message["stopped"]))
            elif self.handler is not None:
                task = asyncio.create_task(self._handle(message))
                self._tasks.add(task)  # a reference, so that the task is not collected while it runs
                task.add_done_callback(self._tasks.discard)
        except Exception:
            log.exception("a worker message could not be handled: %r", notice.payload)

    async def _handle(self, message: dict[str, Any]) -> None:
        try:
            stopped = await self.handler(message["kind"], message["project"], message.get("session"), message["reason"])
            if message["kind"] == "stop" and stopped is not None:
                await self._notify(message["reply"], {"id": message["id"], "stopped": stopped})
        except Exception:
            log.exception("handling %s for project %s failed", message.get("kind"), message.get("project"))
