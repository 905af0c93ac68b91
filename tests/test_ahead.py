"""tests/ahead.py: work made once per process, however many threads ask, and started a test ahead."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from tests.ahead import ahead_of, once, start_ahead


def test_work_is_made_once_while_others_wait_for_it():
    made: list[int] = []
    key = ("test", "once", time.monotonic())

    def make() -> str:
        made.append(1)
        time.sleep(0.2)  # the other threads ask meanwhile
        return "result"

    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(once(key, make))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == ["result"] * 4 and made == [1]
    assert once(key, lambda: "made again") == "result"


def test_what_the_work_raised_is_raised_to_every_test_that_reads_it():
    key = ("test", "raises", time.monotonic())

    def make() -> str:
        pytest.skip("no network namespace here")

    start_ahead(lambda: once(key, make))
    for _ in range(2):
        with pytest.raises(pytest.skip.Exception, match="no network namespace"):
            once(key, lambda: "never made")


def test_the_work_of_a_test_is_what_its_module_names():
    module = SimpleNamespace(AHEAD={"test_run": lambda params: ("run", params["name"])})
    item = SimpleNamespace(module=module, originalname="test_run", callspec=SimpleNamespace(params={"name": "a"}))
    assert ahead_of(item) == ("run", "a")
    assert ahead_of(SimpleNamespace(module=module, originalname="test_other", callspec=item.callspec)) is None
    assert ahead_of(SimpleNamespace(module=module, originalname="test_run")) is None  # not parametrized
    assert ahead_of(SimpleNamespace(originalname="test_run")) is None  # no module: a doctest, say
