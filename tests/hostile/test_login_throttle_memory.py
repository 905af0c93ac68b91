"""The login throttle's memory is bounded whatever unauthenticated clients send (issue 34): it once kept every
distinct username as sent (a login body may carry megabytes) for a minute, 138 MB to 520 MB after 180 requests.
A name is now a 16-byte digest and the table holds at most `max_entries` names."""

from __future__ import annotations

import tracemalloc

from reference_server.controller.security import LoginThrottle

NAMES = 10_000


def _growth(name_size: int, max_entries: int = 100_000) -> tuple[int, int]:
    """(bytes the throttle holds after NAMES distinct failed logins of names of `name_size` characters, entries)."""
    throttle = LoginThrottle(max_failures=10, window_seconds=60.0, clock=lambda: 1000.0, max_entries=max_entries)
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for number in range(NAMES):
            name = f"{number:08d}".ljust(name_size, "x")  # made and dropped: only what the throttle keeps stays
            assert throttle.begin(name) == 0
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    held = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    return held, len(throttle)


def test_ten_thousand_distinct_names_cost_the_same_whatever_their_size():
    small, entries = _growth(10)
    large, _ = _growth(100_000)  # 10 000 names of 100 000 characters: a gigabyte if they were kept
    assert entries == NAMES
    assert large < small * 1.2 + 64_000, (small, large)
    assert large / NAMES < 1_000, f"{large / NAMES:.0f} bytes per name"
    sizes = f"{small / 1e6:.2f} MB (10-character names), {large / 1e6:.2f} MB (100 000)"
    print(f"\n{NAMES} distinct failed logins: {sizes}")


def test_the_table_never_holds_more_than_its_bound():
    held, entries = _growth(50, max_entries=1_000)
    assert entries == 1_000
    bounded, _ = _growth(50)
    assert held < bounded / 5, (held, bounded)


def test_a_name_out_of_its_window_leaves_and_the_throttle_still_throttles():
    now = [0.0]
    throttle = LoginThrottle(max_failures=2, window_seconds=60.0, clock=lambda: now[0])
    assert throttle.begin("alice") == 0 and throttle.begin("alice") == 0
    assert throttle.begin("alice") == 60  # the third within the window waits
    now[0] = 61.0
    assert throttle.begin("bob") == 0 and len(throttle) == 1  # alice's failures left with their window
    assert throttle.begin("alice") == 0
    throttle.succeeded("alice")
    assert len(throttle) == 1
