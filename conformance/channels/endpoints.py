"""Each streaming endpoint of a channel, as the suite drives it: the request a real client sends for one turn, and
what the answer says (its text, usage, session and in-stream error), read the protocol's way. The rules of each
protocol (rules_*.py) judge the answer; these readers only extract, and never fail on a broken answer."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from conformance.transport.exchanges import Exchange, json_or_none
from conformance.transport.sse import INVALID, Frame, SseBody

SESSION_HEADER = "x-copilot-session-id"  # OPENAI-002: every channel names its session there


@dataclass(frozen=True)
class Usage:
    input: int | None
    output: int | None
    total: int | None

    def counts(self) -> tuple[int | None, int | None]:
        return self.input, self.output


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _usage(payload: Any, keys: tuple[str, str, str]) -> Usage | None:
    if not isinstance(payload, dict):
        return None
    return Usage(*(_int(payload.get(key)) for key in keys))


def _dicts(answer: ChannelAnswer) -> list[dict[str, Any]]:
    """The JSON objects of the answer's data frames, in order ([DONE] and broken frames left out)."""
    return [payload for _, payload in answer.sse.json_objects()] if answer.sse else []


class Endpoint:
    """One streaming endpoint: `channel` is the target file's key, `suffix` what follows the channel's path."""

    name: str
    channel: str
    suffix: str = ""
    requirement: str  # the rule of its stream's shape, for answers the readers cannot read

    def body(self, message: str, *, session_id: str | None, model: str, stream: bool = True) -> dict[str, Any]:
        raise NotImplementedError

    def new_session_id(self) -> str | None:
        """The session id a client makes up for a new conversation (None: the server names it)."""
        return None

    def with_history(self, body: dict[str, Any], earlier: list[tuple[str, str]]) -> dict[str, Any]:
        """`body` carrying the client's copy of earlier messages ((role, text) pairs) before its user message."""
        raise NotImplementedError

    def ended(self, answer: ChannelAnswer) -> bool:
        """The answer holds the protocol's last message ([DONE], response.completed or failed, RUN_FINISHED or
        RUN_ERROR): the whole turn arrived, whatever the suite did after."""
        if answer.sse is None:
            return False
        if any(frame.is_done for frame in answer.sse.messages):
            return True
        ends = ("response.completed", "response.failed", "RUN_FINISHED", "RUN_ERROR")
        return any(payload.get("type") in ends for payload in _dicts(answer))

    def text(self, answer: ChannelAnswer) -> str:
        raise NotImplementedError

    def usage(self, answer: ChannelAnswer) -> Usage | None:
        raise NotImplementedError

    def protocol_session_id(self, answer: ChannelAnswer) -> str | None:
        return None

    def session_id(self, answer: ChannelAnswer) -> str | None:
        return answer.headers.get(SESSION_HEADER) or self.protocol_session_id(answer)

    def error(self, answer: ChannelAnswer) -> dict[str, Any] | None:
        """The in-stream error ({"code", "message"}), when the answer ends in one."""
        raise NotImplementedError

    def refusal_code(self, body: str) -> Any:
        """The error code of a refusal body, read the channel's way ({message, code} by default)."""
        payload = json_or_none(body)
        return payload.get("code") if isinstance(payload, dict) else None


class OpenAIChat(Endpoint):
    name, channel, suffix, requirement = "openai_chat", "openai", "/chat/completions", "OPENAI-002"

    def body(self, message, *, session_id, model, stream=True):
        body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": message}], "stream": stream}
        if stream:
            body["stream_options"] = {"include_usage": True}
        if session_id is not None:
            body["metadata"] = {"session_id": session_id}
        return body

    def with_history(self, body, earlier):
        before = [{"role": role, "content": text} for role, text in earlier]
        return {**body, "messages": before + body["messages"]}

    def text(self, answer):
        if answer.sse is None:  # not streamed: a chat.completion
            payload = json_or_none(answer.exchange.body)
            try:
                return payload["choices"][0]["message"]["content"] or ""
            except (TypeError, KeyError, IndexError):
                return ""
        parts = []
        for chunk in _dicts(answer):
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") if isinstance(choice, dict) else None
                if isinstance(delta, dict) and isinstance(delta.get("content"), str):
                    parts.append(delta["content"])
        return "".join(parts)

    def usage(self, answer):
        keys = ("prompt_tokens", "completion_tokens", "total_tokens")
        if answer.sse is None:
            payload = json_or_none(answer.exchange.body)
            return _usage(payload.get("usage"), keys) if isinstance(payload, dict) else None
        found = [chunk["usage"] for chunk in _dicts(answer) if isinstance(chunk.get("usage"), dict)]
        return _usage(found[-1], keys) if found else None

    def error(self, answer):
        for chunk in _dicts(answer):
            if isinstance(chunk.get("error"), dict):
                return chunk["error"]
        return None

    def refusal_code(self, body):
        payload = json_or_none(body)
        error = payload.get("error") if isinstance(payload, dict) else None
        return error.get("code") if isinstance(error, dict) else None


