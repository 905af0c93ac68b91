"""Scenario helpers of the channel checks (channels.py, channel_openai.py, channel_ui.py, channel_ag_ui.py), each
written once: one scripted turn on a declared endpoint, judged in every way a turn of any channel is judged.

`judged_turn` posts a turn playing a fake-LLM script and judges, for the requirements its caller names:
- the stream's shape and order with the protocol's rules (conformance/channels/rules_*.py; official schemas there),
- the text exact against the script (expected.py), and the usage against the fake LLM's log (CHANNEL-008),
- the protocol's real client over the same recorded body (real_clients.py): its rejection is a FAIL with its error.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..channels.client import ChannelAnswer, ChannelClient
from ..channels.endpoints import STREAMING, Endpoint, declared
from ..channels.expected import ExpectedTurn, expected_turn
from ..channels.real_clients import ClientRead, read_ag_ui, read_openai_chat, read_openai_responses, read_ui
from ..context import CheckContext
from ..errors import Blocked, BlockedBy, NotTestable
from ..exchanges import json_or_none
from ..violations import Violation
from .support import describe, find_session, generation_started, history, served, wait_for

# The contract's path of each channel under the chat prefix (CHANNEL-001, the `channels` tag of openapi.yaml).
CONTRACT_PATHS = {"openai": "/openai/v1", "ui": "/ui", "ag_ui": "/ag-ui"}
SETTLE_SECONDS = 10.0  # how long a turn cut short may take to be written (history, statistics)
# endpoint name -> its protocol's rules: (answer, expected turn or None) -> violations, each naming its requirement.
Rules = Callable[[ChannelAnswer, ExpectedTurn | None], list[Violation]]


def endpoints(ctx: CheckContext) -> list[Endpoint]:
    """The streaming endpoints of the channels the target declares (none: the check's rules are N/A)."""
    found = declared(ctx.target.channels)
    if not found:
        raise NotTestable("the target declares no channel besides the GNS3 chat API")
    return found


def endpoint(ctx: CheckContext, name: str) -> Endpoint:
    chosen = STREAMING[name]
    if chosen.channel not in ctx.target.channels:
        raise NotTestable(f"the target does not declare the channel {chosen.channel}")
    return chosen


def client(ctx: CheckContext) -> ChannelClient:
    return ChannelClient(ctx)


def run_tag(ctx: CheckContext, label: str) -> str:
    """A fake-LLM run tag of its own for one turn of the check: the log then tells that turn's generations. The
    tag's run is at most 64 characters (spec/fake-llm/selection.yaml): a long label is shortened to a digest."""
    tag = f"{ctx.run}-{label}"
    if len(tag) <= 64:
        return tag
    digest = hashlib.sha1(label.encode()).hexdigest()[:12]
    return f"{ctx.run[:40]}-{ctx.run[-8:]}-{digest}"


@dataclass
class Turn:
    answer: ChannelAnswer
    expected: ExpectedTurn
    run: str


async def post_turn(
    ctx: CheckContext,
    chosen: Endpoint,
    script: str,
    *,
    label: str,
    session_id: str | None = None,
    user: str | None = "main",
    stream: bool = True,
    stop_when: Callable[[Any], bool] | None = None,
) -> Turn:
    """One turn playing `script` on `chosen`, under a run tag of its own (`label` names it in the check)."""
    if script not in ctx.env.scripts:
        raise NotTestable(f"scenario {script!r} needs a tool the target did not declare")
    run = run_tag(ctx, label)
    channel = client(ctx)
    body = channel.request(chosen, script, session_id=session_id, run=run, stream=stream)
    answer = await channel.post(chosen, body, user=user, stop_when=stop_when)
    answer.message = ctx.message(script, run=run)  # as the server must store it (what the body's protocol carried)
    return Turn(answer, expected_turn(ctx.env.scripts, script), run)


def _went_as_scripted(turn: Turn, generations: list[dict[str, Any]]) -> bool:
    """The turn reached the model as its script says: every generation of a turn that finishes was served (a tool
    turn's second one included), at least the first of a turn scripted to fail."""
    steps = len(turn.expected.generations)
    if turn.expected.fails:
        return len(generations) >= 1
    return len(generations) >= steps and all(g.get("outcome") == "ok" for g in generations[:steps])


async def require_scripted(ctx: CheckContext, turn: Turn, requirement: str, *, cut: bool = False) -> None:
    """Stop the check unless the turn's scenario happened: streamed, ended by the server, and its generations
    served by the fake LLM as scripted (`cut`: a turn the suite left on purpose, whose first generation the model
    received), ending in an error exactly when its script fails. When it did not, control turns on the same
    endpoint in new sessions tell whose failure it is: a plain one not served either, the check is blocked by
    TESTABILITY-001; for a tool script, a tool turn not served either, by TESTABILITY-003 (nothing this check
    judges is to blame); served, the scenario's failure is `requirement`'s."""
    answer = turn.answer
    generations = await ctx.llm.main_requests(turn.run)
    if cut:  # the suite went away on purpose: the turn must have started, and reached the model
        if answer.status == 200 and answer.streamed and generations:
            return
    elif (
        answer.status == 200
        and answer.streamed
        and answer.completed
        and _went_as_scripted(turn, generations)
        and (answer.error is not None) == turn.expected.fails  # a tool cut short by an error reached the model too
    ):
        return
    streamed = answer.status == 200 and answer.streamed
    why = (
        f"the {turn.expected.script} turn on {answer.endpoint.name} did not go as scripted ("
        f"{'streamed' if streamed else answer.describe()}; {len(generations)} generation(s) reached the fake LLM"
        f"{'; it ended in an error' if answer.error is not None else ''})"
    )
    controls = [("cs-plain", "TESTABILITY-001")]
    if turn.expected.tool_calls and "cs-tool" in ctx.env.scripts:
        controls.append(("cs-tool", "TESTABILITY-003"))
    for script, rule in controls:
        control = await post_turn(ctx, answer.endpoint, script, label=f"control-{script}-{answer.endpoint.name}")
        served = (
            control.answer.status == 200
            and control.answer.completed
            and control.answer.error is None
            and _went_as_scripted(control, await ctx.llm.main_requests(control.run))
        )
        if not served:
            raise BlockedBy(
                rule, f"{why}; a {script} turn in a new session is not served either: {control.answer.describe()}"
            )
    raise Blocked(requirement, why, (answer.exchange,))


def record(ctx: CheckContext, violations: list[Violation], answer: ChannelAnswer, judged: set[str]) -> None:
    """One finding per requirement of `judged`: failed with the violations that name it, else passed."""
    by_rule: dict[str, list[str]] = {}
    for violation in violations:
        by_rule.setdefault(violation.requirement, []).append(str(violation))
    for requirement in sorted(judged | set(by_rule)):
        messages = by_rule.get(requirement, [])
        more = f" (and {len(messages) - 4} more)" if len(messages) > 4 else ""
        ctx.findings.expect(
            requirement, not messages, f"{answer.endpoint.name}: " + "; ".join(messages[:4]) + more, answer.exchange
        )


async def usage_violations(ctx: CheckContext, turn: Turn, requirement: str = "CHANNEL-008") -> list[Violation]:
    """The usage the answer reports equals the turn's, as the fake LLM's log tells it (its generations' usage)."""
    _calls, inputs, outputs = await ctx.llm.expected_usage(turn.run)
    usage = turn.answer.usage
    if usage is None:
        return [Violation(requirement, f"the answer reports no usage; the turn's is {inputs} in, {outputs} out")]
    want = (inputs, outputs, inputs + outputs)
    got = (usage.input, usage.output, usage.total)
    if got == want:
        return []
    return [Violation(requirement, f"the answer reports usage (in, out, total) {got}; the turn's is {want}")]


async def real_client_reads(ctx: CheckContext, answers: list[ChannelAnswer]) -> list[ClientRead]:
    """Each answer's body read by its protocol's real client (one Node process per protocol for the batch)."""
    model = client(ctx).model
    reads: dict[int, ClientRead] = {}
    ui = [i for i, a in enumerate(answers) if a.endpoint.name == "ui"]
    ag = [i for i, a in enumerate(answers) if a.endpoint.name == "ag_ui"]
    if ui:
        for i, read in zip(ui, await read_ui([answers[i].raw for i in ui]), strict=True):
            reads[i] = read
    if ag:
        cases = [_ag_ui_case(answers[i]) for i in ag]
        for i, read in zip(ag, await read_ag_ui(cases), strict=True):
            reads[i] = read
    for i, answer in enumerate(answers):
        if answer.endpoint.name == "openai_chat":
            reads[i] = await read_openai_chat(answer.raw, model)
        elif answer.endpoint.name == "openai_responses":
            reads[i] = await read_openai_responses(answer.raw, model)
    return [reads[i] for i in range(len(answers))]


def _ag_ui_case(answer: ChannelAnswer) -> dict[str, Any]:
    """The recorded body, with the thread and run the request named (the client checks RUN_STARTED against them)."""
    request = json_or_none(answer.exchange.request_body or "") or {}
    case: dict[str, Any] = {"body": answer.raw}
    for key in ("threadId", "runId"):
        if isinstance(request.get(key), str):
            case[key] = request[key]
    return case


# --- shared by the checks of channels.py and across_channels.py ----------------------------------------------


def refused_before_stream(answer: ChannelAnswer) -> bool:
    """Answered before any stream: not a 200, and not an event stream."""
    return answer.status is not None and answer.status != 200 and not answer.streamed


def refusal_code(answer: ChannelAnswer) -> Any:
    return answer.endpoint.refusal_code(answer.exchange.body)


def judge_refusal(ctx: CheckContext, requirement: str, answer: ChannelAnswer, status: int, code: str, what: str):
    ok = refused_before_stream(answer) and answer.status == status and refusal_code(answer) == code
    ctx.findings.expect(
        requirement,
        ok,
        f"{answer.endpoint.name}, {what}: expected {status} `{code}` before any stream; {answer.describe()}",
        answer.exchange,
    )


async def gns3_turn(ctx: CheckContext, script: str, run: str, session_id: str | None = None):
    body: dict[str, Any] = {"message": ctx.message(script, run=run)}
    if session_id is not None:
        body["session_id"] = session_id
    return await ctx.client.stream(body)


def new_session(chosen: Endpoint) -> str:
    """A session id the suite makes up: UI and AG-UI clients name their chats; OpenAI's metadata may too."""
    return chosen.new_session_id() or str(uuid.uuid4())


async def not_received(ctx: CheckContext, run: str, texts: list[str]) -> list[str]:
    """Which of `texts` the fake LLM's first generation of `run` did NOT receive in its messages."""
    records = await ctx.llm.main_requests(run)
    if not records:
        return texts
    seen = " ".join(str(m.get("content")) for m in records[0].get("messages") or [] if isinstance(m, dict))
    return [text for text in texts if text not in seen]


async def model_reached(ctx: CheckContext, run: str, seconds: float, turn: asyncio.Future[Any]) -> bool:
    """The fake LLM received the turn's first generation (the turn holds its session). False at once when the
    turn's request (`turn`) has ended first: a turn that failed before its model (an error) never will."""

    async def probe() -> str | None:
        if await generation_started(ctx, [run]):
            return "reached"
        return "ended" if turn.done() else None

    return await wait_for(probe, seconds=seconds, interval=0.05) == "reached"


async def settled_session(ctx: CheckContext, session: str, want_messages: int) -> dict[str, Any] | None:
    async def probe():
        found = await find_session(ctx, session, "CHANNEL-003")
        return found if found and found.get("message_count") == want_messages else None

    return await wait_for(probe, seconds=SETTLE_SECONDS, interval=0.25) or await find_session(
        ctx, session, "CHANNEL-003"
    )


def last_message_as(chosen: Endpoint, body: dict[str, Any], role: str) -> dict[str, Any]:
    """`body` whose last message (OpenAI messages or input, UI and AG-UI messages) has `role`."""
    body = chosen.with_history(body, [])  # Responses: the input string as a list of messages
    key = "messages" if "messages" in body else "input"
    messages = [dict(m) for m in body[key]]
    messages[-1]["role"] = role
    return {**body, key: messages}


def client_tool_bodies(channel: ChannelClient, ctx: CheckContext, chosen: Endpoint) -> list[tuple[str, dict, str]]:
    base = channel.request(chosen, "cs-plain", session_id=chosen.new_session_id(), run=run_tag(ctx, "t"))
    function = {"name": "cs_client_tool", "description": "A tool of the client", "parameters": {"type": "object"}}
    if chosen.name == "openai_chat":
        return [
            ("tools", {**base, "tools": [{"type": "function", "function": function}]}, "client_tools_not_supported"),
            ("functions", {**base, "functions": [function]}, "client_tools_not_supported"),
        ]
    if chosen.name == "openai_responses":
        return [("tools", {**base, "tools": [{"type": "function", **function}]}, "client_tools_not_supported")]
    if chosen.name == "ag_ui":
        return [("tools", {**base, "tools": [function]}, "client_tools_not_supported")]
    regenerate = {**base, "trigger": "regenerate-message", "messageId": uuid.uuid4().hex}
    return [("trigger regenerate-message", regenerate, "regenerate_not_supported")]


async def kept_problems(ctx: CheckContext, session: str, message: str) -> list[str]:
    """What is still wrong, once settled, with a session whose turn was cut short: its history holds the turn's
    user message, and the listed message_count equals the history."""
    problems: list[str] = []

    async def probe() -> bool:
        problems.clear()
        messages = (await history(ctx, session, "CHANNEL-009"))["messages"]
        if message not in [m.get("content") for m in messages if m.get("role") == "user"]:
            problems.append("the history does not hold the turn's user message")
        listed = await find_session(ctx, session, "CHANNEL-009") or {}
        counted = [m for m in messages if m.get("role") in ("user", "assistant", "tool")]
        if listed.get("message_count") != len(counted):
            problems.append(f"message_count {listed.get('message_count')!r}, the history holds {len(counted)}")
        return not problems

    await wait_for(probe, seconds=SETTLE_SECONDS + ctx.env.slow_tool_seconds, interval=0.25)
    return problems


def first_words(frame: Any) -> bool:
    """The first text of the dribbling answer (`One `) arrived: the model is answering, the turn is running."""
    return frame.data is not None and "One " in frame.data


async def missed_scenario(ctx: CheckContext, turn: Turn) -> str | None:
    """Why the turn did not go as scripted, or None when it did: streamed and ended by the server, its generations
    served by the fake LLM as scripted (support_channels.require_scripted's test), and ending in an error exactly
    when its script fails (a tool turn cut short by an error reached the model, yet is no tool turn)."""
    answer, generations = turn.answer, await ctx.llm.main_requests(turn.run)
    # A turn asked not to be streamed (OpenAI `stream: false`) ends in one JSON answer.
    streamed = "stream" not in (json_or_none(answer.exchange.request_body or "") or {}) or answer.streamed
    ended = answer.status == 200 and answer.completed and (answer.streamed or not streamed)
    if ended and _went_as_scripted(turn, generations) and (answer.error is not None) == turn.expected.fails:
        return None
    error = f", ending in the error {answer.error.get('message')!r}" if ended and answer.error else ""
    return (
        f"the {turn.expected.script} turn on {answer.endpoint.name} did not go as scripted "
        f"({'streamed' if ended else answer.describe()}{error}; {len(generations)} generation(s) reached the fake LLM)"
    )


async def unless_blocked(ctx: CheckContext, turns: list[Turn]) -> list[str | None]:
    """For each turn (all on one endpoint), why it did not go as scripted, or None (see missed_scenario). When some did
    not, control turns in new sessions tell whose failure it is: a plain turn on the same endpoint not served
    either, the check is blocked by TESTABILITY-001 (support_channels.require_scripted's control); when a missed
    turn's script calls tools, a cs-tool turn (on POST /stream when the target serves it, the tools being the
    agent's whatever the channel, else on the endpoint) not served either, by TESTABILITY-003. Else the missed
    turns are the implementation's failures, for the caller to judge."""
    whys = [await missed_scenario(ctx, turn) for turn in turns]
    missed = [turn for turn, why in zip(turns, whys, strict=True) if why]
    if not missed:
        return whys
    chosen = missed[0].answer.endpoint
    why = "; ".join(w for w in whys if w)
    plain = await post_turn(ctx, chosen, "cs-plain", label=f"control-{chosen.name}-{uuid.uuid4().hex[:8]}")
    plain_served = plain.answer.status == 200 and plain.answer.completed
    if not (plain_served and await ctx.llm.main_requests(plain.run)):
        raise BlockedBy(
            "TESTABILITY-001", f"{why}; a plain turn in a new session is not served either: {plain.answer.describe()}"
        )
    if any(turn.expected.tool_calls for turn in missed) and "cs-tool" in ctx.env.scripts:
        if ctx.target.serves_gns3:
            result = await ctx.client.stream({"message": ctx.message("cs-tool", "Control turn")})
            ok, shown = served(ctx, result, "cs-tool"), describe(result)
        else:
            tool = await post_turn(ctx, chosen, "cs-tool", label=f"control-tool-{chosen.name}-{uuid.uuid4().hex[:8]}")
            ok, shown = await missed_scenario(ctx, tool) is None, tool.answer.describe()
        if not ok:
            raise BlockedBy(
                "TESTABILITY-003",
                f"{why}; a plain turn is served, but a cs-tool turn in a new session is not served either: {shown}",
            )
    return whys
