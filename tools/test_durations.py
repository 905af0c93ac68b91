"""Where the test command's time goes: the table of tests/README.md, from the JUnit XML that `python3 tasks.py test`
writes (.cache/tests.xml). Each test's time is its set-up, call and tear-down, summed per folder of tests/; the
workers run side by side, so the sum is more than the command's wall time.

    python tools/test_durations.py [.cache/tests.xml]            print the table
    python tools/test_durations.py --write [.cache/tests.xml]    write tests/durations.json (each test's seconds),
                                                                 by which the test command hands out its work
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / ".cache" / "tests.xml"
DURATIONS = ROOT / "tests" / "durations.json"


def test_seconds(path: Path) -> dict[str, float]:
    """`classname::name` -> seconds, for every test of the report (an xdist group's `@name` suffix left out)."""
    return {
        f"{case.get('classname')}::{case.get('name', '').split('@')[0]}": round(float(case.get("time", 0)), 2)
        for case in ET.parse(path).getroot().iter("testcase")
    }


def part_of(classname: str) -> str:
    """`tests.quality.test_mutants` -> `tests/quality/`; a module at the root of tests/ is its own part."""
    pieces = classname.split(".")
    return "/".join(pieces[:2]) + "/" if len(pieces) > 2 else "/".join(pieces[:2]) + ".py"


def table(path: Path) -> str:
    seconds: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    slowest: dict[str, tuple[float, str]] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        part, took = part_of(case.get("classname", "")), float(case.get("time", 0))
        seconds[part] += took
        counts[part] += 1
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name', '').split('@')[0]}"
        if took > slowest.get(part, (-1.0, ""))[0]:
            slowest[part] = (took, name)
    total = sum(seconds.values())
    lines = [
        "| part | tests | seconds | share | slowest test |",
        "|---|---:|---:|---:|---|",
    ]
    for part in sorted(seconds, key=seconds.get, reverse=True):
        took, name = slowest[part]
        share = seconds[part] / total
        lines.append(f"| `{part}` | {counts[part]} | {seconds[part]:.0f} | {share:.0%} | `{name}` ({took:.0f} s) |")
    lines.append(f"| all | {sum(counts.values())} | {total:.0f} | 100% | |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    write = "--write" in argv
    paths = [a for a in argv if a != "--write"]
    path = Path(paths[0]) if paths else DEFAULT
    if not path.exists():
        print(f"{path} does not exist: run `python3 tasks.py test` first, which writes it", file=sys.stderr)
        return 2
    if write:
        DURATIONS.write_text(json.dumps(test_seconds(path), indent=0, sort_keys=True) + "\n")
        print(f"wrote {DURATIONS.relative_to(ROOT)}")
    else:
        print(table(path))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
