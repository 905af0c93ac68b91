"""Work a test reads, made once per process, and started ahead of the test that reads it.

Some tests read a run that mostly waits: a conformance run against a mutant (its scripted silences, slow tools, checks
judged again alone), a peer judged in its namespace. Before a worker runs a test, the work of the test it runs next is
started in the background (tests/conftest.py, pytest_runtest_protocol), so a worker judging such runs has about two
under way and their waits overlap. A test module says which of its tests read such work in AHEAD: test function name
-> (the test's parameters -> the call that makes, or waits for, the work, itself made with `once`). Measured side by
side (tests/quality/test_mutants.py and test_answer_breakers.py on 4 workers): 191 s with runs started ahead, 218 s
without, for the same CPU.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

import pytest

T = TypeVar("T")

AHEAD = 2  # works started ahead at a time, beside the one the current test makes or waits for itself
_ahead = ThreadPoolExecutor(max_workers=AHEAD, thread_name_prefix="ahead")
_lock = threading.Lock()
_made: dict[Hashable, Future] = {}


def once(key: Hashable, make: Callable[[], T]) -> T:
    """`make()`, once per process for `key`: made by the first thread that asks; the others wait for it and get its
    result, or its exception (a skip, a failed assertion) raised again."""
    with _lock:
        future, mine = _made.get(key), False
        if future is None:
            future, mine = _made.setdefault(key, Future()), True
    if mine:
        try:
            future.set_result(make())
        except BaseException as exc:  # noqa: BLE001 - kept for every test that reads this work
            future.set_exception(exc)
    return future.result()


def ahead_of(item: pytest.Item) -> Callable[[], object] | None:
    """The call that makes the work `item` reads, when its module says (AHEAD), else None."""
    which = getattr(getattr(item, "module", None), "AHEAD", {}).get(getattr(item, "originalname", None))
    callspec = getattr(item, "callspec", None)
    return which(callspec.params) if which is not None and callspec is not None else None


_started: list[Future] = []  # the works started ahead, until settle() sees them done


def start_ahead(call: Callable[[], object]) -> None:
    """Run `call` in the background; what it makes is kept by `once`, and what it raises is raised to the test."""
    with _lock:
        _started.append(_ahead.submit(call))


def settle() -> None:
    """Wait until no work started ahead is under way. A test that changes the process (monkeypatch: an environment
    variable, the working folder, a module's attribute) runs alone in it: a run beside it would read what it set (a
    mutant's run found no real clients while tests/conformance/test_real_clients_needed.py hid them)."""
    with _lock:
        started, _started[:] = list(_started), []
    for future in started:
        future.exception()  # done, whatever it raised: that is for the test reading the work
