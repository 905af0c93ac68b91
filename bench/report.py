"""The printed report: tables and ratios, with the goals shown as information (never asserted)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from peers import get_peer

from .bare_langgraph import CHECKPOINTER
from .channel_subjects import BARE, BARE_COUNTED, OURS, PEER_SUBJECTS, PROTOCOLS, Subject, ours
from .channels import ChannelResults
from .samples import median, ratio
from .scripts import SHORT
from .sessions import SessionsResults, medians
from .streams import FASTAPI, LANGGRAPH, REFERENCE, SUBJECTS, StreamResults

STREAM_GOAL = 0.95  # reference / bare LangGraph events per second, at least (issue 33; 0.7 before it)
SHORT_TTFE_GOAL = 1.5  # the short variant's TTFE, reference / bare LangGraph, at most (issue 33)
LISTING_GOAL = 3.0  # latency at the largest size / at the smallest, at most

Echo = Callable[[str], None]


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "BELOW GOAL"


def _header(header: str, echo: Echo) -> None:
    echo(header)
    echo("-" * len(header))


def _subjects_table(results: StreamResults, subjects: Sequence[str], echo: Echo) -> None:
    """One row per variant and subject: medians of its turns, and its best turn."""
    width = max(18, *(len(subject) for subject in subjects))
    columns = f"{'events/turn':>11} {'events/s':>10} {'best ev/s':>10} {'TTFE ms':>9} {'turn ms':>9}"
    _header(f"{'variant':<8} {'subject':<{width}} {columns}", echo)
    for variant in results.variants:
        for subject in subjects:
            samples = results.samples.get((variant.name, subject), [])
            events = median([s.events for s in samples])
            eps = median([s.events_per_second for s in samples])
            ttfe = median([s.ttfe * 1000 for s in samples])
            total = median([s.total * 1000 for s in samples])
            best = max((s.events_per_second for s in samples), default=float("nan"))
            echo(
                f"{variant.name:<8} {subject:<{width}} {events:>11.0f} {eps:>10.0f} {best:>10.0f} "
                f"{ttfe:>9.1f} {total:>9.1f}"
            )


def _summary(
    results: StreamResults, variant: str, subjects: Sequence[str]
) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """Per subject: median events/s, best events/s, median TTFE (s)."""
    samples = {subject: results.samples.get((variant, subject), []) for subject in subjects}
    eps = {subject: median([s.events_per_second for s in found]) for subject, found in samples.items()}
    best = {subject: max((s.events_per_second for s in found), default=0.0) for subject, found in samples.items()}
    ttfe = {subject: median([s.ttfe for s in found]) for subject, found in samples.items()}
    return eps, best, ttfe


def print_streams(results: StreamResults, echo: Echo) -> None:
    echo("")
    echo(f"== Stream throughput: {results.turns} turn(s) per subject and variant, {results.chunks} text chunks ==")
    echo(f"   bare LangGraph checkpointer: {CHECKPOINTER}")
    _subjects_table(results, SUBJECTS, echo)
    echo("")
    for variant in results.variants:
        eps, best, ttfe = _summary(results, variant.name, SUBJECTS)
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
        first = ratio(ttfe[REFERENCE], ttfe[LANGGRAPH])
        first_goal = (
            f"goal <= {SHORT_TTFE_GOAL}: {_verdict(first <= SHORT_TTFE_GOAL)}"
            if variant.name == SHORT.name
            else "information"
        )
        echo(
            f"[{variant.name}] TTFE reference/bare-LangGraph: {first:.2f} ({first_goal}), "
            f"reference/bare-FastAPI: {ratio(ttfe[REFERENCE], ttfe[FASTAPI]):.2f} (information)"
        )
        if variant.name == SHORT.name:  # what an HTTP request alone adds to the call in the same process
            floor = ratio(ttfe[FASTAPI] + ttfe[LANGGRAPH], ttfe[LANGGRAPH])
            echo(
                f"[{variant.name}] TTFE floor of a server doing no work of its own, (bare-FastAPI + "
                f"bare-LangGraph)/bare-LangGraph: {floor:.2f} (information)"
            )


def print_sessions(results: SessionsResults, echo: Echo) -> None:
    echo("")
    echo(
        f"== GET {{prefix}}/sessions: in-process ASGI (httpx.ASGITransport), median of {results.calls} calls; "
        "the caller owns 50 sessions (5 pinned), every other user 50 =="
    )
    header = f"{'sessions':>9} {'users':>7} {'fill s':>7} {'listed':>6} {'HTTP ms':>8} {'p90 ms':>7} {'SQL ms':>7}"
    _header(header, echo)
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


CHANNEL_PEER_GOAL = 1.0  # ours / the peer serving the same protocol, events/s and TTFE, at least
CHANNEL_BARE_GOAL = 0.8  # ours / bare LangGraph events/s, at least


def _channel_comparisons() -> list[tuple[Subject, Subject, float | None, float | None]]:
    """(subject, against, events/s goal, TTFE goal): ours against each peer, everything against bare LangGraph."""
    against_peers = [(ours(peer.protocol), peer, CHANNEL_PEER_GOAL, CHANNEL_PEER_GOAL) for peer in PEER_SUBJECTS]
    against_bare = [(subject, BARE, CHANNEL_BARE_GOAL, None) for subject in OURS]
    return [*against_peers, *against_bare, *((peer, BARE, None, None) for peer in PEER_SUBJECTS)]


def _goal(value: float, goal: float | None) -> str:
    return "info" if goal is None else f">= {goal:.1f} {_verdict(value >= goal)}"


def print_channels(results: ChannelResults, echo: Echo) -> None:
    names = [subject.name for subject in results.subjects]
    echo("")
    echo(
        f"== Channels: {results.turns} turn(s) per subject and variant, {results.chunks} text chunks; "
        "every subject's model is one fake LLM over HTTP =="
    )
    peers = ", ".join(f"{get_peer(subject.peer).requirement}" for subject in PEER_SUBJECTS)
    echo(f"   ours: the reference server's channels, a new session per turn; peers: {peers}")
    echo("   counted (the answer's text pieces only):")
    for protocol in PROTOCOLS:
        echo(f"     {protocol.name}: {protocol.counted}")
    echo(f"     bare LangGraph: {BARE_COUNTED}")
    _subjects_table(results, names, echo)
    echo("")
    echo(
        "ratios: events/s = subject/against, TTFE = against/subject (both >= 1.0: the subject is faster); "
        "goals printed, never asserted"
    )
    width = max(len(name) for name in names)
    columns = f"{'events/s':>8} {'best':>6} {'TTFE':>6}  {'events/s goal':<17} TTFE goal"
    _header(f"{'variant':<8} {'subject':<{width}} {'against':<{width}} {columns}", echo)
    for variant in results.variants:
        eps, best, ttfe = _summary(results, variant.name, names)
        for subject, against, eps_goal, ttfe_goal in _channel_comparisons():
            speed = ratio(eps[subject.name], eps[against.name])
            first = ratio(ttfe[against.name], ttfe[subject.name])
            echo(
                f"{variant.name:<8} {subject.name:<{width}} {against.name:<{width}} {speed:>8.2f} "
                f"{ratio(best[subject.name], best[against.name]):>6.2f} {first:>6.2f}  "
                f"{_goal(speed, eps_goal):<17} {_goal(first, ttfe_goal)}"
            )
