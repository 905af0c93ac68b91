"""Shared test set-up: tests run from the repository root, offline, against spec/ as it is on disk."""

import json
import os
from functools import cache
from pathlib import Path

import pytest

from tests.ahead import ahead_of, settle, start_ahead
from tests.postgres import postgres_server, postgres_url  # noqa: F401 - PostgreSQL fixtures for every test

ROOT = Path(__file__).resolve().parent.parent

# Every reference server the tests start, in this process or as a child, hashes passwords with Argon2id at its
# lowest cost: the tests make and log in thousands of users, and at the server's own default (about 0.15 s of CPU
# per hash or login) that alone was minutes of the test command's CPU. What the tests judge is never the cost;
# tests/reference_server/test_secrets.py judges the default's parameters.
os.environ["COPILOT_REF_PASSWORD_HASH_PROFILE"] = "CHEAPEST"


@pytest.fixture(scope="session", autouse=True)
def _fake_llm_forked() -> None:
    """The runs the tests make in their own process (mutants, preflight, clean-up...) fork their fake LLM from the
    process's fork server (tests/quality/fork_server.py) instead of starting `python -m fake_llm` again: some 250 runs,
    each 0.3 s of CPU in imports. The README's commands and the installed wheel still start it as users do."""
    from conformance.harness import processes
    from tests.quality.fork_server import forked

    processes.fake_llm_module = lambda: forked("fake_llm")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


# Each test's measured seconds (tools/test_durations.py --write, from a run of the test command): the groups are
# handed to the workers longest first, so that no long group starts last. A test not listed yet counts as 0 s; a
# stale file only orders the work less well.
DURATIONS = Path(__file__).resolve().parent / "durations.json"


def duration_key(nodeid: str) -> str:
    """A test's key in durations.json: the JUnit XML's `classname::name` (`tests.quality.test_mutants::test_x[a]`)."""
    path, *rest = nodeid.split("@")[0].split("::")
    return ".".join([path.removesuffix(".py").replace("/", "."), *rest[:-1]]) + "::" + rest[-1]


@cache
def measured_seconds() -> dict[str, float]:
    return json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}


def seconds_of(nodeid: str) -> float:
    return measured_seconds().get(duration_key(nodeid), 0.0)


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """The workers' scheduler for `--dist loadgroup` (tests/scheduling.py: longest units first, short behind long)."""
    if config.getoption("dist") != "loadgroup":
        return None
    from tests.scheduling import LongestFirstScheduling

    return LongestFirstScheduling(config, log, seconds=seconds_of)


def _group(item: pytest.Item) -> str:
    marker = item.get_closest_marker("xdist_group")
    return str(marker.args[0]) if marker is not None else item.nodeid


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The test command's workers (pytest-xdist, `--dist loadgroup`) keep a module's tests together by default, so
    that a module's servers and fixtures are made once, by one worker. A module whose tests each make their own run
    says `XDIST_SPREAD = True`, and its tests go to any worker; a test marked `xdist_group(...)` keeps its group.
    Then the groups are ordered longest first (DURATIONS); every worker collects the same order."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        if getattr(getattr(item, "module", None), "XDIST_SPREAD", False):
            continue
        item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    totals: dict[str, float] = {}
    for item in items:
        totals[_group(item)] = totals.get(_group(item), 0.0) + seconds_of(item.nodeid)
    items.sort(key=lambda item: -totals[_group(item)])  # stable: a group keeps its own order


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """Before a test runs, the work the next test reads starts in the background (tests/ahead.py); a test that
    patches the process (monkeypatch) runs with no such work beside it, and starts none."""
    if "monkeypatch" in getattr(item, "fixturenames", ()):
        settle()
    elif nextitem is not None and (ahead := ahead_of(nextitem)) is not None:
        start_ahead(ahead)
    yield
