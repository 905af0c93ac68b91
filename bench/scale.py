"""`python -m bench --only scale`: the reference server under many concurrent streams, on one SQLite process and on
PostgreSQL with 1, 2 and 4 workers, measured side by side in one run; GET /sessions at up to 1 000 000 sessions
on PostgreSQL; and where the CPU goes (psutil per process, a cProfile of the workers).

1. Streams. Each configuration is a fresh reference server (its own data directory; on PostgreSQL its own new
   database on one throwaway PostgreSQL 16, tools/with_postgres.py) with the in-process fake LLM playing the
   bench's `text` script (bench/scripts.py). Its projects are created (and so opened) through the controller API;
   after a warm-up, all the streams start at once, stream i in project i mod P, each a new session. Counted: the
   errors (an answer other than 200, a stream cut or ended inside a frame, an `error` event, no `done` at the
   end), events/s over the whole load, TTFE p50 and p99, and the worker pids that answered (X-Copilot-Worker);
   then every session's statistics (one identical turn each: any that differ was counted twice) and the lines the
   server logged.
2. Listing: bench/scale_listing.py.
3. CPU: bench/scale_cpu.py (per process during each load), bench/scale_profiled.py (a profiled extra load).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

import gns3_copilot_spec as spec
from tools.with_postgres import create_database, drop_database, postgres

from . import scale_cpu, scale_listing, scale_profiled, servers
from .http_client import login, new_project
from .samples import median
from .scripts import VARIANTS, write_scripts

STREAM_TIMEOUT = 600.0  # one stream may wait long behind the others on 2 cores; an error, not a hang, after that
WARM_UP_PER_WORKER = 2
READY = "/v3/version"


@dataclass(frozen=True)
class Config:
    name: str
    workers: int
    postgres: bool

    @property
    def slug(self) -> str:
        return f"{'pg' if self.postgres else 'sqlite'}_w{self.workers}"


BASELINE = Config("SQLite, 1 process", 1, False)
CONFIGS = (BASELINE, *(Config(f"PostgreSQL, {n} worker{'s' if n > 1 else ''}", n, True) for n in (1, 2, 4)))
PROFILED = Config("PostgreSQL, 2 workers", 2, True)


@dataclass(frozen=True)
class StreamOutcome:
    start: float
    end: float
    events: int  # data frames but heartbeats
    ttfe: float | None  # seconds from the request to the first event
    worker: str | None  # X-Copilot-Worker
    error: str | None


@dataclass
class Load:
    config: Config
    streams: list[StreamOutcome]
    wall: float
    cpu: scale_cpu.CpuUse
    warm_up_errors: list[str] = field(default_factory=list)
    server_log: list[str] = field(default_factory=list)  # what the server printed (--log-level warning) but its banner
    # after the load: each listed session's (message_count, llm_calls_count, input_tokens, output_tokens) -> sessions
    session_stats: Counter[tuple[int, int, int, int]] = field(default_factory=Counter)

    @property
    def sessions_off(self) -> int:
        """Sessions whose statistics are not those of the others (every session had one identical turn)."""
        if not self.session_stats:
            return 0
        return sum(self.session_stats.values()) - self.session_stats.most_common(1)[0][1]

    @property
    def errors(self) -> list[str]:
        return [outcome.error for outcome in self.streams if outcome.error is not None]

    @property
    def events(self) -> int:
        return sum(outcome.events for outcome in self.streams)

    @property
    def events_per_second(self) -> float:
        return self.events / self.wall if self.wall > 0 else float("nan")

    def ttfe_ms(self, quantile: float) -> float:
        values = sorted(outcome.ttfe * 1000 for outcome in self.streams if outcome.ttfe is not None)
        if not values:
            return float("nan")
        return values[min(len(values) - 1, max(0, round(quantile * len(values)) - 1))]  # nearest rank

    @property
    def per_worker(self) -> Counter[str]:
        """Streams answered by each worker pid (one process of one configuration: its streams under "-")."""
        return Counter(outcome.worker or "-" for outcome in self.streams if outcome.error is None)

    @property
    def workers_answered(self) -> int:
        return len(self.per_worker)


@dataclass
class ConfigResult:
    """The loads of one configuration, one per round; the report shows their medians."""

    config: Config
    loads: list[Load] = field(default_factory=list)

    def _median(self, value: Callable[[Load], float]) -> float:
        return median([value(load) for load in self.loads])

    @property
    def events_per_second(self) -> float:
        return self._median(lambda load: load.events_per_second)

    def ttfe_ms(self, quantile: float) -> float:
        return self._median(lambda load: load.ttfe_ms(quantile))

    @property
    def errors(self) -> list[str]:
        return [error for load in self.loads for error in load.errors]

    @property
    def warm_up_errors(self) -> list[str]:
        return [error for load in self.loads for error in load.warm_up_errors]

    @property
    def server_log(self) -> list[str]:
        return [line for load in self.loads for line in load.server_log]

    @property
    def sessions_off(self) -> int:
        return sum(load.sessions_off for load in self.loads)

    @property
    def session_stats(self) -> Counter[tuple[int, int, int, int]]:
        return sum((load.session_stats for load in self.loads), Counter())

    @property
    def streams(self) -> int:
        return sum(len(load.streams) for load in self.loads)

    @property
    def events(self) -> int:
        return sum(load.events for load in self.loads)

    @property
    def wall(self) -> float:
        return self._median(lambda load: load.wall)

    @property
    def workers_answered(self) -> int:
        """Distinct worker pids in the round where the fewest answered."""
        return min(load.workers_answered for load in self.loads)


@dataclass
class ScaleResults:
    streams: int
    projects: int
    chunks: int
    rounds: int
    configs: list[ConfigResult] = field(default_factory=list)
    profile: scale_cpu.ProfileSummary | None = None
    profiled_load: Load | None = None
    listing: scale_listing.ListingResults | None = None
    postgres_version: str = ""

    @property
    def baseline(self) -> ConfigResult:
        return next(result for result in self.configs if result.config == BASELINE)


def _data(frame: bytes) -> bytes | None:
    if frame.startswith(b"data:"):
        return frame[5:]
    at = frame.find(b"\ndata:")
    return None if at < 0 else frame[at + 6 :]


async def stream(client: httpx.AsyncClient, url: str, body: dict, headers: dict[str, str]) -> StreamOutcome:
    """One POST {prefix}/stream read to its end: its events, TTFE, worker and what went wrong (never raises)."""
    events, first, last, worker, error, pending = 0, None, b"", None, None, b""
    start = time.perf_counter()
    try:
        async with client.stream("POST", url, json=body, headers=headers) as response:
            worker = response.headers.get("x-copilot-worker")
            if response.status_code != 200:
                await response.aread()
                error = f"HTTP {response.status_code}: {response.text[:200]}"
            else:
                async for chunk in response.aiter_raw():
                    pending += chunk
                    if b"\n\n" not in pending:
                        continue
                    *frames, pending = pending.split(b"\n\n")
                    for frame in frames:
                        data = _data(frame)
                        if data is None or b'"type":"heartbeat"' in data.replace(b" ", b""):
                            continue
                        events += 1
                        last = data
                        if first is None:
                            first = time.perf_counter()
                        if b'"type":"error"' in data.replace(b" ", b""):
                            error = error or f"error event: {data[:200].decode(errors='replace')}"
    except httpx.HTTPError as exc:
        error = f"cut: {type(exc).__name__}: {exc}"
    end = time.perf_counter()
    if error is None and pending.strip():
        error = f"the stream ended inside a frame: {pending[:100]!r}"
    if error is None and b'"type":"done"' not in last.replace(b" ", b""):
        error = f"no done at the end (last event {last[:100]!r})"
    return StreamOutcome(start, end, events, None if first is None else first - start, worker, error)


async def _session_stats(
    client: httpx.AsyncClient, prefixes: list[str], headers: dict[str, str]
) -> Counter[tuple[int, int, int, int]]:
    """The statistics of every session of the loaded projects: one turn each, so all alike (STATS-007: a turn is
    counted once)."""
    found: Counter[tuple[int, int, int, int]] = Counter()
    for prefix in prefixes:
        response = await client.get(f"{prefix}/sessions", headers=headers)
        response.raise_for_status()
        for session in response.json():
            keys = ("message_count", "llm_calls_count", "input_tokens", "output_tokens")
            found[tuple(session[key] for key in keys)] += 1
    return found


def _prefix(project_id: str) -> str:
    return spec.default_prefix().format(project_id=project_id)


def _server_arguments(config: Config, data_dir: Path, scripts: Path, database_url: str | None) -> list[str]:
    arguments = ["--data-dir", str(data_dir), "--fake-llm-scripts", str(scripts), "--log-level", "warning"]
    if config.postgres:
        arguments += ["--database-url", database_url, "--workers", str(config.workers)]
    return arguments


async def _load(
    config: Config,
    workdir: Path,
    scripts: Path,
    pg: tuple[str, Path] | None,
    *,
    streams: int,
    projects: int,
    tag: str = "",
    profile_dir: Path | None = None,
    log: Callable[[str], None],
) -> Load:
    """One configuration: a fresh server (and database), its projects, a warm-up, then every stream at once."""
    folder = workdir / f"{config.slug}_{'profiled' if profile_dir else tag}"
    database, database_url = None, None
    if config.postgres:
        assert pg is not None
        database = folder.name
        database_url = create_database(pg[0], database)
    arguments = _server_arguments(config, folder / "data", scripts, database_url)
    module = "reference_server"
    if profile_dir is not None:
        module, arguments = "bench.scale_profiled", ["--profile-dir", str(profile_dir), *arguments]
    server = await asyncio.to_thread(servers.start, config.name, module, *arguments, ready_path=READY)
    try:
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
        async with httpx.AsyncClient(base_url=server.base_url, timeout=STREAM_TIMEOUT, limits=limits) as client:
            headers = await login(client)
            prefixes = [_prefix(await new_project(client, headers, f"scale-{i}")) for i in range(projects)]
            body = {"message": VARIANTS[0].message}
            warm = _prefix(await new_project(client, headers, "scale-warm-up"))
            warm_up = await asyncio.gather(
                *(stream(client, f"{warm}/stream", body, headers) for _ in range(WARM_UP_PER_WORKER * config.workers))
            )
        log(f"{config.name}: {projects} projects, warm-up done; {streams} streams at once")
        postmaster = scale_cpu.postmaster_pid(pg[1]) if config.postgres and pg else None
        serving = scale_cpu.serving_pids(server.handle.popen.pid, config.workers)
        # A new client: every stream on a new connection. A connection kept alive since the warm-up could be one
        # uvicorn is closing (idle for its keep-alive timeout, 5 s) as a request goes out on it: a ReadError.
        async with httpx.AsyncClient(base_url=server.base_url, timeout=STREAM_TIMEOUT, limits=limits) as client:
            if profile_dir is not None:
                scale_cpu.signal_all(serving, scale_profiled.START)
            before = scale_cpu.snapshot(server.handle.popen.pid, postmaster)
            started = time.perf_counter()
            outcomes = await asyncio.gather(
                *(stream(client, f"{prefixes[i % projects]}/stream", body, headers) for i in range(streams))
            )
            wall = max(outcome.end for outcome in outcomes) - started
            after = scale_cpu.snapshot(server.handle.popen.pid, postmaster)
            if profile_dir is not None:
                scale_cpu.signal_all(serving, scale_profiled.STOP)
                await scale_cpu.wait_for_profiles(profile_dir, serving)
            session_stats = await _session_stats(client, prefixes, headers)
    finally:
        await asyncio.to_thread(server.stop)
        if database is not None:
            with contextlib.suppress(Exception):
                drop_database(pg[0], database)
    load = Load(config, outcomes, wall, scale_cpu.difference(before, after, wall))
    load.warm_up_errors = [outcome.error for outcome in warm_up if outcome.error]
    load.server_log = [line.rstrip() for line in list(server.handle.output)[1:] if line.strip()]
    load.session_stats = session_stats
    log(
        f"{config.name}: {load.events} events in {wall:.1f}s, {len(load.errors)} error(s), "
        f"{load.workers_answered} worker(s) answered, {len(load.server_log)} server log line(s), "
        f"{load.sessions_off} session(s) with other statistics"
    )
    return load


async def _listing(
    workdir: Path, pg_url: str, sizes: list[int], calls: int, log: Callable[[str], None]
) -> scale_listing.ListingResults:
    """One database and one 1-process server per size, all at once; filled, then timed in turns."""
    config = Config("listing", 1, True)
    entries, started = [], []
    try:
        for size in sizes:
            url = create_database(pg_url, f"listing_{size}")
            arguments = _server_arguments(config, workdir / f"listing_{size}", workdir / "scripts", url)
            entries.append((size, url, arguments))
        starts = (
            asyncio.to_thread(servers.start, f"listing {size}", "reference_server", *arguments, ready_path=READY)
            for size, _url, arguments in entries
        )
        launched = await asyncio.gather(*starts, return_exceptions=True)
        started = [server for server in launched if isinstance(server, servers.ServerProcess)]
        for outcome in launched:
            if isinstance(outcome, BaseException):
                raise outcome
        listing_sizes = [
            scale_listing.ListingSize(size, url, server.base_url)
            for (size, url, _arguments), server in zip(entries, launched, strict=True)
        ]
        return await scale_listing.measure(listing_sizes, calls=calls, log=log)
    finally:
        for server in started:
            await asyncio.to_thread(server.stop)


async def run(
    workdir: Path,
    *,
    streams: int,
    projects: int,
    chunks: int,
    rounds: int,
    sizes: list[int],
    calls: int,
    log: Callable[[str], None],
) -> ScaleResults:
    """`rounds` loads of every configuration, the order rotated each round (no configuration always first), so
    that other work on the machine hits every configuration alike; then the profiled load; then the listing."""
    workdir.mkdir(parents=True, exist_ok=True)
    scripts = workdir / "scripts"
    write_scripts(scripts, chunks)
    results = ScaleResults(streams, projects, chunks, rounds, [ConfigResult(config) for config in CONFIGS])
    started = time.perf_counter()
    with postgres(workdir / "postgres") as pg_url:
        log(f"PostgreSQL at {pg_url} ({time.perf_counter() - started:.1f}s to start)")
        results.postgres_version = await asyncio.to_thread(_server_version, pg_url)
        pg = (pg_url, workdir / "postgres")
        for round_ in range(rounds):
            order = results.configs[round_ % len(CONFIGS) :] + results.configs[: round_ % len(CONFIGS)]
            for result in order:
                load = await _load(
                    result.config, workdir, scripts, pg, streams=streams, projects=projects, tag=f"r{round_}", log=log
                )
                result.loads.append(load)
            log(f"round {round_ + 1}/{rounds} done")
        profile_dir = workdir / "profiles"
        results.profiled_load = await _load(
            PROFILED, workdir, scripts, pg, streams=streams, projects=projects, profile_dir=profile_dir, log=log
        )
        results.profile = scale_cpu.summarise(sorted(profile_dir.glob("worker-*.prof")))
        results.listing = await _listing(workdir, pg_url, sizes, calls, log)
    return results


def _server_version(url: str) -> str:
    import psycopg

    with psycopg.connect(url) as conn:
        version = conn.execute("SHOW server_version").fetchone()[0]
        settings = {
            name: conn.execute(f"SHOW {name}").fetchone()[0]
            for name in ("shared_buffers", "max_connections", "synchronous_commit")
        }
    return f"PostgreSQL {version} ({', '.join(f'{k} {v}' for k, v in settings.items())})"


# Issue 33: with N workers, each takes between 0.8 and 1.2 of its fair share of the streams.
BALANCE_GOAL = (0.8, 1.2)


def worker_balance(loads: list[Load]) -> tuple[float, float]:
    """The lowest and highest share of any worker in any round: its streams / (the round's streams / workers). A
    worker that answered nothing in a round counts as 0 (when the round names fewer pids than workers)."""
    shares = []
    for load in loads:
        total = sum(load.per_worker.values())
        if not total:
            continue
        workers = load.config.workers
        fair = total / workers
        counts = list(load.per_worker.values()) + [0] * (workers - len(load.per_worker))
        shares += [count / fair for count in counts]
    return (min(shares), max(shares)) if shares else (0.0, 0.0)


def worker_split(load: Load) -> str:
    """Streams per worker, busiest first, e.g. `70/63/62/61`."""
    return "/".join(str(count) for count in sorted(load.per_worker.values(), reverse=True))
