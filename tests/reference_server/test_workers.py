"""`--workers N` on PostgreSQL: the busy lock, abort and deletion across processes, and a worker killed mid-turn.

Which worker answers is the supervisor's choice (each in turn). A keep-alive connection stays with its worker, and
every answer names its worker (`X-Copilot-Worker`), so these tests open connections until they hold one to the
worker they need: the requests provably reach different processes.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import psutil
import psycopg
import pytest

from reference_server.agent.service import INTERRUPTED_ANSWER
from reference_server.agent.stores.postgres_workers import LEASE_RELEASE_BOUND_SECONDS

from .conftest import REPO_ROOT, ServerProcess, events_of, start_server_process

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # slow: PostgreSQL and four workers, not in --quick
PREFIX = "/v3/projects/{project_id}/chat"
SLOW = "[[fake-llm:slow]]"  # its first chunk comes after 3 s


@pytest.fixture
def workers(tmp_path: Path, postgres_url: str) -> Iterator[ServerProcess]:
    server = start_server_process(tmp_path / "data", "--database-url", postgres_url, "--workers", "2", fork=False)
    server.postgres_url = postgres_url
    yield server
    server.stop()


class Worker:
    """One keep-alive connection, and the pid of the worker process that serves it."""

    def __init__(self, client: httpx.AsyncClient, pid: int, headers: dict[str, str]) -> None:
        self.client, self.pid, self.headers = client, pid, headers

    async def post(self, path: str, **kwargs) -> httpx.Response:
        response = await self.client.post(path, headers=self.headers, **kwargs)
        assert int(response.headers["x-copilot-worker"]) == self.pid  # still the same process
        return response


@asynccontextmanager
async def connection(base_url: str, headers: dict[str, str], *, not_pid: int | None = None) -> AsyncIterator[Worker]:
    """A connection to any worker, or to a worker other than `not_pid`."""
    for _ in range(200):
        client = httpx.AsyncClient(base_url=base_url, timeout=30, limits=httpx.Limits(max_connections=1))
        pid = int((await client.get("/v3/version")).headers["x-copilot-worker"])
        if pid != not_pid:
            try:
                yield Worker(client, pid, headers)
            finally:
                await client.aclose()
            return
        await client.aclose()
    pytest.fail(f"200 new connections all reached worker {not_pid}")


async def _lab(base_url: str) -> tuple[dict[str, str], str]:
    """The admin's headers and a new opened project."""
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        login = await client.post("/v3/access/users/authenticate", json={"username": "admin", "password": "admin"})
        headers = {"Authorization": f"Bearer {login.json()['access_token']}"}
        project = await client.post("/v3/projects", json={"name": f"w-{os.urandom(4).hex()}"}, headers=headers)
        assert project.status_code == 201, project.text
        return headers, project.json()["project_id"]


async def _until_checkpointed(base_url: str, headers: dict[str, str], prefix: str, session_id: str) -> None:
    """Until the running turn's user message is in its checkpoint (the graph's first step, a moment after 200)."""
    async with connection(base_url, headers) as reader:
        for _ in range(250):
            history = await reader.client.get(f"{prefix}/sessions/{session_id}/history", headers=headers)
            if history.status_code == 200 and history.json()["messages"]:
                return
            await asyncio.sleep(0.02)
    pytest.fail("the turn's user message never reached its checkpoint")


async def test_two_requests_for_one_session_on_two_workers_give_one_stream_and_one_409(workers):
    headers, project = await _lab(workers.base_url)
    stream_path = PREFIX.format(project_id=project) + "/stream"
    async with connection(workers.base_url, headers) as first:
        async with first.client.stream(
            "POST", stream_path, json={"message": SLOW, "session_id": "shared-1"}, headers=headers
        ) as running:
            assert running.status_code == 200
            async with connection(workers.base_url, headers, not_pid=first.pid) as second:
                busy = await second.post(stream_path, json={"message": "hello", "session_id": "shared-1"})
                assert second.pid != first.pid
                assert busy.status_code == 409, busy.text
                assert busy.json()["code"] == "session_busy"
            events = events_of((await running.aread()).decode())
    assert events[-1]["type"] == "done" and not any(e["type"] == "error" for e in events)
    # The turn refused on the other worker left nothing: one user message, one answer.
    async with connection(workers.base_url, headers, not_pid=first.pid) as other:
        history = await other.client.get(
            PREFIX.format(project_id=project) + "/sessions/shared-1/history", headers=headers
        )
    assert [m["role"] for m in history.json()["messages"]] == ["user", "assistant"]


