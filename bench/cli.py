"""`python -m bench`: run the benchmarks and print what they measured, side by side."""

from __future__ import annotations

import asyncio
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import click

from . import channels, report, sessions, streams

FULL = {"turns": 20, "chunks": 2000, "sizes": "1000,10000,100000", "calls": 30}
QUICK = {"turns": 2, "chunks": 50, "sizes": "100,500", "calls": 5}
# --only scale (bench/scale.py): its own sizes; --turns is not used
SCALE_FULL = {"streams": 256, "projects": 64, "chunks": 100, "rounds": 3, "sizes": "1000,100000,1000000", "calls": 30}
SCALE_QUICK = {"streams": 32, "projects": 8, "chunks": 20, "rounds": 1, "sizes": "1000,10000", "calls": 5}


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise click.BadParameter(f"expected comma-separated integers, got {text!r}") from exc
    if not sizes or any(size < 1 for size in sizes):
        raise click.BadParameter("sizes must be positive integers")
    return sorted(sizes)


def _load() -> str:
    """Other work on the machine moves every number: the load average is printed with them."""
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--quick", is_flag=True, help="Tiny sizes for a smoke run (explicit options still win).")
@click.option("--sizes", default=None, help=f"Session counts for GET /sessions [default {FULL['sizes']}].")
@click.option("--turns", type=click.IntRange(1), default=None, help=f"Measured turns [default {FULL['turns']}].")
@click.option(
    "--chunks", type=click.IntRange(1), default=None, help=f"Text chunks per turn [default {FULL['chunks']}]."
)
@click.option(
    "--calls", type=click.IntRange(1), default=None, help=f"GET /sessions per size [default {FULL['calls']}]."
)
@click.option(
    "--streams",
    "stream_count",
    type=click.IntRange(1),
    default=None,
    help=f"--only scale: concurrent streams [default {SCALE_FULL['streams']}].",
)
@click.option(
    "--projects",
    type=click.IntRange(1),
    default=None,
    help=f"--only scale: projects the streams are spread over [default {SCALE_FULL['projects']}].",
)
@click.option(
    "--rounds",
    type=click.IntRange(1),
    default=None,
    help=f"--only scale: loads of each configuration, in rotated order [default {SCALE_FULL['rounds']}].",
)
@click.option(
    "--only",
    type=click.Choice(["streams", "sessions", "channels", "scale"]),
    default=None,
    help="Run one part only. `channels` (our channels against the peers) and `scale` (workers on PostgreSQL) "
    "run only when asked for so.",
)
def main(
    quick: bool,
    sizes: str | None,
    turns: int | None,
    chunks: int | None,
    calls: int | None,
    stream_count: int | None,
    projects: int | None,
    rounds: int | None,
    only: str | None,
):
    """Measure the reference server against bare LangGraph and bare FastAPI, and GET /sessions at scale.

    Prints medians and ratios; the goals are printed as information, never asserted.
    """
    if only == "channels" and not channels.inside():
        sys.exit(channels.rerun_inside(sys.argv[1:]))  # the peers run only in a loopback-only network namespace
    if only == "scale":
        base = SCALE_QUICK if quick else SCALE_FULL
    else:
        base = QUICK if quick else FULL
    turns = turns or base.get("turns", 0)
    chunks = chunks or base["chunks"]
    calls = calls or base["calls"]
    size_list = _sizes(sizes or base["sizes"])

    def log(message: str) -> None:
        click.echo(f"  .. {message}", err=True)

    started = time.perf_counter()
    click.echo(
        f"bench: python {platform.python_version()}, {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPU(s), load average {_load()}{', quick' if quick else ''}"
    )
    with tempfile.TemporaryDirectory(prefix="copilot-bench-") as tmp:
        workdir = Path(tmp)
        if only in (None, "streams"):
            stream_results = asyncio.run(streams.run(workdir / "streams", turns=turns, chunks=chunks, log=log))
            report.print_streams(stream_results, click.echo)
        if only in (None, "sessions"):
            (workdir / "sessions").mkdir()
            session_results = asyncio.run(sessions.run(workdir / "sessions", sizes=size_list, calls=calls, log=log))
            report.print_sessions(session_results, click.echo)
        if only == "channels":
            channel_results = asyncio.run(channels.run(workdir / "channels", turns=turns, chunks=chunks, log=log))
            report.print_channels(channel_results, click.echo)
        if only == "scale":
            from . import scale, scale_report  # PostgreSQL (pgserver, psycopg) only for this part

            scale_results = asyncio.run(
                scale.run(
                    workdir / "scale",
                    streams=stream_count or base["streams"],
                    projects=projects or base["projects"],
                    chunks=chunks,
                    rounds=rounds or base["rounds"],
                    sizes=size_list,
                    calls=calls,
                    log=log,
                )
            )
            scale_report.print_scale(scale_results, click.echo)
    click.echo("")
    click.echo(f"bench finished in {time.perf_counter() - started:.1f}s (load average now {_load()})")
