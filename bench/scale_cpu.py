"""Where the CPU went during a load: per-process CPU seconds (psutil) of the server's processes, PostgreSQL's and
the bench's own, and the machine's busy share; and the summary of a cProfile of the server's workers."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pstats
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil


def _cpu(process: psutil.Process, *, reaped: bool = False) -> float:
    """User + system CPU seconds of one process; with `reaped`, also those of its children it has waited for
    (PostgreSQL's postmaster reaps every backend that ends, so the CPU of a closed connection stays counted)."""
    try:
        times = process.cpu_times()
    except psutil.Error:
        return 0.0
    seconds = times.user + times.system
    if reaped:
        seconds += times.children_user + times.children_system
    return seconds


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


@dataclass(frozen=True)
class CpuSnapshot:
    server: dict[int, float]  # pid -> CPU s: the supervisor (or the one process) and its workers
    postgres: float  # the postmaster, its live children and the ones it reaped (0 without PostgreSQL)
    client: float  # this process (the bench: its httpx client)
    machine_busy: float  # seconds of all CPUs not idle since boot
    machine_total: float


def snapshot(server_pid: int, postmaster_pid: int | None) -> CpuSnapshot:
    server = {process.pid: _cpu(process) for process in _tree(server_pid)}
    postgres = 0.0
    if postmaster_pid is not None:
        tree = _tree(postmaster_pid)
        postgres = sum(_cpu(process, reaped=index == 0) for index, process in enumerate(tree))
    machine = psutil.cpu_times()
    idle = machine.idle + getattr(machine, "iowait", 0.0)
    total = sum(machine)
    # guest time is already counted in user on Linux: leave it out of the total
    total -= getattr(machine, "guest", 0.0) + getattr(machine, "guest_nice", 0.0)
    return CpuSnapshot(server, postgres, _cpu(psutil.Process(os.getpid())), total - idle, total)


@dataclass(frozen=True)
class CpuUse:
    """CPU seconds spent between two snapshots."""

    server_by_pid: dict[int, float]
    postgres: float
    client: float
    machine_busy_share: float  # of all the machine's CPUs over the interval, 0..1
    wall: float
    cores: int

    @property
    def server(self) -> float:
        return sum(self.server_by_pid.values())

    @property
    def total(self) -> float:
        return self.server + self.postgres + self.client

    def share(self, seconds: float) -> float:
        """`seconds` as a share of what the machine's cores could give over the interval."""
        return seconds / (self.wall * self.cores) if self.wall > 0 else float("nan")


def difference(before: CpuSnapshot, after: CpuSnapshot, wall: float) -> CpuUse:
    server = {pid: seconds - before.server.get(pid, 0.0) for pid, seconds in after.server.items()}
    machine_total = after.machine_total - before.machine_total
    busy = (after.machine_busy - before.machine_busy) / machine_total if machine_total > 0 else float("nan")
    return CpuUse(
        server, after.postgres - before.postgres, after.client - before.client, busy, wall, os.cpu_count() or 1
    )


def serving_pids(server_pid: int, workers: int) -> list[int]:
    """The processes that serve requests: the server itself, or its forked workers."""
    if workers == 1:
        return [server_pid]
    try:
        return [child.pid for child in psutil.Process(server_pid).children()]
    except psutil.Error:
        return []


def signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


async def wait_for_profiles(folder: Path, pids: list[int], timeout: float = 30.0) -> None:
    """Until every process of `pids` has written its profile (bench/scale_profiled.py), or `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all((folder / f"worker-{pid}.prof").exists() for pid in pids):
            return
        await asyncio.sleep(0.1)
    missing = [pid for pid in pids if not (folder / f"worker-{pid}.prof").exists()]
    raise RuntimeError(f"no profile from server process(es) {missing} within {timeout:g}s")


def postmaster_pid(data_dir: Path) -> int | None:
    try:
        return int((data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None


# --- the profile ----------------------------------------------------------------------------------------------

IDLE = "idle: the event loop waiting (epoll)"
GROUPS_SHOWN = 12
FUNCTIONS_SHOWN = 15
BOUNDARY_SHOWN = 10


@dataclass
class ProfileSummary:
    workers: int
    total: float  # seconds of own time (tottime) in every profiled function, idle included
    idle: float
    groups: list[tuple[str, float]] = field(default_factory=list)  # (group, seconds), busiest first, idle excluded
    functions: list[tuple[str, str, float, int]] = field(default_factory=list)  # (group, function, seconds, calls)
    # (the reference server's function, the library function it calls, cumulative seconds of those calls)
    boundary: list[tuple[str, str, float]] = field(default_factory=list)

    @property
    def busy(self) -> float:
        return self.total - self.idle


def _group(filename: str, name: str) -> str:
    """Which part of the stack a function belongs to, from its file (or, for a C function, its name)."""
    if filename == "~":  # a built-in: cProfile names it like "<method 'send' of '_socket.socket' objects>"
        if "epoll" in name or "select" in name:
            return IDLE
        if "socket" in name:
            return "socket syscalls (send, recv)"
        return "C built-ins (json, pydantic-core, dict/str methods, ...)"
    path = filename.replace("\\", "/")
    if "/site-packages/" in path:
        package = path.split("/site-packages/", 1)[1].split("/", 1)[0]
        return package.removesuffix(".py")
    for own in ("reference_server", "fake_llm", "bench", "gns3_copilot_generated", "gns3_copilot_spec"):
        if f"/{own}/" in path:
            return own
    if "/asyncio/" in path:
        return "asyncio (stdlib)"
    return "Python stdlib (other)"


def summarise(profiles: list[Path]) -> ProfileSummary:
    """Own time (tottime) of every function over all the workers' profiles, by group and by function."""
    stats = pstats.Stats(*(str(path) for path in profiles))
    by_group: dict[str, float] = {}
    functions = []
    total = idle = 0.0
    for (filename, line, name), (_calls, ncalls, tottime, _cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        group = _group(filename, name)
        total += tottime
        if group == IDLE:
            idle += tottime
            continue
        by_group[group] = by_group.get(group, 0.0) + tottime
        where = name if filename == "~" else f"{name} ({Path(filename).name}:{line})"
        functions.append((group, where, tottime, ncalls))
    groups = sorted(by_group.items(), key=lambda item: -item[1])
    functions.sort(key=lambda item: -item[2])
    return ProfileSummary(len(profiles), total, idle, groups, functions[:FUNCTIONS_SHOWN], _boundary(stats))


def _short(filename: str, name: str) -> str:
    if filename == "~":
        return name
    path = Path(filename)
    return f"{path.parent.name}/{path.name}:{name}"


def _boundary(stats: pstats.Stats) -> list[tuple[str, str, float]]:
    """Where the server's own code hands over to a library: each call from a reference_server function to a
    function elsewhere, with the cumulative time of those calls (the time of the library's work done in that
    frame; work the library does in tasks of its own, such as LangGraph's nodes, is not under it)."""
    stats.calc_callees()

    def own(filename: str) -> bool:
        return "/reference_server/" in filename.replace("\\", "/")

    calls = []
    for (filename, _line, name), callees in stats.all_callees.items():  # type: ignore[attr-defined]
        if not own(filename) or name == "__call__":  # an ASGI middleware: the whole request is under it
            continue
        for (callee_file, _callee_line, callee_name), timings in callees.items():
            if not own(callee_file):
                calls.append((_short(filename, name), _short(callee_file, callee_name), timings[3]))
    calls.sort(key=lambda item: -item[2])
    return calls[:BOUNDARY_SHOWN]