async def test_an_abort_sent_to_another_worker_stops_the_turn(workers):
    headers, project = await _lab(workers.base_url)
    prefix = PREFIX.format(project_id=project)
    async with connection(workers.base_url, headers) as first:
        async with first.client.stream(
            "POST", prefix + "/stream", json={"message": SLOW, "session_id": "abort-1"}, headers=headers
        ) as running:
            assert running.status_code == 200  # the answer starts once the turn has its lease
            async with connection(workers.base_url, headers, not_pid=first.pid) as second:
                answer = await second.post(prefix + "/sessions/abort-1/abort")
                assert answer.json() == {"session_id": "abort-1", "aborted": True}
                started = time.monotonic()
                events = events_of((await running.aread()).decode())
                stopped_in = time.monotonic() - started
                again = await second.post(prefix + "/sessions/abort-1/abort")
    assert events[-1]["type"] == "done"
    assert stopped_in < 2.5, "the slow turn ran on: the abort did not reach its worker"  # its chunk comes at 3 s
    assert again.json()["aborted"] is False  # ABORT-005: nothing runs any more, anywhere


async def test_deleting_a_session_on_another_worker_stops_its_turn_and_leaves_no_row(workers):
    headers, project = await _lab(workers.base_url)
    prefix = PREFIX.format(project_id=project)
    async with connection(workers.base_url, headers) as first:
        async with first.client.stream(
            "POST", prefix + "/stream", json={"message": SLOW, "session_id": "gone-1"}, headers=headers
        ) as running:
            assert running.status_code == 200
            async with connection(workers.base_url, headers, not_pid=first.pid) as second:
                deleted = await second.client.delete(prefix + "/sessions/gone-1", headers=headers)
                assert deleted.status_code == 204
            await running.aread()
    with psycopg.connect(workers.postgres_url) as db:
        left = {
            table: db.execute(f"SELECT count(*) FROM {table} WHERE thread_id LIKE %s", ("%gone-1",)).fetchone()[0]
            for table in ("chat_sessions", "checkpoints", "checkpoint_writes", "checkpoint_blobs", "turns_in_flight")
        }
    assert left == dict.fromkeys(left, 0)  # the turn finished its writes before the rows went (SESSION-006)


async def test_a_worker_killed_mid_turn_frees_the_session_within_the_lease_bound(workers):
    headers, project = await _lab(workers.base_url)
    prefix = PREFIX.format(project_id=project)
    supervisor = psutil.Process(workers.process.pid)
    async with connection(workers.base_url, headers) as first:
        async with first.client.stream(
            "POST", prefix + "/stream", json={"message": SLOW, "session_id": "killed-1"}, headers=headers
        ) as running:
            assert running.status_code == 200
            await _until_checkpointed(workers.base_url, headers, prefix, "killed-1")
            os.kill(first.pid, signal.SIGKILL)
            killed_at = time.monotonic()
            with pytest.raises(httpx.HTTPError):
                await running.aread()  # the stream is cut: its process is gone
    # The other worker takes the session as soon as PostgreSQL has freed the dead worker's lease.
    while True:
        async with connection(workers.base_url, headers) as other:
            answer = await other.post(prefix + "/stream", json={"message": "after the crash", "session_id": "killed-1"})
        if answer.status_code == 200:
            break
        assert answer.status_code == 409, answer.text
        assert time.monotonic() - killed_at < LEASE_RELEASE_BOUND_SECONDS, "the dead worker's lease was never freed"
        await asyncio.sleep(0.05)
    freed_in = time.monotonic() - killed_at
    assert events_of(answer.text)[-1]["type"] == "done"
    print(f"\nsession free again {freed_in:.2f} s after SIGKILL (bound {LEASE_RELEASE_BOUND_SECONDS} s)")
    # The cut turn was recovered before the new one: answered, counted, its history whole.
    async with connection(workers.base_url, headers) as other:
        history = (await other.client.get(prefix + "/sessions/killed-1/history", headers=headers)).json()
    contents = [(m["role"], m["content"]) for m in history["messages"]]
    assert contents[0] == ("user", SLOW) and contents[1] == ("assistant", INTERRUPTED_ANSWER)
    assert contents[2][0] == "user" and contents[3][0] == "assistant"
    # The supervisor started a new worker in place of the killed one.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        children = {child.pid for child in supervisor.children()}
        if len(children) == 2 and first.pid not in children:
            break
        await asyncio.sleep(0.1)
    assert len(children) == 2 and first.pid not in children, children


