"""The operator's allow-list of LLM provider URLs is matched as URLs (issue 34): an entry `https://api.openai.com`
allowed, as a string prefix, `https://api.openai.com.evil.example/` (another host) and
`https://api.openai.com@evil.example/` (the host there is evil.example, the rest userinfo); a malformed entry stops
the server at start-up, naming it."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from reference_server.cli import main
from reference_server.settings import Settings
from tests.reference_server.conftest import in_process_lab

pytestmark = pytest.mark.anyio

ALLOWED = "https://api.openai.com"
BYPASSES = [
    "https://api.openai.com.evil.example/",  # another host, whose name starts with the allowed one
    "https://api.openai.com@evil.example/",  # userinfo: the request goes to evil.example
    "https://api.openai.com:8443/",  # another port
    "http://api.openai.com/",  # another scheme
    "https://api.openai.com\\@evil.example/",  # a backslash, which some parsers take for a slash
]


async def test_a_base_url_that_only_starts_like_an_allowed_one_is_refused(make_settings):
    async with in_process_lab(make_settings(llm_base_url_allow=[ALLOWED, "https://llm.example/v1"])) as lab:
        user_id, _ = await lab.add_user("bypass-user", llm=False)
        url = f"/v3/access/users/{user_id}/llm-model-configs"
        config = {"name": "provider", "provider": "openai", "model": "m"}
        for base_url in [*BYPASSES, "https://llm.example/v10", "https://llm.example/v1/../admin"]:
            refused = await lab.client.post(url, json={**config, "base_url": base_url}, headers=lab.headers)
            assert refused.status_code == 422, (base_url, refused.text)
            assert refused.json()["details"]["errors"][0]["loc"] == ["body", "base_url"]
        for base_url in ["https://api.openai.com/v1", "https://API.openai.com:443", "https://llm.example/v1/"]:
            allowed = await lab.client.post(url, json={**config, "base_url": base_url}, headers=lab.headers)
            assert allowed.status_code == 201, (base_url, allowed.text)


@pytest.mark.parametrize(
    "entry",
    [
        "api.openai.com",  # no scheme
        "ftp://api.openai.com",
        "https://",  # no host
        "https://user@api.openai.com",
        "https://api.openai.com/v1?x=1",
        "https://api.openai.com/v1#x",
        "https://api.openai.com:99999",
        "https://api.openai.com/v1\n",
    ],
)
def test_a_malformed_allow_list_entry_stops_the_server_naming_it(tmp_path, entry):
    with pytest.raises(ValidationError, match="llm_base_url_allow") as raised:
        Settings(data_dir=tmp_path, llm_base_url_allow=[entry])
    assert repr(entry) in str(raised.value)
    started = CliRunner().invoke(main, ["--data-dir", str(tmp_path), "--llm-base-url-allow", entry])
    assert started.exit_code == 2 and repr(entry) in started.output, started.output
