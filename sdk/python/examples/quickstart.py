"""Log in, create a project, stream a turn with a tool call, list the sessions: every event typed.

    COPILOT_BASE_URL=http://127.0.0.1:3080 python quickstart.py

against a server whose admin/admin uses the fake LLM (the reference server: `python -m reference_server`).
"""

from __future__ import annotations

import os
import uuid
from typing import assert_never

from gns3_copilot_chat_client import (
    ChatRequest,
    ContentEvent,
    CopilotClient,
    DoneEvent,
    ErrorEvent,
    HeartbeatEvent,
    NotFoundError,
    ProjectCreate,
    StreamEvent,
    ToolCallEvent,
    ToolEndEvent,
    ToolStartEvent,
)


def describe(event: StreamEvent) -> str:
    """One line per event; the match is exhaustive: a new event type in the contract fails type-checking here."""
    match event:
        case ContentEvent():
            return f"text: {event.content}"
        case ToolCallEvent():
            return f"tool call {event.tool_call.function.name}"
        case ToolStartEvent():
            return f"tool {event.tool_name} runs"
        case ToolEndEvent():
            return f"tool {event.tool_name} answered"
        case ErrorEvent():
            return f"error: {event.error}"
        case DoneEvent():
            return "done"
        case HeartbeatEvent():
            return "heartbeat"
        case _:
            assert_never(event)


def main() -> None:
    with CopilotClient(os.environ.get("COPILOT_BASE_URL", "http://127.0.0.1:3080")) as client:
        client.login("admin", "admin")
        project = client.create_project(ProjectCreate(name=f"quickstart-{uuid.uuid4().hex[:8]}"))
        request = ChatRequest(message="What is in my lab? [[fake-llm:tool-round-trip]]")
        with client.stream_chat(project.project_id, request) as stream:
            for event in stream:
                print(describe(event))
        for session in client.list_sessions(project.project_id):
            print(session.title, session.message_count, session.total_tokens)
        try:
            client.get_session_history(project.project_id, "no-such-session")
        except NotFoundError as error:
            print(error.status, error.code)
        client.delete_project(project.project_id)


if __name__ == "__main__":
    main()