def test_stopping_the_server_stops_every_worker(workers):
    supervisor = psutil.Process(workers.process.pid)
    children = supervisor.children()
    assert len(children) == 2
    assert workers.stop() == 0
    gone, alive = psutil.wait_procs(children, timeout=5)
    assert not alive


async def _worker_of_a_new_connection(host: str, port: int) -> int:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(b"GET /v3/version HTTP/1.1\r\nHost: worker-share\r\nConnection: close\r\n\r\n")
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
    finally:
        writer.close()
    return int(head.split("x-copilot-worker: ", 1)[1].split("\r\n", 1)[0])


async def test_four_workers_share_the_connections_that_arrive_together(tmp_path: Path, postgres_url: str):
    """256 connections opened at once, as soon as the server listens: each worker takes its share (issue 33). With
    one socket shared by every worker, the first to wake accepted all that were waiting (the busiest took 98-110 of
    256); with a socket per worker (SO_REUSEPORT) the kernel dealt them by hash, 64 +- 7 each. The supervisor now
    deals them in turn, and a worker still starting keeps its connections waiting in its socketpair, so each gets
    64 unless a worker could not take one for a while; the bound is bench/'s goal, 0.8-1.2 of the share."""
    server = start_server_process(tmp_path / "data", "--database-url", postgres_url, "--workers", "4", fork=False)
    try:
        url = httpx.URL(server.base_url)
        pids = await asyncio.gather(*(_worker_of_a_new_connection(url.host, url.port) for _ in range(256)))
        children = {child.pid for child in psutil.Process(server.process.pid).children()}
    finally:
        server.stop()
    taken = {pid: pids.count(pid) for pid in set(pids)}
    assert set(taken) == children and all(52 <= count <= 76 for count in taken.values()), taken


def test_several_workers_need_postgresql(tmp_path: Path):
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "reference_server", "--data-dir", str(tmp_path), "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode != 0
    assert "--workers above 1 needs --database-url" in result.stderr


def test_the_readme_serves_four_workers_on_a_postgresql_of_its_own(tmp_path: Path):
    from conformance.harness.processes import free_port
    from tests.postgres import data_directory
    from tests.readme import readme_example

    port = free_port()
    with data_directory() as pg_dir:  # outside pytest's folder, which PostgreSQL's own user may not reach
        script = (
            readme_example("sh pg-workers")
            .replace("--port 3081", f"--port {port}")
            .replace(".cache/readme-pg-data", str(tmp_path / "data"))
            .replace("/tmp/copilot-pg", str(pg_dir))
        )
        _serve_four_workers(script, port, pg_dir)


def _serve_four_workers(script: str, port: int, pg_dir: Path) -> None:
    import subprocess

    launcher = subprocess.Popen(["bash", "-c", "exec " + script.strip()], cwd=REPO_ROOT)
    try:
        pids: set[str] = set()
        deadline = time.monotonic() + 60
        while len(pids) < 4 and time.monotonic() < deadline:
            try:  # a new connection each time: the kernel hands it to one of the workers
                pids.add(httpx.get(f"http://127.0.0.1:{port}/v3/version", timeout=5).headers["x-copilot-worker"])
            except httpx.TransportError:
                time.sleep(0.1)
        assert len(pids) == 4, f"answers came from {len(pids)} workers"
    finally:
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(30) == 0
    assert not (pg_dir / "postmaster.pid").exists()  # its PostgreSQL stopped with it


def test_the_suite_passes_against_four_workers_on_postgresql(tmp_path: Path):
    """The README's command: the target file starts its own PostgreSQL and the server with 4 workers."""
    import subprocess

    from tests.readme import readme_command

    command = readme_command(".venv/bin/copilot-conformance run --target conformance/targets/reference-postgres.yaml")
    result = subprocess.run(
        [*command, "--report-dir", str(tmp_path / "reports")],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "RESULT: PASSED" in result.stdout
    summary = json.loads((tmp_path / "reports" / "conformance.json").read_text())
    verdicts = {v["id"]: v["verdict"] for v in summary["requirements"]}
    assert verdicts["DB-001"] == "N/A" and verdicts["CONCURRENCY-001"] == "PASS" and verdicts["ABORT-002"] == "PASS"
