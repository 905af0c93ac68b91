"""The suite gives the same verdicts whether it starts the reference server itself (the built-in target) or is
pointed at an already running one through a target file with a base_url."""

from __future__ import annotations

import asyncio
import copy

import yaml

from conformance.engine import run
from conformance.target import load_target
from tests.reference_server.conftest import start_server_process

from .runs import reference_run


def test_a_target_file_with_a_base_url_gives_the_same_verdicts(tmp_path):
    server = start_server_process(tmp_path / "data", "--heartbeat-interval", "1")
    try:
        data = copy.deepcopy(load_target(None).data)
        del data["start"]
        data["name"] = "reference-over-http"
        data["base_url"] = server.base_url
        data["declarations"]["database"]["project_dir"] = str(tmp_path / "data" / "projects" / "{project_id}")
        path = tmp_path / "target.yaml"
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
        over_http = asyncio.run(run(load_target(str(path))))
    finally:
        server.stop()
    built_in = reference_run()
    assert {v.id: v.verdict for v in over_http.verdicts} == {v.id: v.verdict for v in built_in.verdicts}
    assert over_http.passed and built_in.passed
