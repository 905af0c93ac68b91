"""The bare LangGraph subject: the reference server's graph (`build_graph`), its tools and its in-process fake
model, driven in this process with `astream_events(version="v2")`, counting `on_chat_model_stream` events.

The checkpointer is the reference server's: an AsyncSqliteSaver over a temporary aiosqlite database in WAL
mode, so the difference to the reference server is the HTTP path, the turn task and queue, the translation to
contract events, the session bookkeeping and the SSE framing, not the persistence of the graph.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiosqlite
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from fake_llm.request_log import RequestLog
from fake_llm.scripts import ScriptLibrary
from reference_server.agent.context import LlmSettings, set_request_context
from reference_server.agent.graph import build_graph, stamp
from reference_server.agent.llm_factory import ChatModelFactory
from reference_server.agent.tools import make_tools, write_default_topology

from .samples import TurnSample

CHECKPOINTER = "AsyncSqliteSaver (aiosqlite, WAL, temporary file)"
FAKE_LLM = LlmSettings(provider="fake", model="fake-model", temperature=0.7)


def model_stream(event: dict[str, Any]) -> bool:
    return event["event"] == "on_chat_model_stream"


class BareLangGraph:
    """`llm`: the model's settings (default: the in-process fake model); `counts`: which events a turn counts."""

    def __init__(
        self,
        workdir: Path,
        scripts_dir: Path,
        llm: LlmSettings = FAKE_LLM,
        counts: Callable[[dict[str, Any]], bool] = model_stream,
    ) -> None:
        self.workdir = workdir
        self.scripts_dir = scripts_dir
        self.llm = llm
        self.counts = counts

    async def open(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        write_default_topology(self.workdir)
        self._conn = await aiosqlite.connect(self.workdir / "checkpoints.db")
        await self._conn.execute("PRAGMA journal_mode=WAL")
        saver = AsyncSqliteSaver(self._conn)
        await saver.setup()
        models = ChatModelFactory(ScriptLibrary.from_folders([self.scripts_dir]), RequestLog())
        self.graph = build_graph(make_tools(self.workdir), models, saver)

    async def close(self) -> None:
        await self._conn.close()

    async def turn(self, message: str) -> TurnSample:
        """One turn in a new thread (as the reference subject starts a new session per turn)."""
        set_request_context(self.llm)
        thread_id = str(uuid.uuid4())
        config = {"configurable": {"thread_id": thread_id, "project_id": "bench"}, "metadata": {"user_id": "bench"}}
        graph_input = {"messages": [stamp(HumanMessage(message))]}
        count, first = 0, None
        start = time.perf_counter()
        async for event in self.graph.astream_events(graph_input, config, version="v2"):
            if self.counts(event):
                count += 1
                if first is None:
                    first = time.perf_counter()
        end = time.perf_counter()
        return TurnSample(events=count, ttfe=(first or end) - start, total=end - start)
