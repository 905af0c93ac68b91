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
    """Made in another thread (as ahead work is), which has taken the key before the readers ask: a thread of its
    own, not the ahead pool, which may be busy with this worker's real runs for a minute."""
    key = ("test", "raises", time.monotonic())
    taken = threading.Event()

    def make() -> str:
        taken.set()
        pytest.skip("no network namespace here")

    raised: list[BaseException] = []

    def ahead() -> None:
        try:
            once(key, make)
        except BaseException as exc:  # noqa: BLE001 - the maker's own reading raises it too
            raised.append(exc)

    maker = threading.Thread(target=ahead)
    maker.start()
    taken.wait()
    maker.join()
    assert [type(exc) for exc in raised] == [pytest.skip.Exception]
    for _ in range(2):
        with pytest.raises(pytest.skip.Exception, match="no network namespace"):
            once(key, lambda: "never made")


def test_work_started_ahead_is_read_by_the_test():
    key = ("test", "ahead", time.monotonic())
    started = threading.Event()

    def make() -> str:
        started.set()
        return "made ahead"

    start_ahead(lambda: once(key, make))
    started.wait()  # the pool may first finish this worker's real runs: no bound on how long that takes
    assert once(key, lambda: "made by the test") == "made ahead"


def test_the_work_of_a_test_is_what_its_module_names():
    module = SimpleNamespace(AHEAD={"test_run": lambda params: ("run", params["name"])})
    item = SimpleNamespace(module=module, originalname="test_run", callspec=SimpleNamespace(params={"name": "a"}))
    assert ahead_of(item) == ("run", "a")
    assert ahead_of(SimpleNamespace(module=module, originalname="test_other", callspec=item.callspec)) is None
    assert ahead_of(SimpleNamespace(module=module, originalname="test_run")) is None  # not parametrized
    assert ahead_of(SimpleNamespace(originalname="test_run")) is None  # no module: a doctest, say


def test_settle_returns_once_the_work_started_ahead_is_done():
    """What a test that patches the process waits for (tests/conftest.py): every work under way, whatever it raised."""
    from tests.ahead import settle

    released, finished = threading.Event(), []

    def work(raises: bool) -> None:
        released.wait(10)
        finished.append(raises)
        if raises:
            raise RuntimeError("for the test that reads it")

    start_ahead(lambda: work(False))
    start_ahead(lambda: work(True))
    threading.Timer(0.3, released.set).start()
    settle()
    assert sorted(finished) == [False, True]


def test_a_test_that_patches_the_process_starts_no_work_beside_it(monkeypatch):
    """The hook: a monkeypatch test settles and starts nothing for its next test; any other starts the next one's."""
    import tests.conftest as conftest

    calls: list[str] = []
    monkeypatch.setattr(conftest, "settle", lambda: calls.append("settle"))
    monkeypatch.setattr(conftest, "start_ahead", lambda call: calls.append("start"))
    monkeypatch.setattr(conftest, "ahead_of", lambda item: lambda: None)
    for fixtures in (("monkeypatch", "tmp_path"), ("tmp_path",)):
        protocol = conftest.pytest_runtest_protocol(SimpleNamespace(fixturenames=fixtures), SimpleNamespace())
        next(protocol)
    assert calls == ["settle", "start"]
