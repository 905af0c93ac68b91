"""tools/with_postgres.py: the launcher running a command next to a throwaway PostgreSQL (pgserver), and the
Python API behind the suite's PostgreSQL fixtures (tests/postgres.py)."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psutil
import psycopg
import pytest

from conformance.harness.machine_load import stretched
from tests.postgres import data_directory
from tools.with_postgres import create_database, drop_database, postgres

pytestmark = pytest.mark.slow  # PostgreSQL: left out of `python3 tasks.py test --quick`

REPO_ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = [sys.executable, str(REPO_ROOT / "tools" / "with_postgres.py")]

# The child the launcher runs: connects to the URL it is given, reports what it sees (one JSON line), then does
# what its last argument says: exit with that code, "kill" itself, or "wait" for a signal (and exit 3 on it).
CHILD = r"""
import json, os, signal, sys, time
from pathlib import Path
import psycopg

def stop(signum, frame):
    print(json.dumps({"signal": signum}), flush=True)
    sys.exit(3)

url, pgdata, then = sys.argv[1:]
if then == "wait":  # ready for them before reporting
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
with psycopg.connect(url, connect_timeout=5) as conn:
    row = conn.execute("SELECT current_user, current_database(), current_setting('listen_addresses'), 6 * 7").fetchone()
postmaster = int(Path(pgdata, "postmaster.pid").read_text().split()[0])
print(json.dumps({"url": url, "row": row, "postmaster": postmaster}), flush=True)
if then == "wait":
    time.sleep(30)
    sys.exit(4)
if then == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
sys.exit(int(then))
"""


def child(pgdata: Path, then: str = "0") -> list[str]:
    return [sys.executable, "-c", CHILD, "{database_url}", str(pgdata), then]


def launch(*args: str | Path) -> subprocess.CompletedProcess:
    # a session of its own: no controlling terminal, so a SIGINT is never taken for the terminal's Ctrl-C
    return subprocess.run(
        [*LAUNCHER, *map(str, args)], capture_output=True, text=True, timeout=60, start_new_session=True
    )


class Launcher:
    """The launcher in the background, its output read line by line."""

    def __init__(self, *args: str | Path) -> None:
        self.popen = subprocess.Popen(
            [*LAUNCHER, *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.popen.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def line(self, timeout: float = 20) -> dict:
        line = self.lines.get(timeout=timeout)
        assert line is not None, f"the launcher exited with {self.popen.wait()}: {self.popen.stderr.read()}"
        return json.loads(line)

    def wait(self, timeout: float = 20) -> int:
        return self.popen.wait(timeout)


def running(pid: int) -> bool:
    """Whether `pid` is a running process (a dead postmaster may stay a zombie until init reaps it)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def postmaster_pid(pgdata: Path) -> int:
    return abs(int((pgdata / "postmaster.pid").read_text().split()[0]))  # negative while initdb holds it


@pytest.fixture
def background() -> Iterator[Callable[..., Launcher]]:
    """Starts launchers in the background; those a failed test leaves running are killed, their children too."""
    started: list[Launcher] = []

    def start(*args: str | Path) -> Launcher:
        started.append(Launcher(*args))
        return started[-1]

    yield start
    for launcher in started:
        if launcher.popen.poll() is None:
            os.killpg(launcher.popen.pid, signal.SIGKILL)  # its own process group (start_new_session)
            launcher.popen.wait()


@pytest.fixture
def pgdata() -> Iterator[Path]:
    with data_directory() as path:
        yield path
        # a failed test must not leave a server behind: SIGQUIT is PostgreSQL's immediate shutdown
        try:
            pid = postmaster_pid(path)
        except (OSError, ValueError):
            return
        if running(pid):
            os.kill(pid, signal.SIGQUIT)


