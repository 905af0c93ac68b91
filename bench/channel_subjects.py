"""The subjects of the channels benchmark (bench/channels.py): our channels, the peers serving the same protocols,
bare LangGraph, and which events of each protocol are counted, so that every subject counts the same text.

A counted event is one piece of the answer's text: a GNS3 `content` event, an OpenAI chat chunk with a non-empty
`delta.content`, a Responses `response.output_text.delta`, a UI `text-delta`, an AG-UI `TEXT_MESSAGE_CONTENT`, and
for bare LangGraph an `on_chat_model_stream` of the answer node (`llm_call`) with non-empty text. Tool-call
fragments, the title, usage, lifecycle and raw events are not counted.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import yaml

from gns3_copilot_generated.constants import CHANNEL_PATHS
from peers import get_peer
from reference_server.agent.graph import LLM_NODE
from tools import channel_requests

Event = dict[str, Any]


@dataclass(frozen=True)
class Protocol:
    name: str
    request: Callable[[str, str], channel_requests.Request]  # (session id, message) -> (path under prefix, body)
    base: str  # the channel's path under our chat prefix, which a peer serves at its own path
    target_key: str | None  # its key under `channels:` in a target file (peers/targets/)
    counted: str  # what is counted, for the report
    marker: bytes  # in every counted payload: a payload without it is not parsed
    accepts: Callable[[Event], bool]

    def counts(self, data: bytes) -> bool:
        """Whether a `data:` payload is a counted event."""
        if self.marker not in data:
            return False
        try:
            event = json.loads(data)
        except ValueError:  # OpenAI's `[DONE]`
            return False
        return isinstance(event, dict) and self.accepts(event)


def _typed(kind: str) -> Callable[[Event], bool]:
    return lambda event: event.get("type") == kind


def _chat_content(event: Event) -> bool:
    choices = event.get("choices") or []
    return any(isinstance(choice, dict) and (choice.get("delta") or {}).get("content") for choice in choices)


GNS3 = Protocol("GNS3 stream", channel_requests.gns3, "", None, "`content` events", b"content", _typed("content"))
OPENAI_CHAT = Protocol(
    "OpenAI chat",
    channel_requests.openai_chat,
    CHANNEL_PATHS["openai"],
    "openai",
    "chunks with a non-empty `choices[].delta.content`",
    b"content",
    _chat_content,
)
OPENAI_RESPONSES = Protocol(
    "OpenAI responses",
    channel_requests.openai_responses,
    CHANNEL_PATHS["openai"],
    "openai",
    "`response.output_text.delta` events",
    b"response.output_text.delta",
    _typed("response.output_text.delta"),
)
UI = Protocol(
    "UI stream",
    channel_requests.ui,
    CHANNEL_PATHS["ui"],
    "ui",
    "`text-delta` parts",
    b"text-delta",
    _typed("text-delta"),
)
AG_UI = Protocol(
    "AG-UI",
    channel_requests.ag_ui,
    CHANNEL_PATHS["ag_ui"],
    "ag_ui",
    "`TEXT_MESSAGE_CONTENT` events",
    b"TEXT_MESSAGE_CONTENT",
    _typed("TEXT_MESSAGE_CONTENT"),
)
PROTOCOLS = (GNS3, OPENAI_CHAT, OPENAI_RESPONSES, UI, AG_UI)


def answer_text(event: Event) -> bool:
    """Bare LangGraph's counted events: the answer node's model chunks that carry text."""
    if event["event"] != "on_chat_model_stream" or event["metadata"].get("langgraph_node") != LLM_NODE:
        return False
    content = event["data"]["chunk"].content
    return bool(content) and isinstance(content, str)


BARE_COUNTED = f"`on_chat_model_stream` of the answer node ({LLM_NODE}) with non-empty text"


@dataclass(frozen=True)
class Subject:
    name: str
    protocol: Protocol | None  # None: bare LangGraph, in the bench's process
    peer: str | None = None  # the peer (peers/) serving the protocol; None: our reference server


OURS = tuple(Subject(f"ours: {protocol.name}", protocol) for protocol in PROTOCOLS)
PEER_SUBJECTS = (
    Subject("peer: langgraph-openai-serve", OPENAI_CHAT, "langgraph-openai-serve"),
    Subject("peer: ag-ui-langgraph", AG_UI, "ag-ui-langgraph"),
)
BARE = Subject("bare LangGraph", None)
SUBJECTS = (*OURS, *PEER_SUBJECTS, BARE)


def ours(protocol: Protocol) -> Subject:
    return next(subject for subject in OURS if subject.protocol is protocol)


@cache
def peer_target(peer: str) -> dict[str, Any]:
    """The peer's target file (peers/targets/): its ready path and where it serves each channel."""
    return yaml.safe_load(get_peer(peer).target_file.read_text(encoding="utf-8"))


def request(subject: Subject, session_id: str, message: str, prefix: str) -> channel_requests.Request:
    """The subject's (path, body) of one turn: ours under the chat prefix, a peer's at its own channel path."""
    path, body = subject.protocol.request(session_id, message)
    if subject.peer is None:
        return prefix + path, body
    channel = peer_target(subject.peer)["channels"][subject.protocol.target_key]
    if "model" in channel:
        body = {**body, "model": channel["model"]}
    return channel["path"] + path.removeprefix(subject.protocol.base), body
