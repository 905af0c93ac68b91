"""The printed report: tables and ratios, with the goals shown as information (never asserted)."""

from __future__ import annotations

from collections.abc import Callable

from .bare_langgraph import CHECKPOINTER
from .samples import median, ratio
from .scripts import SHORT
from .sessions import SessionsResults, medians
from .streams import FASTAPI, LANGGRAPH, REFERENCE, SUBJECTS, StreamResults

STREAM_GOAL = 0.7  # reference / bare LangGraph events per second, at least
LISTING_GOAL = 3.0  # latency at the largest size / at the smallest, at most

Echo = Callable[[str], None]


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "BELOW GOAL"


def print_streams(results: StreamResults, echo: Echo) -> None:
    echo("")
    echo(f"== Stream throughput: {results.turns} turn(s) per subject and variant, {results.chunks} text chunks ==")
    echo(f"   bare LangGraph checkpointer: {CHECKPOINTER}")
    header = (
        f"{'variant':<8} {'subject':<18} {'events/turn':>11} {'events/s':>10} {'best ev/s':>10} "
        f"{'TTFE ms':>9} {'turn ms':>9}"
    )
    echo(header)
    echo("-" * len(header))
    for variant in results.variants:
        for subject in SUBJECTS:
            samples = results.samples.get((variant.name, subject), [])
            events = median([s.events for s in samples])
            eps = median([s.events_per_second for s in samples])
            ttfe = median([s.ttfe * 1000 for s in samples])
            total = median([s.total * 1000 for s in samples])
            best = max((s.events_per_second for s in samples), default=float("nan"))
            echo(
                f"{variant.name:<8} {subject:<18} {events:>11.0f} {eps:>10.0f} {best:>10.0f} {ttfe:>9.1f} {total:>9.1f}"
            )
    echo("")
    for variant in results.variants:
        samples = {subject: results.samples.get((variant.name, subject), []) for subject in SUBJECTS}
        eps = {subject: median([s.events_per_second for s in found]) for subject, found in samples.items()}
        best = {subject: max((s.events_per_second for s in found), default=0.0) for subject, found in samples.items()}
        ttfe = {subject: median([s.ttfe for s in found]) for subject, found in samples.items()}
        to_graph = ratio(eps[REFERENCE], eps[LANGGRAPH])
        goal = (
            "information: answers of a few events, read the TTFE"
            if variant.name == SHORT.name
            else f"goal >= {STREAM_GOAL}: {_verdict(to_graph >= STREAM_GOAL)}"
        )
        echo(
            f"[{variant.name}] ratio reference/bare-LangGraph events/s: {to_graph:.2f} "
            f"({goal}; best turns: {ratio(best[REFERENCE], best[LANGGRAPH]):.2f})"
        )
        echo(
            f"[{variant.name}] ratio reference/bare-FastAPI events/s: {ratio(eps[REFERENCE], eps[FASTAPI]):.3f} "
            f"(information; best turns: {ratio(best[REFERENCE], best[FASTAPI]):.3f})"
        )
        echo(
            f"[{variant.name}] TTFE reference/bare-LangGraph: {ratio(ttfe[REFERENCE], ttfe[LANGGRAPH]):.2f}, "
            f"reference/bare-FastAPI: {ratio(ttfe[REFERENCE], ttfe[FASTAPI]):.2f} (information)"
        )


def print_sessions(results: SessionsResults, echo: Echo) -> None:
    echo("")
    echo(
        f"== GET {{prefix}}/sessions: in-process ASGI (httpx.ASGITransport), median of {results.calls} calls; "
        "the caller owns 50 sessions (5 pinned), every other user 50 =="
    )
    header = f"{'sessions':>9} {'users':>7} {'fill s':>7} {'listed':>6} {'HTTP ms':>8} {'p90 ms':>7} {'SQL ms':>7}"
    echo(header)
    echo("-" * len(header))
    for size in results.sizes:
        http, sql = medians(size)
        p90 = sorted(size.http_ms)[int(0.9 * (len(size.http_ms) - 1))]
        echo(
            f"{size.size:>9} {size.fill.users:>7} {size.fill.seconds:>7.2f} {size.listed:>6} "
            f"{http:>8.2f} {p90:>7.2f} {sql:>7.3f}"
        )
    problems = [f"{size.size}: {size.order_problem}" for size in results.sizes if size.order_problem]
    verdict = "WRONG " + "; ".join(problems) if problems else "OK"
    echo(f"order check (pinned first, then updated_at descending): {verdict}")
    if len(results.sizes) >= 2:
        small, large = results.sizes[0], results.sizes[-1]
        growth = ratio(medians(large)[0], medians(small)[0])
        sql_growth = ratio(medians(large)[1], medians(small)[1])
        echo("")
        echo(
            f"ratio latency({large.size})/latency({small.size}): {growth:.2f} "
            f"(goal <= {LISTING_GOAL:g}: {_verdict(growth <= LISTING_GOAL)}); SQL alone: {sql_growth:.2f}"
        )
    if results.plan is not None:
        largest = results.sizes[-1].size
        echo("")
        echo(f"EXPLAIN QUERY PLAN of LISTING_QUERY at {largest} sessions:")
        for row in results.plan.rows:
            echo(f"  {row}")
        plan = results.plan
        echo(
            f"index serves both the filter and the order: {'YES' if plan.index_serves_filter_and_order else 'NO'} "
            f"(index {plan.index or 'none'}; {'a' if plan.sorts else 'no'} USE TEMP B-TREE FOR ORDER BY)"
        )
    if results.plan_without_listing_index is not None:
        echo("")
        echo("for comparison, on a copy without the extra listing index (the contract's indexes only):")
        for row in results.plan_without_listing_index.rows:
            echo(f"  {row}")
        echo(f"  SQL ms (median): {median(results.sql_ms_without_listing_index):.3f}")
