"""Stream throughput and time to first event of three subjects, interleaved turn by turn in one run.

- reference: `python -m reference_server` in its own process, through a real uvicorn socket on 127.0.0.1,
  POST {prefix}/stream read with httpx, counting `data:` frames (a new session per turn);
- bare LangGraph: the same graph and fake model in this process (bench/bare_langgraph.py);
- bare FastAPI: a minimal FastAPI app in its own process on 127.0.0.1 replaying the reference server's frames,
  recorded once per variant, with no work (bench/bare_sse.py).

The long variants run interleaved (each subject's turns are separated by the others'); the `short` variant then
runs back to back, subject by subject, each turn sent as soon as the previous stream ended on the same
keep-alive connection, as a client does when it chats quickly.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

import gns3_copilot_spec as spec

from . import servers
from .bare_langgraph import BareLangGraph
from .http_client import login, new_project, timed_stream
from .samples import TurnSample
from .scripts import SHORT, Variant, write_scripts

REFERENCE, LANGGRAPH, FASTAPI = "reference server", "bare LangGraph", "bare FastAPI SSE"
SUBJECTS = (REFERENCE, LANGGRAPH, FASTAPI)


@dataclass
class StreamResults:
    turns: int
    chunks: int
    variants: list[Variant]
    samples: dict[tuple[str, str], list[TurnSample]] = field(default_factory=dict)  # (variant, subject)

    def add(self, variant: Variant, subject: str, sample: TurnSample) -> None:
        self.samples.setdefault((variant.name, subject), []).append(sample)


async def run(workdir: Path, *, turns: int, chunks: int, log: Callable[[str], None]) -> StreamResults:
    scripts_dir, frames_dir = workdir / "scripts", workdir / "frames"
    frames_dir.mkdir(parents=True)
    variants = write_scripts(scripts_dir, chunks)
    results = StreamResults(turns, chunks, [*variants, SHORT])
    started: list[servers.ServerProcess] = []
    graph = BareLangGraph(workdir / "bare-langgraph", scripts_dir)
    try:
        reference = servers.start_reference(workdir / "reference-data", scripts_dir)
        started.append(reference)
        log(f"reference server at {reference.base_url}")
        async with httpx.AsyncClient(base_url=reference.base_url, timeout=300) as ref_client:
            headers = await login(ref_client)
            prefix = spec.default_prefix().format(project_id=await new_project(ref_client, headers, "bench-streams"))

            def reference_turn(variant: Variant, keep: list[bytes] | None = None) -> Awaitable[TurnSample]:
                body = {"message": variant.message}
                return timed_stream(ref_client, f"{prefix}/stream", body=body, headers=headers, keep=keep)

            for variant in results.variants:  # record the frames the bare endpoint replays (and warm the server up)
                frames: list[bytes] = []
                sample = await reference_turn(variant, frames)
                (frames_dir / f"{variant.name}.sse").write_bytes(b"".join(frame + b"\n\n" for frame in frames))
                log(f"recorded {sample.events} frames of the {variant.name!r} variant")

            bare = servers.start_bare_sse(frames_dir)
            started.append(bare)
            log(f"bare FastAPI SSE at {bare.base_url}")
            await graph.open()
            async with httpx.AsyncClient(base_url=bare.base_url, timeout=300) as bare_client:
                run_turn: dict[str, Callable[[Variant], Awaitable[TurnSample]]] = {
                    REFERENCE: reference_turn,
                    LANGGRAPH: lambda variant: graph.turn(variant.message),
                    FASTAPI: lambda variant: timed_stream(bare_client, f"/stream/{variant.name}"),
                }
                for variant in results.variants:  # warm-up, not counted
                    for subject in (LANGGRAPH, FASTAPI):
                        await run_turn[subject](variant)
                for index in range(turns):
                    order = SUBJECTS[index % 3 :] + SUBJECTS[: index % 3]  # rotate: no subject always first
                    for variant in variants:
                        for subject in order:
                            results.add(variant, subject, await run_turn[subject](variant))
                    log(f"turn {index + 1}/{turns} done")
                for subject in SUBJECTS:  # back to back: no pause between one stream's end and the next request
                    for _ in range(max(turns, 5)):
                        results.add(SHORT, subject, await run_turn[subject](SHORT))
                log("short turns done")
    finally:
        for server in reversed(started):
            server.stop()
        if hasattr(graph, "graph"):
            await graph.close()
    return results
