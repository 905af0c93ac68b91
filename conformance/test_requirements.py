"""One test per requirement of the registry (spec/requirements.yaml), its id as the test id:

    pytest --pyargs conformance --copilot-target NAME|FILE [--copilot-report-dir reports] [-k TITLE-003]

The suite runs once for the session (conformance/pytest_plugin.py); each test reads its requirement's verdict.
PASS, WARN and XFAIL pass; N/A and EXCLUDED skip with the reason; FAIL, STALE, ERROR and NOT TESTABLE fail with the
findings. Our own `pytest` (testpaths = tests) never collects this file.
"""

from __future__ import annotations

import pytest

import gns3_copilot_spec as spec
from conformance.pytest_plugin import ConformanceRun, assert_requirement

REQUIREMENT_IDS = [record["id"] for record in spec.load_requirements()["requirements"]]


@pytest.mark.parametrize("requirement_id", REQUIREMENT_IDS)
def test_requirement(requirement_id: str, conformance_run: ConformanceRun) -> None:
    assert_requirement(conformance_run, requirement_id)
