"""Variants of the reference server whose stream requests fail for one check only. The first answers the first
stream request of `titles.once` 500 ("database is locked", as gns3-server's SQLite sometimes answers): the suite
re-runs a check that met a server's own error and reports what flipped as FLAKY instead of blaming the
requirement. The second fails every turn of `preconditions.token_required`, whose set-up turn then fails: the
check blames nothing it was not judging, its rules are NOT TESTABLE, blocked by TESTABILITY-001. The third sends
the `done` of the first turn of `abort.running_turn` 6 s late, as a server busy with the suite's other checks
might: that timed check is judged again with the server to itself, and passes. The fourth serves the first three
races of `concurrency.busy_new_session` one request after the other, as a loaded server may: no race happens, so
PRECHECK-001 cannot be judged, and the check is judged again with the server to itself, where the race happens
and is refused as it should. Applied like the mutants, by `python -m tests.quality.mutant_server NAME`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .asgi_rewrite import on_stream_requests


@dataclass(frozen=True)
class FlakyServer:
    name: str
    breaks: str
    apply: Callable[[], None]


def _streams_of_a_check_fail(mark: bytes, times: int) -> Callable[[], None]:
    """The first `times` stream requests whose body holds `mark` (a check's run tag holds its id) answer 500."""
    return lambda: _fail_streams(mark, times)


def _fail_streams(mark: bytes, times: int) -> None:
    failed: list[bool] = []

    async def flaky(app, scope, body, receive, send):
        if mark in body and len(failed) < times:
            failed.append(True)
            text = b"database is locked"
            headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(text)).encode())]
            await send({"type": "http.response.start", "status": 500, "headers": headers})
            await send({"type": "http.response.body", "body": text})
            return
        await app(scope, receive, send)

    on_stream_requests(flaky)


def _first_done_of_a_check_held(mark: bytes, seconds: float) -> Callable[[], None]:
    return lambda: _hold_done(mark, seconds)


def _hold_done(mark: bytes, seconds: float) -> None:
    """The `done` frame of the first stream whose request body holds `mark` is sent `seconds` late."""
    import asyncio

    held: list[bool] = []

    async def late_done(app, scope, body, receive, send):
        if mark not in body or held:
            return await app(scope, receive, send)
        held.append(True)

        async def send_late(message):
            if message["type"] == "http.response.body" and b'"done"' in message.get("body", b""):
                await asyncio.sleep(seconds)
            await send(message)

        await app(scope, receive, send_late)

    on_stream_requests(late_done)


def _first_races_of_a_check_in_turn(mark: bytes, requests: int) -> Callable[[], None]:
    return lambda: _serve_in_turn(mark, requests)


def _serve_in_turn(mark: bytes, requests: int) -> None:
    """The first `requests` stream requests whose body holds `mark` are served one at a time, each after the
    previous one's turn ended: two sent at the same moment become two turns in a row."""
    import asyncio

    one_at_a_time = asyncio.Lock()
    seen: list[bool] = []

    async def in_turn(app, scope, body, receive, send):
        if mark not in body or len(seen) >= requests:
            return await app(scope, receive, send)
        seen.append(True)
        async with one_at_a_time:
            await app(scope, receive, send)

    on_stream_requests(in_turn)


FLAKY_SERVERS = {
    server.name: server
    for server in (
        FlakyServer(
            "first-stream-of-titles-once-500",
            "the first stream request of the check titles.once answers 500 `database is locked`",
            _streams_of_a_check_fail(b"titles-once", 1),
        ),
        FlakyServer(
            "set-up-turns-of-token-required-500",
            "every stream request of the check preconditions.token_required answers 500 (its set-up turn fails)",
            _streams_of_a_check_fail(b"preconditions-token_required", 1000),
        ),
        FlakyServer(
            "first-done-of-abort-running_turn-late",
            "the `done` of the first turn of the check abort.running_turn (the aborted one) is sent 6 s late",
            _first_done_of_a_check_held(b"abort-running_turn", 6.0),
        ),
        FlakyServer(
            "first-races-of-busy_new_session-in-turn",
            "the first three races of concurrency.busy_new_session are served one request after the other",
            _first_races_of_a_check_in_turn(b"concurrency-busy_new_session", 6),
        ),
    )
}
