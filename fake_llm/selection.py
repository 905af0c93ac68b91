"""Which script and which step a request plays, from the request alone (spec/fake-llm/selection.yaml).

No state is kept between requests: the script comes from the tag in the last user message, the step from the
number of assistant messages after it, and a request that binds no tools is a title request.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gns3_copilot_spec as spec
from fake_llm.errors import ScriptSelectionError
from fake_llm.playback import failure_before_streaming
from fake_llm.request_log import RequestLog
from fake_llm.scripts import Failure, Script, ScriptLibrary, Step

RULES = spec.load_document(spec.FAKE_LLM_DIR / "selection.yaml")
TAG = re.compile(RULES["tag_pattern"])
DEFAULT_SCRIPT: str = RULES["default_script"]


@dataclass(frozen=True)
class Message:
    """A request message reduced to what selection needs."""

    role: str  # user | assistant | system | tool
    text: str


@dataclass(frozen=True)
class Selection:
    script: Script
    step_index: int | None  # None for the title request
    tag: str | None
    run: str | None

    @property
    def step(self) -> Step:
        return self.script.title if self.step_index is None else self.script.steps[self.step_index]

    @property
    def is_title(self) -> bool:
        return self.step_index is None

    def describe(self) -> str:
        what = "title" if self.is_title else f"step {self.step_index}"
        return f"script {self.script.name!r} {what}"

    def failure_message(self, failure: Failure, *, mid_stream: bool = False) -> str:
        """The text of a scripted failure, naming the script and step that asked for it."""
        return f"{failure.message} ({self.describe()}{', mid-stream' if mid_stream else ''})"


def request_digest(messages: Sequence[Message]) -> str:
    """A short deterministic digest of the conversation, for ids that differ between turns."""
    payload = json.dumps([[m.role, m.text] for m in messages], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:12]


def tag_for(script: str, run: str | None = None) -> str:
    """The tag to put in a user message so that the fake LLM plays `script`."""
    return f"[[fake-llm:{script}:{run}]]" if run else f"[[fake-llm:{script}]]"


def select(messages: Sequence[Message], *, tools_bound: bool, library: ScriptLibrary) -> Selection:
    user_positions = [i for i, m in enumerate(messages) if m.role == "user"]
    if not user_positions:
        raise ScriptSelectionError("the request has no user message, so no script tag can select a script")
    last_user = user_positions[-1]
    tags = list(TAG.finditer(messages[last_user].text))
    if len(tags) > 1:
        found = ", ".join(t.group(0) for t in tags)
        raise ScriptSelectionError(f"the last user message has {len(tags)} script tags ({found}); put exactly one")
    tag = tags[0].group(0) if tags else None
    name = tags[0].group("script") if tags else DEFAULT_SCRIPT  # FAKELLM-001
    run = tags[0].group("run") if tags else None
    script = library.get(name)
    step = sum(1 for m in messages[last_user + 1 :] if m.role == "assistant")  # FAKELLM-002
    shown = tag or f"(no tag: default script {DEFAULT_SCRIPT!r})"
    if script is None:  # an error naming the tag and the step, never a made-up reply (FAKELLM-004)
        raise ScriptSelectionError(
            f"tag {shown} names no known script {name!r} (step {step}); known scripts: {', '.join(library.names())}"
        )
    if not tools_bound:  # a title request (FAKELLM-003)
        return Selection(script=script, step_index=None, tag=tag, run=run)
    if step >= len(script.steps):  # FAKELLM-004
        raise ScriptSelectionError(
            f"tag {shown}: script {name!r} has {len(script.steps)} step(s), but the request asks for step {step} "
            f"({step} assistant message(s) after the last user message)"
        )
    return Selection(script=script, step_index=step, tag=tag, run=run)


def select_and_record(
    messages: Sequence[Message], /, *, tools_bound: bool, library: ScriptLibrary, log: RequestLog, **fields: Any
) -> tuple[Selection, Failure | None]:
    """Select, and log the request with its outcome; both transports go through here.

    Returns the selection and the failure to answer with before streaming, if the step asks for one; a
    selection error is logged, then raised.
    """
    try:
        selection = select(messages, tools_bound=tools_bound, library=library)
    except ScriptSelectionError as error:
        log.add(**fields, script=None, step=None, tag=None, run=None, outcome=f"selection error: {error}")
        raise
    failure = failure_before_streaming(selection.step)
    log.add(
        **fields,
        script=selection.script.name,
        step=selection.step_index,
        tag=selection.tag,
        run=selection.run,
        outcome="ok" if failure is None else f"failed: {failure.message}",
    )
    return selection, failure
