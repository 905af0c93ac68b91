"""The chat API's operations as openapi.yaml declares them: one table for every check that walks the endpoints,
never a hand-made copy."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import gns3_copilot_spec as spec

_METHODS = ("get", "put", "post", "patch", "delete")


@dataclass(frozen=True)
class Operation:
    method: str  # upper case
    path: str  # relative to the chat prefix, e.g. /sessions/{session_id}/pin
    id: str  # the operationId
    definition: dict[str, Any]

    @property
    def names_session(self) -> bool:
        return "{session_id}" in self.path

    def url(self, session_id: str = "") -> str:
        """The path under the chat prefix, with `session_id` filled in."""
        return self.path.replace("{session_id}", session_id)

    @property
    def statuses(self) -> set[int]:
        return {int(status) for status in self.definition["responses"]}


def _table(
    document: dict[str, Any], path_of: Callable[[str], str], keep: Callable[[dict[str, Any]], bool] = lambda _: True
) -> tuple[Operation, ...]:
    return tuple(
        Operation(method.upper(), path_of(path), definition["operationId"], definition)
        for path, item in document["paths"].items()
        for method, definition in item.items()
        if method in _METHODS and keep(definition)
    )


@cache
def operations() -> tuple[Operation, ...]:
    """Every operation of the GNS3 chat API, in document order (the channels' are judged by their own checks, the
    controller's by the `controller` area)."""
    prefix = spec.default_prefix()
    return _table(spec.chat_api_only(spec.load_openapi()), lambda path: path.removeprefix(prefix))


@cache
def controller_operations() -> tuple[Operation, ...]:
    """The controller's operations a chat client relies on (tag `controller`), their paths absolute: they are the
    controller's own, not under the chat prefix."""
    return _table(spec.load_openapi(), lambda path: path, spec.is_controller_operation)


@cache
def _by_id() -> dict[str, Operation]:
    """Every operation the suite judges answers of, by operationId: looked up for each answer of a run."""
    return {op.id: op for op in operations() + controller_operations()}


def operation(operation_id: str) -> Operation:
    return _by_id()[operation_id]


def chat_endpoints(capabilities: set[str]) -> list[Operation]:
    """Every operation a target must serve: abort only with its capability (without it, 404 or 501 are allowed)."""
    return [op for op in operations() if op.id != "abortSessionTurn" or "abort" in capabilities]


def session_endpoints(capabilities: set[str]) -> list[Operation]:
    """The operations with the session id in their path. The session's DELETE comes last, so that a server that
    wrongly obeys it has answered every other call first."""
    named = [op for op in chat_endpoints(capabilities) if op.names_session]
    return sorted(named, key=lambda op: op.id == "deleteSession")