def test_the_child_gets_a_url_psycopg_can_use_and_postgres_is_stopped_after_it(pgdata):
    result = launch("--dir", pgdata, "--", *child(pgdata))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["row"] == ["postgres", "postgres", "", 42]  # listen_addresses '': no TCP at all
    url = urlsplit(report["url"])
    assert url.hostname is None and parse_qs(url.query)["host"] == [str(pgdata.resolve())]  # a unix socket in DIR
    assert not running(report["postmaster"])
    assert not (pgdata / "postmaster.pid").exists()
    assert result.stderr == ""


def test_the_launcher_exits_with_the_childs_exit_code_and_always_stops_postgres(pgdata):
    for then, expected in (("7", 7), ("kill", 128 + signal.SIGKILL), ("0", 0)):
        result = launch("--dir", pgdata, "--", *child(pgdata, then))
        assert result.returncode == expected, result.stderr
        assert not running(json.loads(result.stdout)["postmaster"]), then


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_the_launcher_reaches_the_child_and_postgres_is_still_stopped(pgdata, background, signum):
    launcher = background("--dir", pgdata, "--", *child(pgdata, "wait"))
    postmaster = launcher.line()["postmaster"]
    launcher.popen.send_signal(signum)
    assert launcher.line() == {"signal": signum}
    assert launcher.wait() == 3  # the child's exit code
    assert not running(postmaster)


def test_launchers_on_one_dir_share_its_server_and_the_last_one_out_stops_it(pgdata, background):
    first = background("--dir", pgdata, "--", *child(pgdata, "wait"))
    postmaster = first.line()["postmaster"]
    second = launch("--dir", pgdata, "--", *child(pgdata))
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["postmaster"] == postmaster
    assert running(postmaster)  # the first launcher still uses it
    first.popen.send_signal(signal.SIGTERM)
    assert first.wait() == 3
    assert not running(postmaster)


def test_a_user_that_died_does_not_keep_the_server_running(pgdata):
    dead = subprocess.Popen(["true"])
    dead.wait()
    with postgres(pgdata):
        postmaster = postmaster_pid(pgdata)
        # as a launcher killed with SIGKILL leaves it: its pid still in the list of the server's users
        users = pgdata / ".handle_pids.json"
        users.write_text(json.dumps([*json.loads(users.read_text()), dead.pid]))
    assert not running(postmaster)


@pytest.mark.parametrize(
    "case",
    ["no --", "no command", "no --dir", "dir is a file", "parent is a file", "dir is not empty", "dir not writable"],
)
def test_bad_input_gets_a_one_line_error(tmp_path, case):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("someone's")
    if os.geteuid() == 0:  # root writes anywhere a mode allows: a file system that refuses even root
        unwritable = Path("/sys/with-postgres-test")
    else:
        (tmp_path / "read-only").mkdir(mode=0o500)
        unwritable = tmp_path / "read-only" / "pg"
    args, code, expected = {
        "no --": (["--dir", tmp_path / "pg", "true"], 2, "put the command after --"),
        "no command": (["--dir", tmp_path / "pg", "--"], 2, "no command after --"),
        "no --dir": (["--", "true"], 2, "--dir"),
        "dir is a file": (["--dir", a_file, "--", "true"], 1, f"{a_file} is not a directory"),
        "parent is a file": (["--dir", a_file / "pg", "--", "true"], 1, "is not a writable directory"),
        "dir is not empty": (["--dir", tmp_path / "full", "--", "true"], 1, "neither empty nor a PostgreSQL data"),
        "dir not writable": (["--dir", unwritable, "--", "true"], 1, f"{unwritable} is not a writable directory"),
    }[case]
    result = launch(*args)
    assert result.returncode == code
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("with_postgres: error: ") and expected in line, line
    assert not (tmp_path / "pg").exists()  # nothing started


