"""The printed report of `python -m bench --only scale`: every number with its ratio to the single SQLite process,
measured in the same run; goals printed as PASS / BELOW GOAL, never asserted."""

from __future__ import annotations

import os
from collections.abc import Callable

from .samples import median, ratio
from .scale import BALANCE_GOAL, ConfigResult, ScaleResults, worker_balance, worker_split
from .scale_listing import LISTED, LISTED_PINNED, LISTING_INDEX, PROJECTS, SESSIONS_PER_USER

Echo = Callable[[str], None]
LISTING_GOAL = 3.0  # latency at 100 000 and 1 000 000 sessions / at 1 000, at most
# Issue 33's goals for the loads. CPU: half of the 326 us of server + PostgreSQL CPU per event that bench/README.md
# recorded for 'PostgreSQL, 2 workers' before it ("Scale: workers on PostgreSQL", its first run).
CPU_GOAL_CONFIG = "PostgreSQL, 2 workers"
CPU_PER_EVENT_GOAL_US = 163
MORE_WORKERS = ("PostgreSQL, 4 workers", "PostgreSQL, 2 workers")  # the first no slower than the second
MORE_WORKERS_GOAL = 1.0  # events/s of the first / of the second, at least
CEILING_CORES = (2, 4, 8, 16)


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "BELOW GOAL"


def _header(header: str, echo: Echo) -> None:
    echo(header)
    echo("-" * len(header))


def print_scale(results: ScaleResults, echo: Echo) -> None:
    _print_streams(results, echo)
    _print_cpu(results, echo)
    _print_profile(results, echo)
    _print_listing(results, echo)


def _print_streams(results: ScaleResults, echo: Echo) -> None:
    per_project = results.streams / results.projects
    echo("")
    echo(
        f"== Scale: {results.streams} concurrent streams over {results.projects} projects ({per_project:g} per "
        f"project, each a new session), answers of {results.chunks} text chunks, in-process fake LLM; {results.rounds} "
        f"round(s), the configurations' order rotated; medians over the rounds =="
    )
    base = results.baseline
    header = (
        f"{'configuration':<22} {'answered by':>12} {'errors':>6} {'wall s':>7} "
        f"{'events/s':>9} {'x':>5} {'TTFE p50 ms':>11} {'x':>5} {'TTFE p99 ms':>11} {'x':>5}"
    )
    _header(header, echo)
    for result in results.configs:
        eps, p50, p99 = result.events_per_second, result.ttfe_ms(0.5), result.ttfe_ms(0.99)
        answered = f"{result.workers_answered} of {result.config.workers}"
        x_eps, x_p50, x_p99 = (
            ratio(eps, base.events_per_second),
            ratio(p50, base.ttfe_ms(0.5)),
            ratio(p99, base.ttfe_ms(0.99)),
        )
        echo(
            f"{result.config.name:<22} {answered:>12} {len(result.errors):>6} {result.wall:>7.2f} "
            f"{eps:>9.0f} {x_eps:>5.2f} {p50:>11.0f} {x_p50:>5.2f} {p99:>11.0f} {x_p99:>5.2f}"
        )
    echo(
        f"x = the number / the same number of '{base.config.name}' (events/s: higher is faster; TTFE: lower is "
        "faster); answered by = distinct worker pids in X-Copilot-Worker (in the round with the fewest)"
    )
    for result in results.configs:
        rounds = ", ".join(f"{load.events_per_second:.0f}" for load in result.loads)
        line = f"  {result.config.name}: events/s per round {rounds}"
        if result.config.workers > 1:
            line += "; streams per worker " + ", ".join(worker_split(load) for load in result.loads)
        echo(line)
    for result in results.configs:
        if result.config.workers > 1:
            low, high = worker_balance(result.loads)
            echo(
                f"balance, {result.config.name}: each worker's streams / its fair share, over every round, "
                f"{low:.2f}..{high:.2f} (goal {BALANCE_GOAL[0]:g}..{BALANCE_GOAL[1]:g}: "
                f"{_verdict(BALANCE_GOAL[0] <= low and high <= BALANCE_GOAL[1])})"
            )
    named = {result.config.name: result for result in results.configs}
    if all(name in named for name in MORE_WORKERS):
        more, fewer = (named[name] for name in MORE_WORKERS)
        speed = ratio(more.events_per_second, fewer.events_per_second)
        echo(
            f"ratio events/s '{more.config.name}' / '{fewer.config.name}': {speed:.2f} "
            f"(goal >= {MORE_WORKERS_GOAL:g}: {_verdict(speed >= MORE_WORKERS_GOAL)})"
        )
    total = sum(result.streams for result in results.configs)
    errors = sum(len(result.errors) for result in results.configs)
    echo(f"errors: {errors} of {total} streams in all configurations (goal 0: {_verdict(errors == 0)})")
    for result in results.configs:
        for error in sorted(set(result.errors))[:3]:
            echo(f"  {result.config.name}: {error}")
        for error in sorted(set(result.warm_up_errors))[:3]:
            echo(f"  {result.config.name} (warm-up, not counted): {error}")
    every = all(result.workers_answered == result.config.workers for result in results.configs)
    echo(f"every worker answered streams in every configuration and round: {'YES' if every else 'NO'}")
    off = sum(result.sessions_off for result in results.configs)
    listed = sum(sum(result.session_stats.values()) for result in results.configs)
    echo(
        f"sessions whose statistics differ from the others' after the load (each had one identical turn; "
        f"STATS-007: counted once): {off} of {listed}"
    )
    for result in results.configs:
        if result.sessions_off:
            shapes = ", ".join(f"{count} x {stats}" for stats, count in result.session_stats.most_common())
            echo(f"  {result.config.name}: (message_count, llm_calls, input_tokens, output_tokens): {shapes}")
    logged = sum(len(result.server_log) for result in results.configs)
    echo(f"server log lines (warnings and errors, --log-level warning): {logged}")
    for result in results.configs:
        for line in sorted(set(result.server_log))[:3]:
            echo(f"  {result.config.name}: {line[:200]}")


