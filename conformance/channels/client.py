"""ChannelClient: one check's requests to the channels a target declares, an adapter over the suite's one transport
(conformance/transport/http.py: deadline, evidence in the same list as the check's GNS3 exchanges, redaction, the SSE
tokenizer): it builds each protocol's request and reads the protocol's meaning out of the answer (endpoints.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from conformance.channels.endpoints import STREAMING, ChannelAnswer, Endpoint
from conformance.transport.exchanges import Exchange
from conformance.transport.sse import Frame
from gns3_copilot_generated.constants import OPENAI_MODEL_ID

if TYPE_CHECKING:
    from conformance.checks.context import CheckContext


class ChannelClient:
    def __init__(self, ctx: CheckContext) -> None:
        self.ctx = ctx
        self.env = ctx.env

    def url(self, channel: str, suffix: str = "", project_id: str | None = None) -> str:
        return self.env.base_url + self.env.channel_path(channel, project_id) + suffix

    def endpoint(self, name: str) -> Endpoint:
        return STREAMING[name]

    @property
    def model(self) -> str:
        return self.env.target.channels.get("openai", {}).get("model", OPENAI_MODEL_ID)

    def request(
        self,
        endpoint: Endpoint,
        script: str,
        *,
        session_id: str | None = None,
        run: str | None = None,
        text: str = "Conformance check",
        stream: bool = True,
    ) -> dict[str, Any]:
        """The body of one turn playing `script` under the check's run tag (or `run`)."""
        message = self.ctx.message(script, text, run=run)
        return endpoint.body(message, session_id=session_id, model=self.model, stream=stream)

    async def post(
        self,
        endpoint: Endpoint,
        body: dict[str, Any] | bytes,
        *,
        user: str | None = "main",
        project_id: str | None = None,
        headers: dict[str, str] | None = None,
        stop_when: Callable[[Frame], bool] | None = None,
        deadline: float | None = None,
        fresh: bool = False,
    ) -> ChannelAnswer:
        """POST a turn and read its answer to the end, or until `stop_when(frame)` (then the suite disconnects),
        never longer than its deadline (by default the scenario's own, Environment.deadline_for)."""
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        message = _message_of(body)
        url = self.url(endpoint.channel, endpoint.suffix, project_id)
        streamed = await self.ctx.client.transport.stream(
            url,
            raw,
            user=user,
            headers=headers,
            deadline=deadline or self.env.deadline_for(message),
            fresh=fresh,
            stop_when=stop_when,
        )
        answer = ChannelAnswer(
            endpoint,
            streamed.exchange,
            headers=streamed.headers,
            sse=streamed.sse,
            completed=streamed.completed,
            opened=streamed.opened,
            started=streamed.started,
            message=message,
            raw=streamed.raw,
        )
        if answer.sse is not None:
            answer.exchange.events = [p if isinstance(p, dict) else {"data": p} for p in answer.payloads]
        self._note_session(answer, user, project_id)
        return answer

    async def get(
        self, channel: str, suffix: str, *, user: str | None = "main", project_id: str | None = None
    ) -> Exchange:
        """A plain GET under a channel's path (OpenAI's models, the UI history), read whole."""
        path = self.env.channel_path(channel, project_id) + suffix
        return await self.ctx.client.call("GET", path, user=user, absolute=True)

    def _note_session(self, answer: ChannelAnswer, user: str | None, project_id: str | None) -> None:
        """A session a turn made goes in the run's ledger (the clean-up), where sessions can be deleted."""
        if self.env.target.serves_gns3:
            self.ctx.client.transport.note_session(user, project_id, answer.session_id)


def _message_of(body: dict[str, Any] | bytes) -> str:
    """The user message of a request body, whatever its protocol (for the scenario's deadline)."""
    return json.dumps(body) if isinstance(body, dict) else body.decode("utf-8", "replace")
