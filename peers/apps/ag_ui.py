"""ag-ui-langgraph serving the reference server's agent: `python -m peers.apps.ag_ui --port P ...`.

An AG-UI run is POST /ag-ui (the peer's endpoint, with its GET /ag-ui/health); no authentication (the peer has
none). The peer reads the thread's state back after a run, so the graph gets a checkpointer (LangGraph's in-memory
one). The agent's nodes read the model settings from a context variable that a turn's request sets
(reference_server.agent.context): a thin ASGI wrapper sets it for every request, the peer's app runs inside.
The agent is served as the OpenAI peer serves it (peers/apps/openai_serve.py): its title generation off, the
title marked as attempted in every run's input state, since the peer streams every node's model output, the title
node's too, as assistant text.
"""

from __future__ import annotations

from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
from fastapi import FastAPI
from langgraph.checkpoint.memory import InMemorySaver

from fake_llm.request_log import RequestLog
from fake_llm.scripts import ScriptLibrary
from reference_server.agent.context import set_request_context
from reference_server.agent.graph import build_graph
from reference_server.agent.llm_factory import ChatModelFactory
from reference_server.agent.tools import make_tools

from . import arguments, llm_settings, serve

PATH = "/ag-ui"


class _NoTitleAgent(LangGraphAgent):
    """The peer's agent with our title node off: every run's input state marks the title as attempted (the graph
    then ends after its last generation), as the OpenAI peer's `request_to_input` does."""

    def langgraph_default_merge_state(self, state, messages, input):  # noqa: A002 - the peer's own parameter name
        return {**super().langgraph_default_merge_state(state, messages, input), "title_attempted": True}


def create_app(fake_llm_url: str, project_dir):
    settings = llm_settings(fake_llm_url)
    models = ChatModelFactory(ScriptLibrary(), RequestLog())  # provider "openai": the library is not used
    graph = build_graph(make_tools(project_dir), models, InMemorySaver())
    inner = FastAPI(title="peer: ag-ui-langgraph")
    add_langgraph_fastapi_endpoint(inner, _NoTitleAgent(name="gns3-copilot", graph=graph), PATH)

    async def app(scope, receive, send):
        if scope["type"] == "http":
            set_request_context(settings)
        await inner(scope, receive, send)

    return app


def main() -> None:
    args = arguments("ag-ui-langgraph 0.0.47 serving the reference server's agent")
    args.project_dir.mkdir(parents=True, exist_ok=True)
    serve(create_app(args.fake_llm, args.project_dir), "ag-ui-langgraph", args.port)


if __name__ == "__main__":
    main()