def _print_cpu(results: ScaleResults, echo: Echo) -> None:
    cores = os.cpu_count() or 1
    echo("")
    echo(
        f"== CPU during the loads (psutil, user+system seconds, all rounds; {cores} cores give {cores} CPU-s per "
        "second): server = its processes, PG = PostgreSQL's postmaster and backends, client = this bench (httpx) =="
    )
    header = (
        f"{'configuration':<22} {'wall s':>7} {'server s':>8} {'PG s':>6} {'client s':>8} {'ours %':>6} "
        f"{'busy %':>6} {'server us/ev':>12} {'PG us/ev':>8} {'client us/ev':>12}"
    )
    _header(header, echo)
    for result in results.configs:
        wall = sum(load.wall for load in result.loads)
        server = sum(load.cpu.server for load in result.loads)
        pg = sum(load.cpu.postgres for load in result.loads)
        client = sum(load.cpu.client for load in result.loads)
        busy = sum(load.cpu.machine_busy_share * load.wall for load in result.loads) / wall
        ours = (server + pg + client) / (wall * cores)
        events = max(result.events, 1)
        echo(
            f"{result.config.name:<22} {wall:>7.2f} {server:>8.2f} {pg:>6.2f} {client:>8.2f} {100 * ours:>6.0f} "
            f"{100 * busy:>6.0f} {1e6 * server / events:>12.0f} {1e6 * pg / events:>8.0f} "
            f"{1e6 * client / events:>12.0f}"
        )
    for result in results.configs:
        if result.config.workers > 1:
            splits = []
            for load in result.loads:
                workers = sorted(load.cpu.server_by_pid.values(), reverse=True)[: result.config.workers]
                splits.append("/".join(f"{seconds:.1f}" for seconds in workers))
            echo(f"  {result.config.name}: CPU s per worker, busiest first, each round: {', '.join(splits)}")
    echo(
        "ours % = these processes' CPU / what the cores could give; busy % = the machine's CPUs not idle (every "
        "process on it): a busy % well above ours % means other work shared the machine"
    )
    goal = next((result for result in results.configs if result.config.name == CPU_GOAL_CONFIG), None)
    if goal is not None:
        spent = 1e6 * _server_and_postgres_per_event(goal)
        echo(
            f"server + PostgreSQL CPU per event, '{CPU_GOAL_CONFIG}': {spent:.0f} us (goal <= "
            f"{CPU_PER_EVENT_GOAL_US} us, half of the 326 us bench/README.md recorded before issue 33: "
            f"{_verdict(spent <= CPU_PER_EVENT_GOAL_US)})"
        )
    best = max(results.configs, key=lambda result: result.events_per_second)
    per_event = _server_and_postgres_per_event(best)
    if per_event > 0:
        ceilings = ", ".join(f"{n} cores ~{n / per_event:,.0f}" for n in CEILING_CORES)
        echo(
            f"CPU-bound ceiling from '{best.config.name}' ({1e6 * per_event:.0f} us of server + PostgreSQL CPU per "
            f"event; the client elsewhere, workers >= cores, nothing else shared): events/s at {ceilings} (information)"
        )


