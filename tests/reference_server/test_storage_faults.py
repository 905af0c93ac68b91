"""Broken storage: a full or read-only disk answers 503 `storage_unavailable` and leaves nothing half-written; a
corrupt project database makes that project, and only it, answer 503 `project_unavailable` (ERROR-003); a start-up
that cannot serve exits at once; the server's files are private whatever the umask.

The disks are real: a server runs in a user and mount namespace (`unshare -rm`) on a small tmpfs, which the test fills
through /proc/PID/root, or with its projects folder bind-mounted read-only. Where namespaces are not available, those
tests are skipped. Every server listens on 127.0.0.1 and is stopped by its pid.
"""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import pytest

from conformance.harness.machine_load import stretched
from conformance.harness.processes import Process, _clean_env, _wait_until_ready
from gns3_copilot_generated.constants import DB_LOCATION
from reference_server.agent.service import database_path
from reference_server.storage_faults import corruption, storage_fault

from .conftest import REPO_ROOT, Lab, ServerProcess, in_process_lab

pytestmark = pytest.mark.anyio

PLAIN = "hello [[fake-llm:plain]]"


@cache
def namespaces_available() -> bool:
    try:
        return subprocess.run(["unshare", "-rm", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


needs_namespaces = pytest.mark.skipif(not namespaces_available(), reason="no user and mount namespaces (unshare -rm)")


def launch(data_dir: Path, *, mounts: str | None = None, umask: int = -1, ready: bool = True) -> ServerProcess:
    """`python -m reference_server` on 127.0.0.1 and a free port. With `mounts`, a shell command run first in a new
    user and mount namespace, where "$0" is the data directory; unshare and sh exec the server: the pid is its own."""
    command = [sys.executable, "-m", "reference_server", "--host", "127.0.0.1", "--port", "0"]
    command += ["--data-dir", str(data_dir), "--log-level", "warning"]
    if mounts is not None:
        command = ["unshare", "-rm", "sh", "-c", f'{mounts} && exec "$@"', str(data_dir), *command]
    popen = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=REPO_ROOT,
        env=_clean_env(),
        umask=umask,
    )
    handle = Process("reference server", popen)
    handle.output.append(popen.stdout.readline())
    handle.drain()
    match = re.search(r"listening on (http://\S+)", handle.output[0])
    if match is None:
        handle.stop(5)
        pytest.fail(f"the server did not start: {handle.tail()}")
    server = ServerProcess(handle, match.group(1), data_dir)
    if ready and not _wait_until_ready(handle, server.base_url + "/v3/version", 10):
        server.stop()
        pytest.fail(f"the server never answered: {handle.tail()}")
    return server


def inside(server: ServerProcess, path: Path) -> Path:
    """`path` as the server's mount namespace sees it."""
    return Path(f"/proc/{server.process.pid}/root") / path.relative_to("/")


def fill(mount: Path, keep: int = 0) -> Path:
    """Fill the file system of `mount` until `keep` bytes are left; returns the filler file."""
    usage = os.statvfs(mount)
    filler = mount / f"filler-{time.monotonic_ns()}"
    filler.write_bytes(bytes(max(0, usage.f_bavail * usage.f_frsize - keep)))
    return filler


async def remote_lab(server: ServerProcess) -> Lab:
    return await Lab(httpx.AsyncClient(base_url=server.base_url, timeout=30)).setup()


def assert_unavailable(response: httpx.Response, code: str, *named: str) -> None:
    """503 with the error body (ERROR-001) and `code`; its message names `named`."""
    assert response.status_code == 503, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"message", "code"} and body["code"] == code, body
    assert all(name in body["message"] for name in named), body


async def project_names(lab: Lab) -> list[str]:
    response = await lab.client.get("/v3/projects", headers=lab.headers)
    assert response.status_code == 200, response.text
    return sorted(project["name"] for project in response.json())


async def session_ids(lab: Lab, project_id: str | None = None) -> list[str]:
    response = await lab.client.get(f"{lab.prefix(project_id)}/sessions", headers=lab.headers)
    assert response.status_code == 200, response.text
    return sorted(session["thread_id"] for session in response.json())


