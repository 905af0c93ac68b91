"""Our channels against the peers serving the same protocols and against bare LangGraph, interleaved in one run.

Every subject runs the same agent (the reference server's graph and tools) and every model call goes over HTTP to
one fake LLM (`python -m fake_llm serve`) playing the bench's scripts (bench/scripts.py):

- ours: the reference server in its own process (its admin's LLM configuration pointed at the fake LLM), each of
  its channels in turn (GNS3 stream, OpenAI chat, OpenAI responses, UI stream, AG-UI), a new session per turn;
- the peers (peers/): langgraph-openai-serve (OpenAI chat) and ag-ui-langgraph (AG-UI), each in its own process;
- bare LangGraph: the graph driven in this process with `astream_events` (bench/bare_langgraph.py), its model the
  same fake LLM over HTTP.

The peers only run inside a network namespace whose only interface is loopback, so `--only channels` re-runs the
bench inside `unshare -rn` (`rerun_inside`), after installing the peers when needed; the fake LLM, the servers and
the client all run in that namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sys
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

import gns3_copilot_spec as spec
from conformance.harness import netns
from peers.apps import llm_settings
from reference_server.agent.context import LlmSettings

from . import servers
from .bare_langgraph import BareLangGraph
from .channel_subjects import PEER_SUBJECTS, SUBJECTS, Subject, answer_text, peer_target, request
from .http_client import login, my_user_id, new_project, timed_stream
from .samples import TurnSample
from .scripts import Variant, write_scripts
from .streams import StreamResults

PEERS_COMMAND = "python3 tasks.py peers --install-only"


@dataclasses.dataclass
class ChannelResults(StreamResults):
    subjects: tuple[Subject, ...] = SUBJECTS


def rerun_inside(argv: list[str]) -> int:
    """Install the peers when needed (told on stderr), then run `python -m bench ARGV` again inside a loopback-only
    namespace (conformance.harness.netns, as the GNS3 and peers runners do); its exit code."""
    from peers.install import InstallError, ensure

    for subject in PEER_SUBJECTS:
        try:
            ensure(subject.peer)
        except InstallError as exc:
            sys.exit(f"bench: installing the peer {subject.peer} failed; run `{PEERS_COMMAND}` first\n{exc}")
    return netns.rerun_inside("bench", argv, why="the peers run only inside one (see `python3 tasks.py peers`)")


def inside() -> bool:
    return netns.inside("bench")


async def run(workdir: Path, *, turns: int, chunks: int, log: Callable[[str], None]) -> ChannelResults:
    variants = write_scripts(workdir / "scripts", chunks)
    results = ChannelResults(turns, chunks, variants)
    started: list[servers.ServerProcess] = []
    try:
        fake = servers.start_fake_llm_server(workdir / "scripts")
        started.append(fake)
        log(f"fake LLM at {fake.base_url}")
        bases = await _start_servers(workdir, fake.base_url, started, log)
        llm = llm_settings(fake.base_url)  # the peers' model settings, for every subject
        graph = BareLangGraph(workdir / "bare-langgraph", workdir / "scripts", llm=llm, counts=answer_text)
        await graph.open()
        try:
            async with contextlib.AsyncExitStack() as stack:
                clients = {
                    key: await stack.enter_async_context(httpx.AsyncClient(base_url=base, timeout=300))
                    for key, base in bases.items()
                }  # one keep-alive client per server; None: the reference server
                reference = clients[None]
                headers = await login(reference)
                await _use_llm(reference, headers, llm)
                prefix = spec.default_prefix().format(project_id=await new_project(reference, headers, "bench-ch"))

                def turn(subject: Subject, variant: Variant) -> Awaitable[TurnSample]:
                    if subject.protocol is None:
                        return graph.turn(variant.message)
                    path, body = request(subject, str(uuid.uuid4()), variant.message, prefix)
                    return timed_stream(
                        clients[subject.peer],
                        path,
                        body=body,
                        headers=headers if subject.peer is None else None,
                        counts=subject.protocol.counts,
                    )

                await _interleave(results, turn, log)
        finally:
            await graph.close()
    finally:
        for server in reversed(started):
            server.stop()
    return results


async def _interleave(
    results: ChannelResults, turn: Callable[[Subject, Variant], Awaitable[TurnSample]], log: Callable[[str], None]
) -> None:
    for variant in results.variants:  # warm-up, not counted
        for subject in results.subjects:
            await turn(subject, variant)
    count = len(results.subjects)
    for index in range(results.turns):
        order = results.subjects[index % count :] + results.subjects[: index % count]  # no subject always first
        for variant in results.variants:
            for subject in order:
                results.add(variant, subject.name, await turn(subject, variant))
        log(f"turn {index + 1}/{results.turns} done")


async def _start_servers(
    workdir: Path, fake_llm_url: str, started: list[servers.ServerProcess], log: Callable[[str], None]
) -> dict[str | None, str]:
    """The reference server and the peers, started side by side; their base URLs (None: the reference server)."""
    starts: dict[str | None, Callable[[], servers.ServerProcess]] = {
        None: lambda: servers.start_reference(workdir / "reference-data", workdir / "scripts")
    }
    for subject in PEER_SUBJECTS:
        ready = peer_target(subject.peer)["start"]["ready_path"]
        starts[subject.peer] = lambda peer=subject.peer, ready=ready: servers.start_peer(
            peer, fake_llm_url, workdir / "peers", ready_path=ready
        )
    outcomes = await asyncio.gather(*(asyncio.to_thread(start) for start in starts.values()), return_exceptions=True)
    started.extend(outcome for outcome in outcomes if isinstance(outcome, servers.ServerProcess))
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    for server in outcomes:
        log(f"{server.name} at {server.base_url}")
    return dict(zip(starts, (server.base_url for server in outcomes), strict=True))


async def _use_llm(client: httpx.AsyncClient, headers: dict[str, str], llm: LlmSettings) -> None:
    """Point the caller's default LLM configuration at the fake LLM over HTTP (as the peers' model is)."""
    user_id = await my_user_id(client, headers)
    path = f"/v3/access/users/{user_id}/llm-model-configs"
    listed = await client.get(path, headers=headers)
    listed.raise_for_status()
    config_id = listed.json()["default_config"]["config_id"]
    body = {key: value for key, value in dataclasses.asdict(llm).items() if value is not None}
    response = await client.put(f"{path}/{config_id}", json=body, headers=headers)
    response.raise_for_status()
