"""The fake LLM's request log, as a check reads it: which generations a target made for one run tag, with what,
and the usage it should therefore have counted (STATS-002/003)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx

from conformance.errors import HarnessError
from conformance.rules.scenarios import usage_of

if TYPE_CHECKING:
    from conformance.harness.environment import Environment


class FakeLLMLog:
    def __init__(self, env: Environment, run: str) -> None:
        self.env, self.run = env, run

    async def requests(self, run: str | None = None) -> list[dict[str, Any]]:
        """Every request the fake LLM received for `run` (default: the check's own run tag)."""
        url = self.env.fake_llm_url.removesuffix("/v1") + "/control/requests"
        try:
            response = await self.env.client.get(url, params={"run": run or self.run})
            response.raise_for_status()
            payload = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise HarnessError(f"cannot read the fake LLM's request log at {url}: {exc}") from exc
        return payload["requests"] if isinstance(payload, dict) else payload

    async def main_requests(self, run: str | None = None) -> list[dict[str, Any]]:
        """The turn's own generations (the title generation has no step)."""
        return [r for r in await self.requests(run) if r.get("step") is not None]

    async def expected_usage(self, run: str | None = None) -> tuple[int, int, int]:
        """(generations, input tokens, output tokens) the target should have counted for a run (STATS-002/003)."""
        calls = inputs = outputs = 0
        for record in await self.requests(run):
            if record.get("script") is None or (record["step"] is None and not self.env.target.title_counts_in_stats):
                continue
            calls += 1
            if record["outcome"] == "ok":
                i, o = usage_of(self.env.scripts, record["script"], record["step"])
                inputs, outputs = inputs + i, outputs + o
        return calls, inputs, outputs