async def assert_counted(lab: Lab, session_id: str) -> None:
    """STATS-001: the statistics agree with the history."""
    history = await lab.history(session_id)
    assert (await lab.session(session_id))["message_count"] == len(history["messages"])


def chat_calls(lab: Lab, project_id: str, session_id: str) -> dict[str, Any]:
    """Every chat endpoint, on one session of the project."""
    prefix, headers = lab.prefix(project_id), lab.headers
    client = lab.client
    return {
        "stream": lambda: client.post(f"{prefix}/stream", json={"message": PLAIN}, headers=headers),
        "list": lambda: client.get(f"{prefix}/sessions", headers=headers),
        "history": lambda: client.get(f"{prefix}/sessions/{session_id}/history", headers=headers),
        "rename": lambda: client.patch(f"{prefix}/sessions/{session_id}", json={"title": "t"}, headers=headers),
        "pin": lambda: client.put(f"{prefix}/sessions/{session_id}/pin", headers=headers),
        "unpin": lambda: client.delete(f"{prefix}/sessions/{session_id}/pin", headers=headers),
        "abort": lambda: client.post(f"{prefix}/sessions/{session_id}/abort", headers=headers),
        "delete": lambda: client.delete(f"{prefix}/sessions/{session_id}", headers=headers),
    }


# --- 1. which failures are storage faults --------------------------------------------------------------------


def test_storage_faults_are_told_from_other_failures(tmp_path: Path):
    path = tmp_path / "x.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (x)")
    db.close()
    read_only = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    with pytest.raises(sqlite3.OperationalError) as written:
        read_only.execute("INSERT INTO t VALUES (1)")
    read_only.close()
    assert storage_fault(written.value) == "attempt to write a readonly database"
    path.write_bytes(b"not a database" * 100)
    with pytest.raises(sqlite3.DatabaseError) as corrupt:
        sqlite3.connect(path).execute("SELECT * FROM t")
    assert (storage_fault(corrupt.value), corruption(corrupt.value)) == (None, "file is not a database")
    for number in (errno.ENOSPC, errno.EROFS, errno.EACCES):
        assert storage_fault(OSError(number, os.strerror(number))) == os.strerror(number)
    for other in (OSError(errno.ECONNREFUSED, "refused"), ValueError("x"), sqlite3.IntegrityError("unique")):
        assert storage_fault(other) is None and corruption(other) is None


# --- 2. a full disk -----------------------------------------------------------------------------------------------


