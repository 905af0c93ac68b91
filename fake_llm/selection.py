"""Which script and which step a request plays, from the request alone (spec/fake-llm/selection.yaml).

No state is kept between requests: the script comes from the tag in the last user message, the step from the
number of assistant messages after it, and a request that binds no tools is a title request.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import spec
from fake_llm.errors import ScriptSelectionError
from fake_llm.scripts import Script, ScriptLibrary, Step

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
    name = tags[0].group("script") if tags else DEFAULT_SCRIPT
    run = tags[0].group("run") if tags else None
    script = library.get(name)
    step = sum(1 for m in messages[last_user + 1 :] if m.role == "assistant")
    shown = tag or f"(no tag: default script {DEFAULT_SCRIPT!r})"
    if script is None:
        raise ScriptSelectionError(
            f"tag {shown} names no known script {name!r} (step {step}); known scripts: {', '.join(library.names())}"
        )
    if not tools_bound:
        return Selection(script=script, step_index=None, tag=tag, run=run)
    if step >= len(script.steps):
        raise ScriptSelectionError(
            f"tag {shown}: script {name!r} has {len(script.steps)} step(s), but the request asks for step {step} "
            f"({step} assistant message(s) after the last user message)"
        )
    return Selection(script=script, step_index=step, tag=tag, run=run)