class OpenAIResponses(OpenAIChat):
    name, channel, suffix, requirement = "openai_responses", "openai", "/responses", "OPENAI-006"

    def body(self, message, *, session_id, model, stream=True):
        body: dict[str, Any] = {"model": model, "input": message, "stream": stream}
        if session_id is not None:
            body["metadata"] = {"session_id": session_id}
        return body

    def with_history(self, body, earlier):
        before = [{"role": role, "content": text} for role, text in earlier]
        return {**body, "input": [*before, {"role": "user", "content": body["input"]}]}

    def _response(self, answer) -> dict[str, Any] | None:
        if answer.sse is None:
            payload = json_or_none(answer.exchange.body)
            return payload if isinstance(payload, dict) else None
        final = [e["response"] for e in _dicts(answer) if isinstance(e.get("response"), dict)]
        return final[-1] if final else None

    def text(self, answer):
        if answer.sse is None:
            response = self._response(answer) or {}
            parts = [
                part.get("text", "")
                for item in response.get("output") or []
                if isinstance(item, dict)
                for part in item.get("content") or []
                if isinstance(part, dict) and part.get("type") == "output_text"
            ]
            return "".join(p for p in parts if isinstance(p, str))
        deltas = (e.get("delta") for e in _dicts(answer) if e.get("type") == "response.output_text.delta")
        return "".join(d for d in deltas if isinstance(d, str))

    def usage(self, answer):
        response = self._response(answer)
        return _usage(response.get("usage"), ("input_tokens", "output_tokens", "total_tokens")) if response else None

    def protocol_session_id(self, answer):
        metadata = (self._response(answer) or {}).get("metadata")
        return metadata.get("session_id") if isinstance(metadata, dict) else None

    def error(self, answer):
        for event in _dicts(answer):
            if event.get("type") == "response.failed":
                response = event.get("response") if isinstance(event.get("response"), dict) else {}
                return response.get("error") if isinstance(response.get("error"), dict) else {}
            if event.get("type") == "error":
                return event
        return None


class UIStream(Endpoint):
    name, channel, suffix, requirement = "ui", "ui", "", "UI-003"

    def new_session_id(self):
        return str(uuid.uuid4())

    def body(self, message, *, session_id, model, stream=True):
        user = {"id": uuid.uuid4().hex, "role": "user", "parts": [{"type": "text", "text": message}]}
        # as `ai` 6.0.325's DefaultChatTransport sends a new message (request-bodies.mjs builds it so)
        return {"id": session_id or self.new_session_id(), "messages": [user], "trigger": "submit-message"}

    def with_history(self, body, earlier):
        before = [
            {"id": uuid.uuid4().hex, "role": role, "parts": [{"type": "text", "text": text}]} for role, text in earlier
        ]
        return {**body, "messages": before + body["messages"]}

    def text(self, answer):
        deltas = (c.get("delta") for c in _dicts(answer) if c.get("type") == "text-delta")
        return "".join(d for d in deltas if isinstance(d, str))

    def _metadata(self, answer, kind: str) -> dict[str, Any]:
        found = [c.get("messageMetadata") for c in _dicts(answer) if c.get("type") == kind]
        return found[-1] if found and isinstance(found[-1], dict) else {}

    def usage(self, answer):
        return _usage(self._metadata(answer, "finish").get("usage"), ("inputTokens", "outputTokens", "totalTokens"))

    def protocol_session_id(self, answer):
        return self._metadata(answer, "start").get("sessionId")

    def error(self, answer):
        for chunk in _dicts(answer):
            if chunk.get("type") == "error":
                return {"message": chunk.get("errorText"), "code": None}
        return None


