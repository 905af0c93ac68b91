"""The suite gives the same verdicts whether it starts the reference server itself (the built-in target, with a
1 s heartbeat) or is pointed through a target file's base_url at one started with every documented default
(15 s heartbeat): the suite's stream deadlines follow the declarations, never its own fixed value. And a run
through a base_url leaves nothing it made on the server: its users, their LLM configurations and its projects."""

from __future__ import annotations

import asyncio

import pytest
import yaml

from conformance.harness.engine import run
from conformance.harness.target import load_target
from tests.reference_server.conftest import start_server_process

from .runs import SHARES_REFERENCE_RUN, reference_run

pytestmark = pytest.mark.slow  # two whole suite runs: left out of `python3 tasks.py test --quick`

DEFAULT_HEARTBEAT = 15  # reference_server/settings.py, and the README


@SHARES_REFERENCE_RUN
def test_a_target_file_for_a_server_with_its_defaults_gives_the_same_verdicts(tmp_path):
    server = start_server_process(tmp_path / "data")  # only the loopback port and a data directory of its own
    try:
        data = server.target_data("reference-over-http")
        data["declarations"]["heartbeat_interval"] = DEFAULT_HEARTBEAT
        # the slow tool must outlast an interval for a heartbeat to be due while it runs (heartbeat.during_tool)
        data["declarations"]["tools"]["slow"]["arguments"]["seconds"] = DEFAULT_HEARTBEAT + 2
        path = tmp_path / "target.yaml"
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
        over_http = asyncio.run(run(load_target(str(path))))
        left_on_server = server.what_is_on()
    finally:
        server.stop()
    # What the run made (users, their access and LLM configurations, a project per check) is gone: only the admin
    # is left.
    assert over_http.cleanup is not None and not over_http.cleanup.kept and over_http.cleanup.left == []
    # main, other, no_llm, the stranger, the user controller_api.answers gives an LLM configuration of its own, and
    # one each of access.precedence (without an LLM configuration), access.entries (for its entries),
    # access.project_creation (who creates projects), access.entry_paths (whose entries it writes) and
    # controller_api.password_change (who changes their password)
    assert over_http.cleanup.removed["user"] == 10 and over_http.cleanup.removed["project"] > 50
    assert over_http.cleanup.removed["ace"] == 3  # main, other and no_llm on /projects; the stranger has none
    assert left_on_server == {"users": ["admin"], "projects": []}
    assert not list((tmp_path / "data" / "projects").iterdir())
    built_in = reference_run()
    assert {v.id: v.verdict.value for v in over_http.verdicts} == built_in.verdicts()
    assert over_http.passed and built_in.report["passed"]
    print(f"\nwith the default heartbeat ({DEFAULT_HEARTBEAT} s) the run took {over_http.wall_time:.0f} s")
