"""The reference server serves exactly the channel operations of openapi.yaml, at their paths under the chat
prefix, whatever the prefix (CHANNEL-001, PREFIX-001)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.routing import APIRoute, iter_route_contexts

import gns3_copilot_spec as spec
from reference_server.app import create_app
from reference_server.settings import Settings

HTTP_METHODS = {"get", "put", "post", "delete", "patch"}


def channel_operations(prefix: str) -> set[tuple[str, str]]:
    document = spec.load_openapi(prefix=prefix)
    return {
        (method.upper(), path)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in HTTP_METHODS and spec.is_channel_operation(operation)
    }


def served_channel_routes(prefix: str, tmp_path: Path) -> set[tuple[str, str]]:
    app = create_app(Settings(data_dir=tmp_path / "data", chat_prefix=prefix))
    return {
        (method, context.path)
        for context in iter_route_contexts(app.routes)  # FastAPI nests included routers
        if isinstance(context.route, APIRoute) and "Channels" in (context.tags or ())
        for method in context.methods
    }


@pytest.mark.covers("CHANNEL-001", "PREFIX-001")
@pytest.mark.parametrize("prefix", ["/v3/projects/{project_id}/chat", "/v3/copilot/projects/{project_id}/chat"])
def test_every_channel_operation_is_served_under_the_prefix(prefix: str, tmp_path: Path):
    expected = channel_operations(prefix)
    assert len(expected) == 6
    assert served_channel_routes(prefix, tmp_path) == expected
