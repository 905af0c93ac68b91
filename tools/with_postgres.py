"""Run a command next to a throwaway PostgreSQL, for tests, the benchmark and conformance target files.

    python tools/with_postgres.py --dir DIR -- CMD [ARGS...]
    python -m tools.with_postgres --dir DIR -- CMD [ARGS...]

Starts PostgreSQL with its data directory DIR (created and initialised on first use; when a server of ours
already runs there, that one is used), replaces the literal `{database_url}` in CMD's arguments with the
server's URL, runs CMD, passes SIGTERM and SIGINT on to it, stops PostgreSQL once CMD has exited (also when it
failed, or when this launcher was told to stop) and exits with CMD's exit code (128+N when signal N ended it).
For example:

    python tools/with_postgres.py --dir /tmp/pg -- python -m reference_server --database-url {database_url}

From Python: `postgres(dir)` is a context manager yielding the URL of the server's `postgres` database, and
`create_database(url, name)` makes a new empty database on the same server (a test of its own each).

Why pgserver (PyPI): it ships the PostgreSQL 16 binaries, so neither a developer nor CI installs PostgreSQL to
run the tests, the benchmark or a target file. This is a helper for those only: users point the reference
server at their own PostgreSQL with --database-url.

What pgserver does, which callers may need to know:
* the server listens on a unix socket only (`-h ""`: no TCP at all), in DIR, or under /tmp/runtime-UID/ when
  DIR's path is too long for a socket name; it trusts every local connection, as the superuser `postgres`;
* PostgreSQL refuses to run as root, so as root pgserver runs it as the system user `pgserver` (creating it
  with useradd the first time), chowns DIR to it and opens every directory above DIR to others (o+rx);
* DIR keeps the server's log (DIR/log, appended to) and `.handle_pids.json`, the processes using the server:
  the last one to leave stops it, so two launchers on one DIR share one server.
As root, keep DIR out of pytest's tmp_path: each pytest session starting makes /tmp/pytest-of-root private
again, and `pgserver` can then no longer reach a DIR below it to start a server (tests/postgres.py has
data_directory() for that). Stopping does not need to reach DIR: it is done by signals.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import psutil
import psycopg
from psycopg import sql

with warnings.catch_warnings():
    # pgserver picks its lock directory at import time; platformdirs warns that XDG_RUNTIME_DIR is unset
    # (and falls back to /tmp/runtime-UID), which is what we want anyway.
    warnings.simplefilter("ignore")
    import pgserver
    from pgserver.postgres_server import PostgresServer
    from pgserver.utils import DiskList

PLACEHOLDER = "{database_url}"
LOG_TAIL_LINES = 15

__all__ = ["PLACEHOLDER", "PostgresError", "create_database", "drop_database", "main", "postgres"]


class PostgresError(RuntimeError):
    """PostgreSQL could not be started or stopped in a data directory; the message says why."""


# Servers this process has started through postgres(), by data directory: [server, number of open blocks].
# pgserver counts users per process, so a nested block on the same DIR must not stop it under the outer one.
_active: dict[Path, list] = {}
_active_lock = threading.Lock()


@contextlib.contextmanager
def postgres(dir: Path) -> Iterator[str]:
    """PostgreSQL with its data in `dir` for the `with` block: yields the URL of its `postgres` database.

    `dir` is created and initialised when needed; a server of ours already running there is used. On exit the
    server is stopped, unless another process still uses it. Raises PostgresError when it cannot be started."""
    dir = _prepare(dir)
    with _active_lock:
        entry = _active.get(dir)
        if entry is None:
            entry = _active[dir] = [_start(dir), 0]
        entry[1] += 1
    try:
        yield _url(entry[0])
    finally:
        with _active_lock:
            entry[1] -= 1
            if entry[1] == 0:
                del _active[dir]
                _stop(entry[0])


def create_database(url: str, name: str) -> str:
    """Create the empty database `name` on the server of `url` (a postgresql:// URL); returns the URL of it."""
    parts = _check_database(url, name)
    with psycopg.connect(url, autocommit=True) as conn:  # CREATE DATABASE cannot run in a transaction
        # template0: empty for sure, and nobody is ever connected to it (template1 may be, and would fail this)
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0").format(sql.Identifier(name)))
    return urlunsplit(parts._replace(path="/" + quote(name, safe="")))


def drop_database(url: str, name: str) -> None:
    """Drop the database `name` on the server of `url` (not `name` itself), closing the connections still on it."""
    _check_database(url, name)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _check_database(url: str, name: str):
    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        raise ValueError(f"not a postgresql:// URL: {url!r}")
    # PostgreSQL would silently cut a longer name to 63 bytes, and the URL returned would name another database
    if not name or "\0" in name or len(name.encode()) > 63:
        raise ValueError(f"not a usable database name (1 to 63 bytes, no NUL): {name!r}")
    return parts


def _prepare(dir: Path) -> Path:
    """`dir` resolved, created, and checked to be an empty directory or a data directory we can write to."""
    dir = Path(dir).expanduser().resolve()  # pgserver keys its servers by the resolved path
    try:
        dir.mkdir(parents=True, exist_ok=True)
        # as root pgserver chowns DIR to its own user: never do that to a directory holding something else
        if not (dir / "PG_VERSION").exists() and any(dir.iterdir()):
            raise PostgresError(f"{dir} is neither empty nor a PostgreSQL data directory")
        # access() says yes to root everywhere (even on a read-only mount): write something instead
        tempfile.TemporaryFile(dir=dir).close()
    except FileExistsError as exc:
        raise PostgresError(f"{dir} is not a directory") from exc
    except OSError as exc:
        raise PostgresError(f"{dir} is not a writable directory: {exc.strerror or exc}") from exc
    return dir


def _start(dir: Path) -> PostgresServer:
    _forget_stale(dir)
    log = dir / "log"
    log_size = log.stat().st_size if log.exists() else 0
    with _pgserver_errors() as errors:
        try:
            # cleanup_mode=None: we stop the server ourselves (_stop), as pgserver's own stop takes a dead
            # postmaster left a zombie for a running one; and pgserver's atexit hook then only unregisters us.
            return pgserver.get_server(dir, cleanup_mode=None)
        except Exception as exc:  # whatever went wrong in pgserver, initdb or pg_ctl: reported with the log
            PostgresServer._instances.pop(dir, None)  # pgserver keeps the failed handle in its cache
            tail = _tail(log, log_size) or "\n".join(errors).splitlines()[-LOG_TAIL_LINES:]
            details = "".join(f"\n    {line}" for line in tail)
            raise PostgresError(f"PostgreSQL did not start in {dir}: {_why(exc)}{details}") from exc


def _stop(server: PostgresServer) -> None:
    """Forget this process's handle; stop the server when no other live process uses it."""
    dir = server.pgdata
    atexit.unregister(server._cleanup)
    PostgresServer._instances.pop(dir, None)  # or the next get_server() in this process would return this one
    with PostgresServer._lock:  # the inter-process lock pgserver takes to start and stop
        others = [pid for pid in server.global_process_id_list.get_and_remove(os.getpid()) if pid != os.getpid()]
        if any(_alive(pid) for pid in others):
            return
        pid = _postmaster_pid(dir)
        if pid is None or not _live_postmaster(pid, dir):
            return  # already stopped, or it died (kill -9): the next start recovers
        # The signals pg_ctl stop sends, sent by us: pg_ctl runs as the server's user, which as root is `pgserver`,
        # and fails when it can no longer reach DIR (pytest makes /tmp/pytest-of-root private at each start).
        # SIGINT: fast shutdown (open transactions rolled back, clients disconnected); SIGQUIT: immediate.
        for signum, grace in ((signal.SIGINT, 30), (signal.SIGQUIT, 10), (signal.SIGKILL, 5)):
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                return
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline:
                # Gone or a zombie: not _live_postmaster, which an exiting process (its command line already empty)
                # fails while it still runs, so that this returned before the server had stopped (seen under load).
                if not _alive(pid):
                    return
                time.sleep(0.01)
        raise PostgresError(f"could not stop PostgreSQL (pid {pid}) in {dir}")


def _forget_stale(dir: Path) -> None:
    """Make a data directory usable again after its server or its users died (kill -9, a crash, a reboot)."""
    with PostgresServer._lock:
        # a dead process left in the list of users would keep the server from ever being stopped
        users = DiskList(dir / ".handle_pids.json")
        try:
            pids = users.get()
        except ValueError:  # cut short by a crash while being written
            pids = None
        live = [pid for pid in pids or [] if _alive(pid)]
        if pids != live:
            users.put(live)
        # Lock files naming a pid that still exists but is not a live postgres (a dead postmaster nobody has
        # reaped yet, a zombie, or a pid taken by another program): pgserver would take the server for running,
        # and postgres would refuse to start. A pid that is gone, postgres itself handles, checking the
        # shared memory the old server may have left in use.
        lock = dir / "postmaster.pid"
        pid = _lock_pid(lock)
        if pid is not None and psutil.pid_exists(pid) and not _live_postmaster(pid):
            socket_lock = _socket_lock(lock)  # the one next to the socket names the postmaster too
            if socket_lock is not None and _lock_pid(socket_lock) == pid:
                socket_lock.unlink(missing_ok=True)
            lock.unlink(missing_ok=True)


def _url(server: PostgresServer) -> str:
    info = server.get_postmaster_info()
    if info.socket_dir is None:  # pgserver uses TCP on Windows only
        return info.get_uri()
    # pgserver's own URI neither quotes the socket directory nor names the port
    return f"postgresql://postgres@/postgres?host={quote(str(info.socket_dir))}&port={info.port}"


def _postmaster_pid(dir: Path) -> int | None:
    return _lock_pid(dir / "postmaster.pid")


def _lock_pid(lock: Path) -> int | None:
    try:
        pid = int(lock.read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None
    return abs(pid) or None  # negative: a single-user postgres (initdb's) holds it


def _socket_lock(postmaster_pid: Path) -> Path | None:
    # postmaster.pid: pid, data directory, start time, port, socket directory, ...
    try:
        lines = [line.strip() for line in postmaster_pid.read_text().splitlines()]
    except OSError:
        return None
    if len(lines) < 5 or not lines[3] or not lines[4]:
        return None
    return Path(lines[4]) / f".s.PGSQL.{lines[3]}.lock"


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _live_postmaster(pid: int, dir: Path | None = None) -> bool:
    """Whether `pid` is a running postgres (with `dir` as its data directory, if given: pgserver passes -D DIR)."""
    try:
        process = psutil.Process(pid)
        return (
            process.status() != psutil.STATUS_ZOMBIE
            and process.name() == "postgres"
            and (dir is None or str(dir) in process.cmdline())
        )
    except psutil.Error:
        return False


def _why(exc: BaseException) -> str:
    if isinstance(exc, subprocess.CalledProcessError):
        return f"{Path(exc.cmd[0]).name} exited with {exc.returncode}"
    if isinstance(exc, subprocess.TimeoutExpired):
        return f"{Path(exc.cmd[0]).name} did not finish within {exc.timeout:g} s"
    return str(exc) or type(exc).__name__


def _tail(log: Path, offset: int) -> list[str]:
    """The last lines `log` got since it was `offset` bytes long."""
    try:
        with log.open("rb") as file:
            file.seek(offset)
            return file.read().decode(errors="replace").splitlines()[-LOG_TAIL_LINES:]
    except OSError:
        return []


@contextlib.contextmanager
def _pgserver_errors() -> Iterator[list[str]]:
    """pgserver's error messages (with the output of a failed initdb or pg_ctl), kept rather than printed."""
    messages: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    logger = logging.getLogger("pgserver")
    handler, propagate = Keep(logging.ERROR), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False  # they would be printed whole, server log and all, by logging's last resort
    try:
        yield messages
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


# --- the launcher ---------------------------------------------------------------------------------------------


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not argparse's usage block
        raise _Usage(message)


def _parse(argv: list[str]) -> tuple[Path, list[str]]:
    if "--" not in argv:
        if any(arg in ("-h", "--help") for arg in argv):
            print(__doc__)
            raise SystemExit(0)
        raise _Usage("put the command after --: with_postgres.py --dir DIR -- CMD [ARGS...]")
    split = argv.index("--")
    parser = _Parser(prog="with_postgres", add_help=False)
    parser.add_argument("--dir", type=Path, required=True)
    options = parser.parse_args(argv[:split])
    command = argv[split + 1 :]
    if not command:
        raise _Usage("no command after --")
    return options.dir, command


class _Signals:
    """SIGTERM and SIGINT: passed on to the child while it runs; before it starts and after it has exited,
    only remembered (the launcher then starts no child, and never leaves PostgreSQL half started or stopped)."""

    def __init__(self) -> None:
        self.child: subprocess.Popen | None = None
        self.pending: int | None = None  # the first one received while no child ran
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self.handle)

    def handle(self, signum: int, frame: object) -> None:
        if self.child is None:
            self.pending = self.pending or signum
        elif not (signum == signal.SIGINT and _terminal_sent_it()):
            self.child.send_signal(signum)


def _terminal_sent_it() -> bool:
    """Whether a SIGINT most likely is a Ctrl-C: the terminal sends that to its whole foreground process group,
    the child (which shares ours) included, and a second SIGINT would make many programs skip a clean exit."""
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return False  # no controlling terminal
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(fd)


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode  # -N: ended by signal N, as a shell reports it


def _error(message: str) -> None:
    print(f"with_postgres: error: {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    try:
        dir, command = _parse(sys.argv[1:] if argv is None else argv)
    except _Usage as exc:
        _error(str(exc))
        return 2
    signals = _Signals()
    code = 1
    try:
        with postgres(dir) as url:
            if signals.pending:  # told to stop while PostgreSQL was starting
                return 128 + signals.pending
            try:
                signals.child = subprocess.Popen([arg.replace(PLACEHOLDER, url) for arg in command])
            except OSError as exc:
                _error(f"cannot run {command[0]}: {exc.strerror or exc}")
                code = 126 if isinstance(exc, PermissionError) else 127
                return code
            if signals.pending:  # came between the check above and the child's start
                signals.child.send_signal(signals.pending)
            code = _exit_code(signals.child.wait())
            signals.child = None  # from now on, signals are only remembered: PostgreSQL is being stopped
            return code
    except PostgresError as exc:
        _error(str(exc))
        return code if code != 0 else 1


if __name__ == "__main__":
    sys.exit(main())
