"""The copilot agent as the design document draws it: llm_call -> should_continue -> tool_node | title_generator."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from typing import Annotated, Any

from langchain_core.callbacks.manager import adispatch_custom_event
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from typing_extensions import TypedDict  # not typing's: LangGraph's input schema (pydantic) refuses it before 3.12

from reference_server.timestamps import utc_now

from .context import LlmSettings, current_instructions, current_llm_settings, current_project_tools
from .llm_factory import ChatModelFactory

LLM_NODE, TOOL_NODE, TITLE_NODE = "llm_call", "tool_node", "title_generator"

SYSTEM_PROMPT = (
    "You are the GNS3 copilot, a teaching assistant in a network lab. Use the tools to read the topology and "
    "run read-only show commands; never change device configuration."
)
TITLE_PROMPT = (
    "Write a short title of at most six words for the conversation below. Reply with the title only, with no "
    "quotes, no trailing punctuation and no explanation."
)
# Titles are only cut at the column's limit: the permission to shorten them past 40 characters (TITLE-005,
# MAY) is not used.
TITLE_MAX_LENGTH = 255


class CopilotState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    conversation_title: str | None
    title_attempted: bool


def stamp(message: BaseMessage) -> BaseMessage:
    """Give a message its permanent id and creation time when it is created (HISTORY-002, HISTORY-003)."""
    message.id = str(uuid.uuid4())
    message.response_metadata = {**message.response_metadata, "created_at": utc_now()}
    return message


def clean_title(text: str) -> str:
    """One line, without surrounding whitespace and quotes (TITLE-002)."""
    one_line = " ".join(text.splitlines())
    return one_line.strip().strip("\"'").strip()[:TITLE_MAX_LENGTH]


def _text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else message.text


_OPENAI_SCHEMAS: dict[tuple[str, str], dict[str, Any]] = {}
BOUND_MODELS = 16  # the models with tools one graph keeps, one per distinct LLM settings


def _openai_schema(item: BaseTool) -> dict[str, Any]:
    """The tool's OpenAI schema, made once per name and description: make_tools makes the same tools for every
    project (only the folder they read differs, which the schema does not show)."""
    key = (item.name, item.description)
    if key not in _OPENAI_SCHEMAS:
        _OPENAI_SCHEMAS[key] = convert_to_openai_tool(item)
    return _OPENAI_SCHEMAS[key]


def build_graph(
    tools: list[BaseTool],
    models: ChatModelFactory,
    checkpointer: BaseCheckpointSaver | None,
    *,
    tools_of_each_turn: bool = False,
) -> CompiledStateGraph:
    """The agent over `tools`. With tools_of_each_turn, `tools` only give the tools' names and schemas (every
    project has the same ones), and a turn runs its own project's (context.current_project_tools): one graph then
    serves every project whose checkpoints share `checkpointer`, where a graph per project cost each worker 1.2 ms
    of CPU per project it served (issue 33)."""
    fixed = {item.name: item for item in tools}

    def tools_by_name() -> Mapping[str, BaseTool]:
        return current_project_tools() if tools_of_each_turn else fixed

    # The tools' OpenAI schemas, made once per process: bind_tools would derive them from the tools at every call,
    # and every project's graph has the same tools (bound to its own folder), whose schemas cost half a graph.
    tool_schemas = [_openai_schema(item) for item in tools]

    bound: dict[LlmSettings, Runnable] = {}

    def model_with_tools(settings: LlmSettings) -> Runnable:
        """The model of these settings with the tools bound, made once per graph and settings: building the model
        and binding the tools at every generation was a twentieth of a streamed turn's CPU (issue 33)."""
        if settings not in bound:
            if len(bound) >= BOUND_MODELS:  # a user's settings change rarely; never let them pile up
                bound.clear()
            bound[settings] = models.build(settings).bind_tools(tool_schemas)
        return bound[settings]

    async def llm_call(state: CopilotState, config: RunnableConfig) -> dict[str, Any]:
        model = model_with_tools(current_llm_settings())
        # The whole conversation, its user messages as they were sent (TESTABILITY-002).
        instructions = current_instructions()
        system = SYSTEM_PROMPT if not instructions else f"{SYSTEM_PROMPT}\n\n{instructions}"
        response = await model.ainvoke([SystemMessage(system), *state["messages"]], config)
        return {"messages": [stamp(response)]}

    def should_continue(state: CopilotState) -> str:
        last = state["messages"][-1]
        if isinstance(last, AIMessage) and last.tool_calls:
            return TOOL_NODE
        # title_attempted is checkpointed: a session gets at most one title generation (TITLE-004).
        return END if state.get("title_attempted") else TITLE_NODE

    async def run_tool(call: dict[str, Any], config: RunnableConfig) -> ToolMessage:
        name, call_id = call["name"], call["id"]
        # The tool node runs after its generation ended, so the call is complete; it is started once, with the
        # call's id and name (TOOLCALL-004).
        await adispatch_custom_event("tool_start", {"tool_call_id": call_id, "tool_name": name}, config=config)
        available = tools_by_name()
        chosen = available.get(name)
        try:
            if chosen is None:
                raise LookupError(f"unknown tool {name!r}; available: {', '.join(sorted(available))}")
            result = await chosen.ainvoke({**call, "type": "tool_call"}, config)
        except Exception as exc:  # a tool failure is a tool result, never a turn failure (TOOLCALL-008)
            result = ToolMessage(content=f"Error: {exc}", tool_call_id=call_id, name=name, status="error")
        result.name = name
        output = result.content if isinstance(result.content, str) else str(result.content)
        # Ends once, after its start, with the same name and the call's id (TOOLCALL-005, TOOLCALL-007).
        await adispatch_custom_event(
            "tool_end", {"tool_call_id": call_id, "tool_name": name, "tool_output": output}, config=config
        )
        return stamp(result)

    async def tool_node(state: CopilotState, config: RunnableConfig) -> dict[str, Any]:
        calls = state["messages"][-1].tool_calls  # every completed call is started and ended (TOOLCALL-006)
        return {"messages": list(await asyncio.gather(*(run_tool(call, config) for call in calls)))}

    async def title_generator(state: CopilotState, config: RunnableConfig) -> dict[str, Any]:
        """One title generation per session, without tools (TESTABILITY-003); failure keeps the title (TITLE-006)."""
        messages = state["messages"]
        question = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
        answer = messages[-1]
        prompt = [SystemMessage(TITLE_PROMPT), HumanMessage(_text(question)), AIMessage(_text(answer))]
        try:
            reply = await models.build(current_llm_settings()).ainvoke(prompt, config)
        except Exception:
            return {"title_attempted": True}
        title = clean_title(_text(reply))
        return {"title_attempted": True, "conversation_title": title or None}

    graph = StateGraph(CopilotState)
    graph.add_node(LLM_NODE, llm_call)
    graph.add_node(TOOL_NODE, tool_node)
    graph.add_node(TITLE_NODE, title_generator)
    graph.add_edge(START, LLM_NODE)
    graph.add_conditional_edges(LLM_NODE, should_continue, [TOOL_NODE, TITLE_NODE, END])
    graph.add_edge(TOOL_NODE, LLM_NODE)
    graph.add_edge(TITLE_NODE, END)
    return graph.compile(checkpointer=checkpointer)
