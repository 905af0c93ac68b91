"""langgraph-openai-serve serving the reference server's agent: `python -m peers.apps.openai_serve --port P ...`.

OpenAI Chat Completions at /v1 (the peer's /v1/chat/completions and /v1/models), model id `gns3-copilot`; no
authentication (the peer has none). Two things make our graph run under the peer, both through its own
`request_to_input` hook, which runs in the request's task before the peer starts the graph:

- the agent's nodes read the model settings from a context variable that a turn's request sets
  (reference_server.agent.context), so the hook sets it;
- the peer refuses a checkpointer on a graph without its interrupt feature (the client resends the conversation
  on every request), so the graph has none, and its title generation, which runs once per checkpointed session,
  would run on every request and stream its text into the answer (the peer forwards the chunks of every node):
  the hook marks the title as attempted.
"""

from __future__ import annotations

from fastapi import FastAPI
from langgraph_openai_serve import GraphConfig, GraphRegistry, LanggraphOpenaiServe

from fake_llm.request_log import RequestLog
from fake_llm.scripts import ScriptLibrary
from gns3_copilot_generated.constants import OPENAI_MODEL_ID
from reference_server.agent.context import set_request_context
from reference_server.agent.graph import build_graph
from reference_server.agent.llm_factory import ChatModelFactory
from reference_server.agent.tools import make_tools

from . import arguments, llm_settings, serve

MODEL = OPENAI_MODEL_ID  # the model id our channel lists (OPENAI-007), so that one request serves both
PREFIX = "/v1"


def create_app(fake_llm_url: str, project_dir) -> FastAPI:
    settings = llm_settings(fake_llm_url)
    models = ChatModelFactory(ScriptLibrary(), RequestLog())  # provider "openai": the library is not used
    graph = build_graph(make_tools(project_dir), models, None)

    def request_to_input(_request, messages):
        set_request_context(settings)
        return {"messages": messages, "title_attempted": True}

    config = GraphConfig(
        graph=graph,
        description="The reference server's GNS3 copilot agent; its model is the conformance suite's fake LLM.",
        request_to_input=request_to_input,
    )
    app = FastAPI(title="peer: langgraph-openai-serve")
    LanggraphOpenaiServe(registry=GraphRegistry(graphs={MODEL: config}), app=app).bind_openai_api(prefix=PREFIX)
    return app


def main() -> None:
    args = arguments("langgraph-openai-serve 0.31.0 serving the reference server's agent")
    args.project_dir.mkdir(parents=True, exist_ok=True)
    serve(create_app(args.fake_llm, args.project_dir), "langgraph-openai-serve", args.port)


if __name__ == "__main__":
    main()
