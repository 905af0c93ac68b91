"""`python -m tests.third_party`: install, side by side, the third-party servers the full test command judges
(gns3-server's oldest and newest supported releases, every peer), each into its cached, pinned environment under
.cache/. `python3 tasks.py test` starts it in the background at the start of its set-up (its output in
.cache/third-party.log): an install mostly waits on the package registry and unpacking, which overlaps the rest of
the set-up and the first tests. The tests ensure their own server too, waiting for an install under way (one process
at a time per environment, conformance/harness/install_lock.py), so a chosen subset of tests works without this."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from conformance.gns3 import VERSIONS
from conformance.gns3.run import ensure_gns3_venv
from peers import PEERS
from peers.install import ensure

# The release tests/gns3/test_gns3_run.py judges against its baseline: the newest. `python3 tasks.py gns3 --matrix`
# runs every supported release. (The oldest was judged here too; its run cost the test command some 165 CPU-s of a
# two-core machine, a tenth of the whole, for verdicts the matrix keeps.)
TESTED_GNS3_VERSIONS = (VERSIONS[-1],)


def installs() -> dict[str, Callable[[], object]]:
    steps: dict[str, Callable[[], object]] = {}
    for version in TESTED_GNS3_VERSIONS:
        steps[f"gns3-server {version}"] = lambda version=version: ensure_gns3_venv(version)
    for name in sorted(PEERS):
        steps[f"peer {name}"] = lambda name=name: ensure(name)
    return steps


def main() -> int:
    started = time.monotonic()
    steps = installs()
    with ThreadPoolExecutor(max_workers=len(steps)) as pool:
        futures = {name: pool.submit(step) for name, step in steps.items()}
    failed = {name: future.exception() for name, future in futures.items() if future.exception() is not None}
    for name, error in failed.items():
        print(f"could not install {name}: {error}", file=sys.stderr)
    print(f"third-party servers ready ({', '.join(steps)}) in {time.monotonic() - started:.0f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
