"""Servers forked from one process that has imported the reference server and the fake LLM once.

The test command judges some 130 variants of the reference server (mutants, answer breakers, flaky servers,
scenario preventers), each in a server process of its own. Importing the server (LangGraph, LangChain, the OpenAI
client, FastAPI) costs about 2 s of CPU, paid again by every variant; on the 2-core machine the test command is
CPU-bound, so that was minutes of its wall time. A fork server per pytest process imports it once; each variant is
a fork of it, which applies its change and serves, exactly as `python -m tests.quality.mutant_server` does. The same
goes for the unmodified reference server of the tests that start one (`python -m reference_server`, some 60 of them)
and for the fake LLM of every run the tests make in-process (`python -m fake_llm`, some 250, 0.3 s of CPU each).

The suite still starts, watches and stops the fork by pid, as it does any target: its command is
`python -m tests.quality.fork_client SOCKET MODULE [arguments]`, a small process that hands its stdin, stdout and
stderr to the fork, passes on SIGTERM and SIGINT, and ends with the fork's exit code. The fork ends when the client
does, even when the client is killed (it watches their connection). What users start themselves (the README's
commands, the installed wheel) is never forked.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from functools import cache
from pathlib import Path

MAX_REQUEST = 1 << 20  # a request: the variant's arguments, environment and folder, as JSON


def _serve_forever(path: str, parent: int) -> None:
    import fake_llm.cli  # noqa: F401 - the imports every fork shares
    import fake_llm.openai_server  # noqa: F401
    import reference_server.app  # noqa: F401
    import reference_server.cli  # noqa: F401
    import tests.quality.mutant_server  # noqa: F401

    _warm_what_every_fork_loads()
    # The imports made hundreds of thousands of objects that every fork shares and none frees: out of the collector's
    # sight, a fork's collections do not walk them all again (nor copy the pages they touch).
    gc.freeze()
    if threading.active_count() != 1:  # a fork copies only the forking thread: no other may hold a lock then
        sys.exit(f"the fork server has {threading.active_count()} threads after its imports; it needs exactly one")
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the forks are reaped by the kernel; the clients hold their codes
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    listener.settimeout(1.0)
    print("ready", flush=True)
    while os.getppid() == parent:  # the pytest process that started it is gone: so is the need for forks
        try:
            connection, _ = listener.accept()
        except TimeoutError:
            continue
        connection.settimeout(None)
        message, fds, _flags, _address = socket.recv_fds(connection, MAX_REQUEST, 3)
        if os.fork() == 0:
            listener.close()
            _run_variant(connection, json.loads(message), fds)  # never returns
        for fd in fds:
            os.close(fd)
        connection.close()


def _warm_what_every_fork_loads() -> None:
    """What each fork would otherwise load again on its first start and request: the modules the server's
    dependencies import late, the contract's requirements, and the validator of the fake LLM's script schema (both
    cached per process; loading the built-in scripts once builds the validator, their library is not kept)."""
    import anyio._backends._asyncio  # noqa: F401 - anyio's back end, chosen when the first task group opens
    import httpcore2  # noqa: F401 - the OpenAI client's transport, imported when the first client is made
    import openai.resources.chat.completions  # noqa: F401 - the client's resources, imported on first access
    import uvicorn.lifespan.on  # noqa: F401 - uvicorn's parts, imported by name when it starts
    import uvicorn.loops.asyncio  # noqa: F401
    import uvicorn.protocols.http.h11_impl  # noqa: F401

    import gns3_copilot_spec as spec
    from fake_llm.scripts import ScriptLibrary

    spec.load_requirements()
    ScriptLibrary.from_folders()


def _reference_server() -> None:
    from reference_server.cli import main

    main()


def _fake_llm() -> None:
    from fake_llm.cli import main

    main(prog_name="python -m fake_llm")  # as fake_llm/__main__.py calls it


def _variant() -> None:
    from tests.quality.mutant_server import main

    main()


# The modules a fork runs, each as `python -m MODULE` would (their __main__.py).
_MAINS = {"fake_llm": _fake_llm, "reference_server": _reference_server, "tests.quality.mutant_server": _variant}


def _refusal(module: str) -> str | None:
    """Why the fork server does not run `module`, or None when it does (told by the fork and by `forked` alike)."""
    return None if module in _MAINS else f"the fork server runs {', '.join(_MAINS)}; not {module}"


def _run_variant(connection: socket.socket, request: dict, fds: list[int]) -> None:
    """In the fork: the client's stdio, environment and folder; its death is this process's end."""
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115 - the process's own stdio
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        connection.sendall(f"pid {os.getpid()}\n".encode())
        threading.Thread(target=_end_with_client, args=(connection,), daemon=True).start()
        module, *arguments = request["argv"] or ["(none)"]
        if refused := _refusal(module):
            sys.exit(refused)
        sys.argv = [module, *arguments]
        _MAINS[module]()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, int | None):
            print(exc.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - the variant's own failure, told to the suite through its stderr
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            connection.sendall(f"exit {code}\n".encode())
        finally:
            os._exit(code)


def _end_with_client(connection: socket.socket) -> None:
    """The client never writes after its request: end of file means it ended, however it did."""
    try:
        while connection.recv(1):
            pass
    except OSError:
        pass
    os.kill(os.getpid(), signal.SIGKILL)


def forked(module: str) -> list[str]:
    """What follows `python -m` to run `module` (one of _MAINS) as a fork of this process's fork server, or as a
    process of its own where forking is not available."""
    if refused := _refusal(module):
        raise ValueError(refused)
    socket_path = fork_server()
    return ["tests.quality.fork_client", socket_path, module] if socket_path else [module]


_STARTING = threading.Lock()  # runs are made in several threads (tests/ahead.py): one fork server per process


def fork_server() -> str | None:
    """The socket of this process's fork server, started on first use and stopped when this process exits; None
    where forking is not available (the variants then start as processes of their own)."""
    with _STARTING:
        return _start_fork_server()


@cache
def _start_fork_server() -> str | None:
    if not hasattr(os, "fork") or not hasattr(socket, "send_fds"):
        return None
    folder = tempfile.mkdtemp(prefix="variant-forks-")
    path = str(Path(folder) / "socket")
    with open(Path(folder) / "errors.log", "w") as errors:  # noqa: PTH123 - the fork server's own complaints
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.quality.fork_server", path, str(os.getpid())],
            cwd=Path(__file__).resolve().parents[2],
            stdin=subprocess.DEVNULL,  # not this process's stdin: a pytest-xdist worker's is its channel
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
    ready = process.stdout.readline().strip()
    if ready != "ready":
        process.kill()
        raise RuntimeError(f"the fork server did not start: {ready}{(Path(folder) / 'errors.log').read_text()}")

    def stop() -> None:
        process.kill()
        process.wait()

    atexit.register(stop)
    return path


if __name__ == "__main__":
    _serve_forever(sys.argv[1], int(sys.argv[2]))
