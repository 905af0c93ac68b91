"""What a check works with: per check a CheckContext that names its sessions and fake-LLM run tag and holds its
three parts: the chat client (conformance.channels.gns3_stream), the fake LLM's log (conformance.harness.llm_log) and
the findings recorder
(conformance.checks.recorder), over the run's shared Environment (conformance.harness.environment)."""

from __future__ import annotations

import uuid

from conformance.channels.gns3_stream import ChatClient
from conformance.checks.recorder import FindingsRecorder
from conformance.errors import NotTestable
from conformance.harness.environment import Environment
from conformance.harness.llm_log import FakeLLMLog


class CheckContext:
    def __init__(self, env: Environment, check_id: str, requirements: list[str]) -> None:
        self.env = env
        self.check_id = check_id
        self.run = f"{check_id.replace('.', '-')}-{uuid.uuid4().hex[:8]}"
        self.client = ChatClient(env, check_id)
        self.llm = FakeLLMLog(env, self.run)
        self.findings = FindingsRecorder(check_id, requirements, self.client.exchanges)

    @property
    def target(self):
        return self.env.target

    def session_id(self, label: str = "s") -> str:
        return f"cs-{self.run}-{label}"

    def message(self, script: str, text: str = "Conformance check", *, run: str | None = None) -> str:
        """A user message that makes the fake LLM play `script` under the check's run tag (or `run`)."""
        if script not in self.env.scripts:
            raise NotTestable(f"scenario {script!r} needs a tool the target did not declare")
        return f"{text} [[fake-llm:{script}:{run or self.run}]]"

    def user(self, name: str):
        return self.env.user(name)
