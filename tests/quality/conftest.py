"""The runs of the quality tests start ahead (tests/quality/runs.py): before a worker runs a test, the run of the test
it runs next is started in the background. A test module names the run each of its tests reads in RUN_OF: test
function name -> (the test's parameters -> (kind, name) of its run, as runs.start_ahead takes them)."""

from __future__ import annotations

import pytest

from .runs import start_ahead


def run_of(item: pytest.Item) -> tuple[str, str] | None:
    """The run `item` reads, when its module says (RUN_OF), else None."""
    which = getattr(getattr(item, "module", None), "RUN_OF", {}).get(getattr(item, "originalname", None))
    callspec = getattr(item, "callspec", None)
    return which(callspec.params) if which is not None and callspec is not None else None


# pytest calls this hook for every test of the session, wherever it is (a conftest's runtest hooks are not confined to
# its folder): what matters is whether the next test reads a run.
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    if nextitem is not None and (ahead := run_of(nextitem)) is not None:
        start_ahead(*ahead)
    yield
