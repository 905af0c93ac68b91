"""Errors of the fake LLM. Each names what a script author needs to fix: the file, the script, the step."""

from __future__ import annotations


class FakeLlmError(Exception):
    """Base class: something the fake LLM refuses to do rather than invent an answer."""


class ScriptFileError(FakeLlmError):
    """A script file that does not parse or does not follow spec/fake-llm/script.schema.json."""


class ScriptSelectionError(FakeLlmError):
    """A request that selects no script step (unknown tag, step past the end, several tags) (FAKELLM-004)."""

    code = "fake_llm_script_error"


class ScriptedFailure(FakeLlmError):
    """The failure a script step asked for (`fail`), raised in-process."""

    def __init__(self, message: str, *, status: int = 500) -> None:
        super().__init__(message)
        self.status = status