def _server_and_postgres_per_event(result: ConfigResult) -> float:
    """CPU seconds of the server's processes and PostgreSQL's per event, over every round of a configuration."""
    return sum(load.cpu.server + load.cpu.postgres for load in result.loads) / max(result.events, 1)


def _print_profile(results: ScaleResults, echo: Echo) -> None:
    profile, load = results.profile, results.profiled_load
    if profile is None or load is None:
        return
    echo("")
    echo(
        f"== Profile: '{load.config.name}' again with cProfile in each worker ({profile.workers} profiles; "
        f"{load.events_per_second:.0f} events/s under the profiler, {len(load.errors)} error(s)) =="
    )
    echo(
        f"own time in the workers' event-loop threads: {profile.total:.2f}s, of which waiting in epoll "
        f"{profile.idle:.2f}s, busy {profile.busy:.2f}s"
    )
    _header(f"{'busy time by package':<58} {'s':>7} {'share':>6}", echo)
    for group, seconds in profile.groups[:12]:
        echo(f"{group:<58} {seconds:>7.2f} {100 * ratio(seconds, profile.busy):>5.1f}%")
    echo("")
    _header(f"{'busiest functions (own time)':<88} {'s':>6} {'calls':>9}", echo)
    for group, where, seconds, calls in profile.functions:
        echo(f"{(group + ': ' + where)[:88]:<88} {seconds:>6.2f} {calls:>9}")
    echo("")
    title = "the server's own code calling into a library (cumulative time of those calls)"
    _header(f"{title:<88} {'s':>6}", echo)
    for caller, callee, seconds in profile.boundary:
        echo(f"{(caller + ' -> ' + callee)[:88]:<88} {seconds:>6.2f}")


def _print_listing(results: ScaleResults, echo: Echo) -> None:
    listing = results.listing
    if listing is None:
        return
    echo("")
    echo(
        f"== GET {{prefix}}/sessions on PostgreSQL over HTTP (one 1-process server per size), median of "
        f"{listing.calls} calls; the listed user owns {LISTED} sessions of the project ({LISTED_PINNED} pinned), "
        f"every other user {SESSIONS_PER_USER} over {PROJECTS} projects =="
    )
    echo(f"   {results.postgres_version}")
    header = f"{'sessions':>9} {'fill s':>7} {'vacuum s':>8} {'MB':>6} {'listed':>6} {'HTTP ms':>8} {'p90 ms':>7}"
    _header(header, echo)
    for size in listing.sizes:
        fill = size.fill
        p90 = sorted(size.http_ms)[int(0.9 * (len(size.http_ms) - 1))]
        echo(
            f"{fill.rows:>9} {fill.seconds:>7.2f} {fill.vacuum_seconds:>8.2f} {fill.table_mb:>6.0f} "
            f"{len(size.listed):>6} {median(size.http_ms):>8.2f} {p90:>7.2f}"
        )
    problems = listing.problems()
    echo(
        f"listing check (the user's {LISTED} sessions, pinned first, then updated_at descending): "
        f"{'WRONG ' + '; '.join(problems) if problems else 'OK'}"
    )
    smallest = listing.sizes[0]
    for size in listing.sizes[1:]:
        growth = ratio(size.median_ms, smallest.median_ms)
        echo(
            f"ratio latency({size.size})/latency({smallest.size}): {growth:.2f} "
            f"(goal <= {LISTING_GOAL:g}: {_verdict(growth <= LISTING_GOAL)})"
        )
    largest = listing.sizes[-1].size
    if listing.plan is not None:
        echo("")
        echo(f"EXPLAIN (ANALYZE, BUFFERS) of LISTING_QUERY at {largest} sessions (the listed user's values):")
        for line in listing.plan.text:
            echo(f"  {line}")
        echo(f"listing plan uses {LISTING_INDEX} with no Sort node: {listing.plan.verdict}")
    if listing.generic_plan is not None:
        echo(
            f"the same as a prepared statement's generic plan (plan_cache_mode = force_generic_plan): "
            f"{listing.generic_plan.verdict}"
        )
