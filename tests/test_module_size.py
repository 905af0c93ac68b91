"""No module too long to read in one sitting: 450 lines at most in every package of the project's own code (the
suite, the reference server, the fake LLM, the peers' runners, the tools). A module over it does more than one job;
split it by job, never by size alone (tests/conformance/test_layout.py says the same of support modules)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("conformance", "reference_server", "fake_llm", "peers", "tools")
MAX_LINES = 450


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_over_the_limit(package: str):
    over = {
        str(path.relative_to(ROOT)): lines
        for path in sorted((ROOT / package).rglob("*.py"))
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert over == {}, f"modules over {MAX_LINES} lines: {over}"
