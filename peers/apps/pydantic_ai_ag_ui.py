"""pydantic-ai's AG-UI adapter serving our tools: `python -m peers.apps.pydantic_ai_ag_ui --port P ...`.

An AG-UI run is POST /ag-ui, answered by the adapter's own `AGUIAdapter.dispatch_request` (Starlette), the way
pydantic-ai's AG-UI documentation serves an agent; GET /ag-ui/health is ours, since the adapter has no route of
its own to wait for. No authentication (the adapter has none). The client holds the conversation (the adapter's
default). One option of the adapter is turned on: `include_usage`, its report of the run's token usage on
RUN_FINISHED (AG-UI 1.0), which it leaves off by default only because it names the provider and model.
The agent (peers/apps/pydantic_ai_agent.py): the reference server's tools, its model the fake LLM over HTTP.
"""

from __future__ import annotations

from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from . import arguments, serve
from .pydantic_ai_agent import make_agent

PATH = "/ag-ui"


def create_app(fake_llm_url: str, project_dir) -> Starlette:
    agent = make_agent(fake_llm_url, project_dir)

    async def run(request: Request) -> Response:
        return await AGUIAdapter.dispatch_request(request, agent=agent, include_usage=True)

    async def health(_request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    return Starlette(routes=[Route(PATH, run, methods=["POST"]), Route(f"{PATH}/health", health, methods=["GET"])])


def main() -> None:
    args = arguments("pydantic-ai 2.78's AG-UI adapter serving the reference server's tools")
    args.project_dir.mkdir(parents=True, exist_ok=True)
    serve(create_app(args.fake_llm, args.project_dir), "pydantic-ai (AG-UI)", args.port)


if __name__ == "__main__":
    main()