@pytest.mark.parametrize("executable", [False, True])
def test_a_command_that_cannot_run_is_an_error_and_postgres_is_stopped(pgdata, tmp_path, executable):
    command = tmp_path / "not-executable" if executable else tmp_path / "no-such-command"
    if executable:
        command.write_text("#!/bin/sh\n")
        command.chmod(0o644)
    result = launch("--dir", pgdata, "--", command)
    assert result.returncode == (126 if executable else 127)
    [line] = result.stderr.splitlines()
    assert line.startswith(f"with_postgres: error: cannot run {command}: "), line
    assert (pgdata / "PG_VERSION").exists() and not (pgdata / "postmaster.pid").exists()


def test_a_server_that_does_not_start_is_an_error_with_the_end_of_its_log(pgdata):
    with postgres(pgdata):
        pass
    with (pgdata / "postgresql.conf").open("a") as conf:
        conf.write("no_such_setting = 1\n")
    result = launch("--dir", pgdata, "--", "true")
    assert result.returncode == 1
    first, *tail = result.stderr.splitlines()
    assert first == f"with_postgres: error: PostgreSQL did not start in {pgdata.resolve()}: pg_ctl exited with 1"
    assert any('unrecognized configuration parameter "no_such_setting"' in line for line in tail), tail
    assert len(tail) <= 15


def test_a_stale_data_directory_after_the_postmaster_was_killed_starts_again(pgdata):
    with postgres(pgdata) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE TABLE kept AS SELECT 42 AS answer")
        killed = postmaster_pid(pgdata)
        os.kill(killed, signal.SIGKILL)
        deadline = time.monotonic() + stretched(5)
        while running(killed) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not running(killed)
    assert (pgdata / "postmaster.pid").exists()  # left behind, naming the dead (maybe not yet reaped) postmaster
    with postgres(pgdata) as url:
        restarted = postmaster_pid(pgdata)
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT answer FROM kept").fetchone() == (42,)  # after crash recovery
    deadline = time.monotonic() + stretched(5)  # its fast shutdown may still be under way on a busy machine
    while running(restarted) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert restarted != killed and not running(restarted)


def test_create_database_gives_isolated_databases(postgres_server):
    names = ["alpha", 'Odd "name"; DROP DATABASE postgres; ü']
    urls = [create_database(postgres_server, name) for name in names]
    try:
        for url, name in zip(urls, names, strict=True):
            with psycopg.connect(url, autocommit=True) as conn:
                assert conn.execute("SELECT current_database()").fetchone() == (name,)
                assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone() == (0,)
                conn.execute("CREATE TABLE only_here (name text)")
                conn.execute("INSERT INTO only_here VALUES (%s)", [name])
        for url, name in zip(urls, names, strict=True):
            with psycopg.connect(url) as conn:
                assert conn.execute("SELECT name FROM only_here").fetchall() == [(name,)]
        with pytest.raises(psycopg.errors.DuplicateDatabase):
            create_database(postgres_server, "alpha")
        with pytest.raises(ValueError):
            create_database(postgres_server, "x" * 64)  # PostgreSQL would cut it short: another database
    finally:
        for name in names:
            drop_database(postgres_server, name)
    with pytest.raises(psycopg.OperationalError, match="does not exist"):
        psycopg.connect(urls[0])


@pytest.mark.parametrize("run", [1, 2])
def test_postgres_url_is_a_new_empty_database_for_each_test(postgres_url, postgres_server, run):
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        assert conn.execute("SELECT current_database() <> 'postgres'").fetchone() == (True,)
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone() == (0,)
        conn.execute("CREATE TABLE made_by_each_test (run int)")  # fails in the second run if the database is shared
    assert urlsplit(postgres_url).query == urlsplit(postgres_server).query  # on the same server


def test_the_server_is_stopped_even_when_its_user_can_no_longer_reach_dir(pgdata):
    with postgres(pgdata):
        postmaster = postmaster_pid(pgdata)
        # as pytest does to /tmp/pytest-of-root at each start; as root, PostgreSQL's user `pgserver` is now shut out
        pgdata.parent.chmod(0o700)
    assert not running(postmaster)
