"""A variant of the reference server with one transient internal error: the first stream request of the check
`titles.once` is answered 500 ("database is locked", as gns3-server's SQLite sometimes answers), every later one
is served. It proves the suite re-runs a check that met a server's own error and reports what flipped as FLAKY
instead of blaming the requirement. Applied like the mutants, by `python -m tests.quality.mutant_server NAME`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

MARK = b"titles-once"  # the fake-LLM run tag of the check's turns contains its id


@dataclass(frozen=True)
class FlakyServer:
    name: str
    breaks: str
    apply: Callable[[], None]


def _first_stream_of_the_check_fails() -> None:
    import reference_server.cli as cli

    original = cli.create_app
    failed: list[bool] = []

    def create_app(settings):
        app = original(settings)

        async def flaky(scope, receive, send):
            if scope["type"] != "http" or scope["method"] != "POST" or not scope["path"].endswith("/stream"):
                return await app(scope, receive, send)
            received, body, more = [], b"", True
            while more:
                message = await receive()
                received.append(message)
                body += message.get("body", b"")
                more = message.get("more_body", False)
            if MARK in body and not failed:
                failed.append(True)
                text = b"database is locked"
                headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(text)).encode())]
                await send({"type": "http.response.start", "status": 500, "headers": headers})
                await send({"type": "http.response.body", "body": text})
                return
            replay = iter(received)

            async def receive_again():
                return next(replay, None) or await receive()

            await app(scope, receive_again, send)

        return flaky

    cli.create_app = create_app


FLAKY_SERVERS = {
    server.name: server
    for server in (
        FlakyServer(
            "first-stream-of-titles-once-500",
            "the first stream request of the check titles.once answers 500 `database is locked`",
            _first_stream_of_the_check_fails,
        ),
    )
}
