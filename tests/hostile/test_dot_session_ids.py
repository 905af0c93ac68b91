"""Session ids `.` and `..` are refused 422 on every channel (SESSION-003, issue 34): clients and proxies rewrite
them as path segments (RFC 3986, 5.2.4), so such a session could be made and then never read or deleted."""

from __future__ import annotations

import pytest

import gns3_copilot_spec as spec
from tools.channel_requests import CHANNELS, gns3

from .conftest import FAKE_LLM_TURN

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("session_id", [".", ".."])
@pytest.mark.parametrize("channel", ["gns3", *CHANNELS])
async def test_a_dot_segment_session_id_is_refused(world, channel, session_id):
    make = gns3 if channel == "gns3" else CHANNELS[channel]
    path, body = make(session_id, f"Hello {FAKE_LLM_TURN}")
    prefix = spec.default_prefix().format(project_id=world.ids["project_id"])
    answer = await world.client.post(prefix + path, json=body, headers=world.token)
    assert answer.status_code == 422, (answer.status_code, answer.text[:300])


async def test_three_dots_are_an_ordinary_id(world):
    prefix = spec.default_prefix().format(project_id=world.ids["project_id"])
    path, body = gns3("...", f"Hello {FAKE_LLM_TURN}")
    answer = await world.client.post(prefix + path, json=body, headers=world.token)
    assert answer.status_code == 200, answer.text[:300]