class AgUiRun(Endpoint):
    name, channel, suffix, requirement = "ag_ui", "ag_ui", "", "AGUI-002"

    def new_session_id(self):
        return str(uuid.uuid4())

    def body(self, message, *, session_id, model, stream=True):
        user = {"id": uuid.uuid4().hex, "role": "user", "content": message}
        return {  # as @ag-ui/client 1.0.0's HttpAgent sends it (request-bodies.mjs builds it so)
            "threadId": session_id or self.new_session_id(),
            "runId": uuid.uuid4().hex,
            "protocolVersion": "1.0",
            "messages": [user],
            "tools": [],
            "context": [],
            "state": {},
            "forwardedProps": {},
        }

    def with_history(self, body, earlier):
        before = [{"id": uuid.uuid4().hex, "role": role, "content": text} for role, text in earlier]
        return {**body, "messages": before + body["messages"]}

    def text(self, answer):
        deltas = (e.get("delta") for e in _dicts(answer) if e.get("type") == "TEXT_MESSAGE_CONTENT")
        return "".join(d for d in deltas if isinstance(d, str))

    def _last(self, answer, kinds: tuple[str, ...]) -> dict[str, Any]:
        found = [e for e in _dicts(answer) if e.get("type") in kinds]
        return found[-1] if found else {}

    def usage(self, answer):
        usage = self._last(answer, ("RUN_FINISHED", "RUN_ERROR")).get("usage")
        if isinstance(usage, list) and usage:
            usage = usage[0]
        return _usage(usage, ("inputTokens", "outputTokens", "totalTokens"))

    def protocol_session_id(self, answer):
        return self._last(answer, ("RUN_STARTED",)).get("threadId")

    def error(self, answer):
        event = self._last(answer, ("RUN_ERROR",))
        return {"message": event.get("message"), "code": event.get("code")} if event else None


STREAMING: dict[str, Endpoint] = {e.name: e for e in (OpenAIChat(), OpenAIResponses(), UIStream(), AgUiRun())}
# What an OpenAI channel serves unless its target lists fewer (channels.openai.endpoints), and the streaming endpoint
# of each that has one.
OPENAI_ENDPOINTS = ("chat_completions", "responses", "models")
_OPENAI_STREAMING = {"openai_chat": "chat_completions", "openai_responses": "responses"}


def served(endpoint: Endpoint, channels: dict[str, Any]) -> bool:
    """Whether a target with these `channels` serves `endpoint` (an OpenAI one only when its endpoints list it)."""
    if endpoint.channel not in channels:
        return False
    listed = channels[endpoint.channel].get("endpoints", OPENAI_ENDPOINTS) if endpoint.channel == "openai" else ()
    return endpoint.name not in _OPENAI_STREAMING or _OPENAI_STREAMING[endpoint.name] in listed


def declared(channels: dict[str, Any]) -> list[Endpoint]:
    """The streaming endpoints a target declares, in a fixed order."""
    return [endpoint for endpoint in STREAMING.values() if served(endpoint, channels)]


@dataclass
class ChannelAnswer:
    endpoint: Endpoint
    exchange: Exchange
    headers: dict[str, str] = field(default_factory=dict)  # every response header, names in lower case
    sse: SseBody | None = None  # a 200 text/event-stream answer, read strictly
    completed: bool = False  # the server ended the answer (not the suite's disconnect or deadline)
    opened: float = 0.0  # seconds from sending the request to the response's headers
    started: float = 0.0  # monotonic time the request was begun (frames' `at`, `opened` count from it)
    message: str = ""  # the user message of the turn (its fake-LLM tag names script and run)
    raw: str = ""  # the body as received: what the real clients read again (real_clients.py)

    @property
    def status(self) -> int | None:
        return self.exchange.status

    @property
    def streamed(self) -> bool:
        return self.sse is not None

    @property
    def frames(self) -> list[Frame]:
        return self.sse.frames if self.sse else []

    @property
    def payloads(self) -> list[Any]:
        """The data of every message frame: JSON where it parses, the raw text otherwise ([DONE] included)."""
        if self.sse is None:
            return []
        return [frame.data if frame.json() is INVALID else frame.json() for frame in self.sse.messages]

    @property
    def text(self) -> str:
        return self.endpoint.text(self)

    @property
    def usage(self) -> Usage | None:
        return self.endpoint.usage(self)

    @property
    def session_id(self) -> str | None:
        return self.endpoint.session_id(self)

    @property
    def error(self) -> dict[str, Any] | None:
        return self.endpoint.error(self)

    def describe(self) -> str:
        status = self.exchange.outcome
        if self.sse is None:
            return f"{self.exchange.method} {self.exchange.url} -> {status} {self.exchange.body[:300]}".strip()
        shown = [frame.raw[:120] for frame in self.sse.messages[-4:]]
        return f"{self.exchange.method} {self.exchange.url} -> {status}, last frames {shown}"
