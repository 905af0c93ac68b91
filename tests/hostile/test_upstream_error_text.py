"""An upstream LLM's own error text never reaches the client (issue 34): a user's LLM configuration may point at
any server, and that server's answer (an internal service's error page, say) came back verbatim in the turn's
`error` event. The event now says what happened (the status), the server log says the rest."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytestmark = pytest.mark.anyio

SECRET = "internal-billing-db.corp:5432 password=hunter2"


class _Failing(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = f'{{"error": {{"message": "{SECRET}", "type": "server_error"}}}}'.encode()
        self.send_response(500)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def failing_upstream() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Failing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()


async def test_the_upstream_s_error_text_stays_in_the_server_log(lab, failing_upstream):
    user_id, headers = await lab.add_user("upstream-user", llm=False)
    # no api_key: a provider without keys is called all the same (the `openai` client refused to send without one)
    config = {"name": "failing", "provider": "openai", "model": "m", "base_url": failing_upstream}
    made = await lab.client.post(
        f"/v3/access/users/{user_id}/llm-model-configs", json={**config, "is_default": True}, headers=lab.headers
    )
    assert made.status_code == 201, made.text
    stream = await lab.stream("hello", headers=headers)
    assert stream.status == 200, stream.text
    [error] = [event for event in stream.events if event["type"] == "error"]
    assert error["code"] == "llm_error" and "500" in error["error"], error
    assert SECRET not in stream.text and "hunter2" not in stream.text


async def test_an_operator_s_allow_list_refuses_other_base_urls(make_settings, failing_upstream):
    from tests.reference_server.conftest import in_process_lab

    settings = make_settings(llm_base_url_allow=["https://api.openai.com/v1"])
    async with in_process_lab(settings) as lab:
        user_id, _ = await lab.add_user("allow-user", llm=False)
        url = f"/v3/access/users/{user_id}/llm-model-configs"
        config = {"name": "elsewhere", "provider": "openai", "model": "m", "base_url": failing_upstream}
        refused = await lab.client.post(url, json=config, headers=lab.headers)
        assert refused.status_code == 422 and refused.json()["details"]["errors"][0]["loc"] == ["body", "base_url"]
        allowed = {**config, "base_url": "https://api.openai.com/v1"}
        assert (await lab.client.post(url, json=allowed, headers=lab.headers)).status_code == 201