@needs_namespaces
@pytest.mark.covers("ERROR-001", "ERROR-003", "STATS-001")
async def test_full_disk_answers_503_and_writes_nothing_half(tmp_path: Path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    server = launch(data_dir, mounts='mount -t tmpfs -o size=4m,mode=0700 tmpfs "$0"')
    try:
        lab = await remote_lab(server)
        assert (await lab.stream(PLAIN, "s1")).types[-1] == "done"
        mount = inside(server, data_dir)
        projects_before = sorted(os.listdir(mount / "projects"))

        filler = fill(mount)
        assert os.statvfs(mount).f_bavail == 0
        new_project = await lab.client.post("/v3/projects", json={"name": "full"}, headers=lab.headers)
        assert_unavailable(new_project, "storage_unavailable", "database or disk is full")
        body = {"message": PLAIN, "session_id": "s2"}
        assert_unavailable(
            await lab.client.post(f"{lab.prefix()}/stream", json=body, headers=lab.headers), "storage_unavailable"
        )
        calls = chat_calls(lab, lab.project_id, "s1")
        for name in ("rename", "pin"):
            assert_unavailable(await calls[name](), "storage_unavailable")
        # A turn of an existing session writes its in-flight mark before its stream begins: a 503 too, no stream.
        old_session = await lab.stream("again [[fake-llm:plain]]", "s1")
        assert old_session.status == 503 and old_session.events == [], old_session.text
        assert old_session.headers["content-type"] == "application/json"
        assert json.loads(old_session.text)["code"] == "storage_unavailable"
        # Reads still work, and nothing was half-written: no new project, no new session, no new folder.
        assert len(await project_names(lab)) == 1
        assert await session_ids(lab) == ["s1"]
        assert sorted(os.listdir(mount / "projects")) == projects_before
        await assert_counted(lab, "s1")

        # Room for the controller's row but not for the project's database: the row is written, then removed.
        filler.unlink()
        filler = fill(mount, keep=64 * 1024)
        new_project = await lab.client.post("/v3/projects", json={"name": "half"}, headers=lab.headers)
        assert_unavailable(new_project, "storage_unavailable")
        assert len(await project_names(lab)) == 1
        assert sorted(os.listdir(mount / "projects")) == projects_before

        # Once the disk has room again, everything works.
        filler.unlink()
        assert (await lab.client.post("/v3/projects", json={"name": "later"}, headers=lab.headers)).status_code == 201
        for session_id in ("s1", "s2"):
            assert (await lab.stream("and now? [[fake-llm:plain]]", session_id)).types[-1] == "done"
            await assert_counted(lab, session_id)
        await lab.client.aclose()
    finally:
        server.stop()


# --- 3. a read-only disk ------------------------------------------------------------------------------------------


@needs_namespaces
@pytest.mark.covers("ERROR-003")
async def test_read_only_disk_answers_503_and_leaves_no_project(tmp_path: Path):
    data_dir = tmp_path / "data"
    (data_dir / "projects").mkdir(parents=True)
    server = launch(
        data_dir, mounts='mount --bind "$0/projects" "$0/projects" && mount -o remount,bind,ro "$0/projects"'
    )
    try:
        lab = Lab(httpx.AsyncClient(base_url=server.base_url, timeout=30))
        lab.headers = await lab.login()
        response = await lab.client.post("/v3/projects", json={"name": "read-only"}, headers=lab.headers)
        assert_unavailable(response, "storage_unavailable", "Read-only file system")
        assert await project_names(lab) == []
        assert os.listdir(inside(server, data_dir / "projects")) == []
        await lab.client.aclose()
    finally:
        server.stop()


# --- 4. a corrupt project database -------------------------------------------------------------------------------


def connection_threads() -> set[threading.Thread]:
    """aiosqlite's connection threads are not daemons: one left behind keeps the process from exiting."""
    return {thread for thread in threading.enumerate() if "_connection_worker_thread" in thread.name}


def corrupt_page(path: Path, table: str) -> None:
    """Overwrite the root page of `table`, then write through another connection, so that every connection drops its
    cache and reads the page again."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    with path.open("r+b") as handle:
        handle.seek((root - 1) * page_size)
        handle.write(bytes(range(256)) * (page_size // 256))
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE bump (x)")
    db.close()


def not_sqlite(path: Path) -> None:
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    path.write_text("this is not a database\n" * 200)


@pytest.mark.covers("ERROR-001", "ERROR-003", "PROJECT-002")
async def test_corrupt_project_database_answers_503_for_that_project_only(make_settings):
    async with in_process_lab(make_settings()) as lab:
        broken, working = lab.project_id, await lab.new_project("working")
        for project_id in (broken, working):
            assert (await lab.stream(PLAIN, "s1", project_id=project_id)).types[-1] == "done"
        path = database_path(lab.settings.projects_dir / broken)

        corrupt_page(path, "chat_sessions")  # while the project is open
        for name, call in chat_calls(lab, broken, "s1").items():
            assert_unavailable(await call(), "project_unavailable", broken), name
        assert await session_ids(lab, working) == ["s1"]
        assert (await lab.stream("still fine? [[fake-llm:plain]]", "s1", project_id=working)).types[-1] == "done"

        # Closed, then opened again while it is not SQLite at all: the open fails, and closes what it opened.
        assert (await lab.client.post(f"/v3/projects/{broken}/close", headers=lab.headers)).status_code == 204
        not_sqlite(path)
        threads = connection_threads()
        response = await lab.client.post(f"/v3/projects/{broken}/open", headers=lab.headers)
        assert_unavailable(response, "project_unavailable", broken, "file is not a database")
        for thread in connection_threads() - threads:
            thread.join(5)  # a closed connection's thread ends once it has run its last call
            assert not thread.is_alive()
        for name, call in chat_calls(lab, broken, "s1").items():
            assert_unavailable(await call(), "project_unavailable", broken), name
        assert await session_ids(lab, working) == ["s1"]

        assert (await lab.client.delete(f"/v3/projects/{broken}", headers=lab.headers)).status_code == 204
        assert (await lab.client.get(f"{lab.prefix(broken)}/sessions", headers=lab.headers)).status_code == 404


@pytest.mark.covers("ERROR-003", "PROJECT-001")
async def test_start_up_with_a_corrupt_project_database_serves_every_other_project(make_settings, tmp_path):
    settings = make_settings()
    async with in_process_lab(settings) as lab:
        broken, working = lab.project_id, await lab.new_project("working")
        for project_id in (broken, working):
            await lab.stream(PLAIN, "s1", project_id=project_id)
    not_sqlite(database_path(settings.projects_dir / broken))

    server = launch(settings.data_dir)
    try:
        lab = await remote_lab(server)
        for name, call in chat_calls(lab, broken, "s1").items():
            assert_unavailable(await call(), "project_unavailable", broken), name
        assert await session_ids(lab, working) == ["s1"]
        assert (await lab.stream("still fine? [[fake-llm:plain]]", "s1", project_id=working)).types[-1] == "done"
        await lab.client.aclose()
        assert f"project {broken} cannot be opened" in "".join(server.output)
    finally:
        code = server.stop(signal.SIGTERM, timeout=10)
    # It stopped on SIGTERM alone: the connections of the project that failed to open were closed.
    assert code != -signal.SIGKILL


# --- 5. a start-up that cannot serve ------------------------------------------------------------------------------


STARTUP_HANG_SECONDS = 60


def corrupt_controller(data_dir: Path) -> str | None:
    data_dir.mkdir()
    (data_dir / "controller.db").write_text("this is not a database\n" * 200)
    return None


def read_only(data_dir: Path) -> str | None:
    data_dir.mkdir()
    return 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0"'


@pytest.mark.parametrize(
    ("prepare", "message"),
    [
        pytest.param(read_only, "is not writable", id="read-only-data-dir", marks=needs_namespaces),
        pytest.param(corrupt_controller, "file is not a database", id="corrupt-controller-db"),
    ],
)
def test_start_up_that_cannot_serve_exits_at_once(tmp_path: Path, prepare, message: str):
    data_dir = tmp_path / "data"
    mounts = prepare(data_dir)
    started = time.monotonic()
    server = launch(data_dir, mounts=mounts, ready=False)
    try:
        # A bound against hanging, not a timing: start-up is seconds of imports, many more on a loaded machine
        # (over 10 s when the test command's four groups ran beside it).
        code = server.process.wait(STARTUP_HANG_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running {STARTUP_HANG_SECONDS} s after a failed start-up: {server.handle.tail()}")
    finally:
        server.stop(signal.SIGKILL)
    assert code != 0 and time.monotonic() - started < STARTUP_HANG_SECONDS
    deadline = time.monotonic() + stretched(5)  # the output is read by a thread of its own
    while not re.search(f"start-up failed: .*{message}", "".join(server.output)):
        assert time.monotonic() < deadline, server.handle.tail()
        time.sleep(0.02)


# --- 6. file modes ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("umask", [0o000, 0o022], ids=["umask-000", "umask-022"])
async def test_the_server_files_are_private_whatever_the_umask(tmp_path: Path, umask: int):
    data_dir = tmp_path / "data"
    server = launch(data_dir, umask=umask)
    try:
        lab = await remote_lab(server)
        assert (await lab.stream(PLAIN, "s1")).types[-1] == "done"
        project = Path("projects") / lab.project_id
        expected = {
            "controller.db",
            "secrets/jwt_secret_key",
            "secrets/encryption_key",
            f"{project}/project.gns3",
            f"{project}/topology.json",
            *(DB_LOCATION.format(project_dir=project) + suffix for suffix in ("", "-wal", "-shm")),
        }
        modes = {
            path.relative_to(data_dir).as_posix(): stat.S_IMODE(path.stat().st_mode)
            for path in [data_dir, *data_dir.rglob("*")]
        }
        await lab.client.aclose()
    finally:
        server.stop()
    assert expected <= set(modes), sorted(modes)
    wrong = {
        name: oct(mode) for name, mode in modes.items() if mode != (0o700 if (data_dir / name).is_dir() else 0o600)
    }
    assert wrong == {}
