"""A session's history (the OpenAI-format messages of HISTORY-001) as the `ai` package's UIMessage[] (UI-004).

Each user message is a `user` UIMessage with one text part. The messages of one answer (the assistant messages
of each generation and the tool results between them) are one `assistant` UIMessage, with the id of its first
message, as the UI stream assembled it (UI-003): a `step-start` part per generation, its text as a text part,
and each call as a provider-executed tool part in state `output-available` with its input and the output of the
tool message that answers it.
"""

from __future__ import annotations

import json
from typing import Any

UIMessage = dict[str, Any]


def _input(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def _tool_part(call: dict[str, Any], outputs: dict[str, str]) -> dict[str, Any]:
    function = call["function"]
    part: dict[str, Any] = {
        "type": f"tool-{function['name']}",
        "toolCallId": call["id"],
        "state": "input-available",
        "input": _input(function["arguments"]),
        "providerExecuted": True,
    }
    if call["id"] in outputs:  # every call of a kept turn has its result (HISTORY-005)
        part["state"] = "output-available"
        part["output"] = outputs[call["id"]]
    return part


def _answer(group: list[dict[str, Any]]) -> UIMessage:
    outputs = {m["tool_call_id"]: m["content"] for m in group if m["role"] == "tool" and m.get("tool_call_id")}
    parts: list[dict[str, Any]] = []
    for message in group:
        if message["role"] != "assistant":
            continue
        parts.append({"type": "step-start"})
        if message.get("content"):
            parts.append({"type": "text", "text": message["content"], "state": "done"})
        parts.extend(_tool_part(call, outputs) for call in message.get("tool_calls") or [])
    first = next((m for m in group if m["role"] == "assistant"), group[0])
    return {"id": first["id"], "role": "assistant", "parts": parts}


def history_to_ui_messages(messages: list[dict[str, Any]]) -> list[UIMessage]:
    """Oldest first, in the history's order and with its ids; system messages are not part of the chat."""
    result: list[UIMessage] = []
    group: list[dict[str, Any]] = []

    def flush() -> None:
        if any(m["role"] == "assistant" for m in group):
            result.append(_answer(group))
        group.clear()  # tool results without their call (a history window that starts mid-answer) are dropped

    for message in messages:
        if message["role"] == "user":
            flush()
            result.append(
                {"id": message["id"], "role": "user", "parts": [{"type": "text", "text": message["content"]}]}
            )
        elif message["role"] in ("assistant", "tool"):
            group.append(message)
    flush()
    return result
