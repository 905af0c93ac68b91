"""CORS for a chat UI served from another origin (`useChat` or `HttpAgent` on a development server): off by default,
on for each `--cors-origin`, and then on every answer, a refusal included (a browser hides an answer without it)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from gns3_copilot_generated.constants import CHANNEL_PATHS
from reference_server.cli import main as serve
from reference_server.settings import Settings

from .conftest import in_process_lab

pytestmark = pytest.mark.anyio

UI_ORIGIN = "http://127.0.0.1:5173"  # where Vite serves a page in development


def _preflight(origin: str = UI_ORIGIN) -> dict:
    return {
        "Origin": origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type",
    }


async def test_without_an_origin_there_is_no_cors(make_settings):
    async with in_process_lab(make_settings()) as lab:
        answer = await lab.client.options("/v3/access/users/authenticate", headers=_preflight())
        assert answer.status_code == 405 and "access-control-allow-origin" not in answer.headers
        login = await lab.client.post(
            "/v3/access/users/authenticate",
            json={"username": "admin", "password": "admin"},
            headers={"Origin": UI_ORIGIN},
        )
        assert login.status_code == 200 and "access-control-allow-origin" not in login.headers


async def test_a_declared_origin_may_log_in_and_chat_and_reads_its_refusals(make_settings):
    async with in_process_lab(make_settings(cors_origin=[UI_ORIGIN])) as lab:
        await lab.setup()
        ui = lab.prefix() + CHANNEL_PATHS["ui"]
        answer = await lab.client.options(ui, headers=_preflight())
        assert answer.status_code == 200
        assert answer.headers["access-control-allow-origin"] == UI_ORIGIN
        assert {"POST", "DELETE"} <= set(answer.headers["access-control-allow-methods"].replace(" ", "").split(","))
        assert "authorization" in answer.headers["access-control-allow-headers"].lower()
        refused = await lab.client.get(lab.prefix() + "/sessions", headers={"Origin": UI_ORIGIN})  # no token
        assert refused.status_code == 401 and refused.headers["access-control-allow-origin"] == UI_ORIGIN
        listed = await lab.client.get(lab.prefix() + "/sessions", headers={**lab.headers, "Origin": UI_ORIGIN})
        assert listed.status_code == 200 and listed.headers["access-control-allow-origin"] == UI_ORIGIN
        assert "x-vercel-ai-ui-message-stream" in listed.headers["access-control-expose-headers"]
        other = await lab.client.options(ui, headers=_preflight("http://evil.example"))
        assert other.status_code == 400 and "access-control-allow-origin" not in other.headers


def test_an_origin_with_a_path_is_refused_with_the_reason(tmp_path):
    with pytest.raises(ValidationError, match="is not an origin"):
        Settings(data_dir=tmp_path, cors_origin=["http://127.0.0.1:5173/app"])
    result = CliRunner().invoke(serve, ["--data-dir", str(tmp_path), "--cors-origin", "localhost:5173"])
    assert result.exit_code == 2 and "is not an origin" in result.output
