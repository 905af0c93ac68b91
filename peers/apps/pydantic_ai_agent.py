"""The pydantic-ai agent both pydantic-ai peers serve (peers/apps/pydantic_ai_ag_ui.py, pydantic_ai_vercel_ai.py).

Ours: the tools, exactly the reference server's (reference_server.agent.tools.make_tools), and the model's address,
the suite's fake LLM over HTTP. The peer's: everything else, its `Agent` (no system prompt or instructions, no model
settings: what the model is sent is pydantic-ai's own request), its OpenAI chat model (`OpenAIChatModel`, which
streams and asks for usage itself), its tool loop and its UI adapters.

The tools go through pydantic-ai's own LangChain adapter (`pydantic_ai.ext.langchain.tool_from_langchain`) for their
name, description and argument schema, but not for the call: that adapter calls a tool with LangChain's synchronous
`run`, which our tools (coroutines only) refuse (`StructuredTool does not support sync invocation`). So each is
called with `arun`, its asynchronous twin, the same way: the schema's defaults filled in, the arguments as one dict.
A ToolException becomes the tool's result text, as in the reference server (the tools set `handle_tool_error`).
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent, Tool
from pydantic_ai.ext.langchain import tool_from_langchain
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from reference_server.agent.tools import make_tools

MODEL = "fake-model"  # any name: the fake LLM plays the script the conversation's tag names


def _async_tool(langchain_tool) -> Tool:
    """pydantic-ai's LangChain adapter's tool, called with the LangChain tool's `arun`."""
    adapted = tool_from_langchain(langchain_tool)
    defaults = {key: value["default"] for key, value in langchain_tool.args.items() if "default" in value}

    async def call(**kwargs: Any) -> str:
        return await langchain_tool.arun(defaults | kwargs)

    return Tool.from_schema(
        function=call,
        name=adapted.name,
        description=adapted.description,
        json_schema=adapted.function_schema.json_schema,
    )


def make_agent(fake_llm_url: str, project_dir) -> Agent:
    """pydantic-ai's agent with our tools for one project, its model the fake LLM at `fake_llm_url` (ending in /v1)."""
    provider = OpenAIProvider(base_url=fake_llm_url, api_key="unused")
    tools = [_async_tool(each) for each in make_tools(project_dir)]
    return Agent(OpenAIChatModel(MODEL, provider=provider), tools=tools, name="gns3-copilot")
