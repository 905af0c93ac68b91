"""The agent graph describes its input and output, as LangGraph hosts ask it to (ag-ui-langgraph calls
`get_input_jsonschema()` on every run): its state type must be one pydantic can read on Python 3.11."""

from __future__ import annotations

from pathlib import Path

from langgraph.checkpoint.memory import InMemorySaver

from fake_llm.request_log import RequestLog
from fake_llm.scripts import ScriptLibrary
from reference_server.agent.graph import build_graph
from reference_server.agent.llm_factory import ChatModelFactory
from reference_server.agent.tools import make_tools


def test_the_graph_gives_its_input_and_output_json_schemas(tmp_path: Path):
    graph = build_graph(make_tools(tmp_path), ChatModelFactory(ScriptLibrary(), RequestLog()), InMemorySaver())
    assert {"messages", "conversation_title", "title_attempted"} <= set(graph.get_input_jsonschema()["properties"])
    assert "messages" in graph.get_output_jsonschema()["properties"]
