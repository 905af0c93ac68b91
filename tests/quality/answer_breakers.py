"""Variants of the reference server whose listing or history answers 200 with a body that is not JSON, or not
the documented schema. They prove that the suite blames the implementation for such an answer (the requirements
it was read for FAIL) and never turns it into its own ERROR. Applied like the mutants, by
`python -m tests.quality.mutant_server NAME`."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

LISTING = r"/chat/sessions$"
HISTORY = r"/chat/sessions/[^/]+/history$"


@dataclass(frozen=True)
class Breaker:
    name: str
    breaks: str
    apply: Callable[[], None]
    blamed: frozenset[str]  # what must FAIL: the requirements the broken answer is read for, and CONTRACT-001


def _answer_200_with(path: str, body: bytes) -> Callable[[], None]:
    """Replace the body (and length) of every 200 answer to GET `path` (a regular expression)."""

    def apply() -> None:
        import reference_server.cli as cli

        original = cli.create_app

        def create_app(settings, *args, **kwargs):
            app = original(settings, *args, **kwargs)

            async def broken(scope, receive, send):
                if scope["type"] != "http" or scope["method"] != "GET" or not re.search(path, scope["path"]):
                    return await app(scope, receive, send)
                status: dict[str, int] = {}

                async def rewrite(message):
                    if message["type"] == "http.response.start":
                        status["code"] = message["status"]
                        if message["status"] == 200:
                            kept = [(k, v) for k, v in message["headers"] if k.lower() != b"content-length"]
                            message = {**message, "headers": [*kept, (b"content-length", str(len(body)).encode())]}
                        await send(message)
                    elif message["type"] == "http.response.body" and status.get("code") == 200:
                        if not message.get("more_body"):
                            await send({"type": "http.response.body", "body": body})
                    else:
                        await send(message)

                await app(scope, receive, rewrite)

            return broken

        cli.create_app = create_app

    return apply


BREAKERS = {
    breaker.name: breaker
    for breaker in (
        Breaker(
            "listing-not-json",
            "the listing answers 200 with a body that is not JSON",
            _answer_200_with(LISTING, b"<html>sessions</html>"),
            frozenset({"LIST-001", "CONTRACT-001"}),
        ),
        Breaker(
            "listing-not-an-array-of-sessions",
            "the listing answers 200 with an array of numbers instead of session objects",
            _answer_200_with(LISTING, b"[1, 2, 3]"),
            frozenset({"LIST-001", "CONTRACT-001"}),
        ),
        Breaker(
            "history-not-json",
            "the history answers 200 with a body that is not JSON",
            _answer_200_with(HISTORY, b"not json at all"),
            frozenset({"HISTORY-001", "CONTRACT-001"}),
        ),
        Breaker(
            "history-messages-not-a-list",
            "the history answers 200 with `messages` a string",
            _answer_200_with(HISTORY, b'{"thread_id": "x", "title": "t", "messages": "none"}'),
            frozenset({"HISTORY-001", "CONTRACT-001"}),
        ),
    )
}
