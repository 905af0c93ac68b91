"""pydantic-ai's Vercel AI adapter serving our tools: `python -m peers.apps.pydantic_ai_vercel_ai --port P ...`.

A turn is POST /api/chat (the path `useChat`'s DefaultChatTransport posts to by default) with the body that
transport sends, answered by the adapter's own `VercelAIAdapter.dispatch_request` (Starlette) as a UI message
stream, the way pydantic-ai's Vercel AI documentation serves an agent, with `sdk_version=6`: the suite's client is
`ai` 6 (the adapter's default, 5, keeps AI SDK 5's chunks: no tool approval or tool-input-error chunks, no provider
metadata). GET /api/health is ours, since the adapter has no route of its own to wait for. No authentication and
no stored chats (the client holds the conversation, the adapter's default). The agent (peers/apps/pydantic_ai_agent.py):
the reference server's tools, its model the fake LLM over HTTP.
"""

from __future__ import annotations

from pydantic_ai.ui.vercel_ai import VercelAIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from . import arguments, serve
from .pydantic_ai_agent import make_agent

PATH = "/api/chat"
HEALTH = "/api/health"


def create_app(fake_llm_url: str, project_dir) -> Starlette:
    agent = make_agent(fake_llm_url, project_dir)

    async def chat(request: Request) -> Response:
        return await VercelAIAdapter.dispatch_request(request, agent=agent, sdk_version=6)

    async def health(_request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    return Starlette(routes=[Route(PATH, chat, methods=["POST"]), Route(HEALTH, health, methods=["GET"])])


def main() -> None:
    args = arguments("pydantic-ai 2.78's Vercel AI adapter serving the reference server's tools")
    args.project_dir.mkdir(parents=True, exist_ok=True)
    serve(create_app(args.fake_llm, args.project_dir), "pydantic-ai (Vercel AI)", args.port)


if __name__ == "__main__":
    main()
