"""`python -m bench.scale_profiled --profile-dir DIR <reference_server options>`: the reference server with a cProfile
in each of its server processes (the one process, or every forked worker), switched on by SIGUSR1 and off by
SIGUSR2, which then writes DIR/worker-<pid>.prof. The bench sends both to every server process around its load,
so that the profile covers the load only (not the start-up: imports, the contract's YAML, the fake LLM's scripts).

The server's own code is untouched: this wraps `reference_server.cli._serve`, which the CLI calls in each process.
cProfile sees the event loop's thread only (what the PostgreSQL store runs on; aiosqlite's threads are not seen).
"""

from __future__ import annotations

import cProfile
import os
import signal
import sys
from pathlib import Path

import reference_server.cli as cli

START, STOP = signal.SIGUSR1, signal.SIGUSR2


def main(argv: list[str]) -> None:
    if "--profile-dir" not in argv[:-1]:
        sys.exit("usage: python -m bench.scale_profiled --profile-dir DIR <reference_server options>")
    at = argv.index("--profile-dir")
    folder, argv = Path(argv[at + 1]), argv[:at] + argv[at + 2 :]
    folder.mkdir(parents=True, exist_ok=True)
    serve = cli._serve

    def profiled(settings, sock, *, prepared: bool) -> None:
        profiler = cProfile.Profile()

        def start(signum, frame) -> None:
            profiler.enable()

        def stop(signum, frame) -> None:
            profiler.disable()
            path = folder / f"worker-{os.getpid()}.prof"
            profiler.dump_stats(path.with_suffix(".part"))
            path.with_suffix(".part").rename(path)  # whole, or not there yet

        signal.signal(START, start)
        signal.signal(STOP, stop)
        serve(settings, sock, prepared=prepared)

    cli._serve = profiled
    cli.main(args=argv, prog_name="reference_server")


if __name__ == "__main__":
    main(sys.argv[1:])
