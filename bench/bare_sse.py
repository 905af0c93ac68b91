"""The bare FastAPI SSE endpoint: replays recorded frames as `data: ...\\n\\n` with no other work.

`python -m bench.bare_sse --port 0 --frames-dir DIR` serves, for every `DIR/NAME.sse` (frames separated by
blank lines, as the reference server sent them), `POST /stream/NAME` with the reference server's SSE headers.
The frames are read once at start; a request only yields them, one body chunk per frame, as the reference
server's StreamingResponse does.

The listening socket is made with `proto=IPPROTO_TCP`, as uvicorn's own binding would make it: asyncio sets
TCP_NODELAY only on sockets whose `proto` is IPPROTO_TCP, so with `socket.socket(AF_INET)` (proto 0) every
connection would keep Nagle's algorithm on. This baseline is the ordinary, well-configured FastAPI + uvicorn.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import click
import uvicorn
from fastapi import FastAPI, HTTPException
from fastapi.responses import StreamingResponse

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def read_frames(path: Path) -> list[str]:
    return [frame + "\n\n" for frame in path.read_text(encoding="utf-8").split("\n\n") if frame]


def create_app(frames_dir: Path) -> FastAPI:
    recorded = {path.stem: read_frames(path) for path in sorted(frames_dir.glob("*.sse"))}
    app = FastAPI(title="bare SSE replay")

    @app.get("/ready")
    async def ready() -> dict[str, list[str]]:
        return {"streams": sorted(recorded)}

    @app.post("/stream/{name}")
    async def stream(name: str) -> StreamingResponse:
        frames = recorded.get(name)
        if frames is None:
            raise HTTPException(404, f"no recorded stream {name!r}")

        async def replay() -> AsyncIterator[str]:
            for frame in frames:
                yield frame

        return StreamingResponse(replay(), media_type="text/event-stream", headers=SSE_HEADERS)

    return app


@click.command()
@click.option("--host", default="127.0.0.1")
@click.option("--port", default=0, type=int)
@click.option("--frames-dir", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--log-level", default="warning")
def main(host: str, port: int, frames_dir: Path, log_level: str) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # see the module's docstring
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound_host, bound_port = sock.getsockname()[:2]
    click.echo(f"bare SSE replay listening on http://{bound_host}:{bound_port}")
    sys.stdout.flush()
    config = uvicorn.Config(create_app(frames_dir), log_level=log_level, lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
