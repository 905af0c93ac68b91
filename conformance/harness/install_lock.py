"""One installer at a time per environment: an exclusive lock on a file beside it, held across processes. The test
command's workers, or a user's two commands, may ask for the same cached environment (a gns3-server release, a
peer) at the same moment; without it, the second would remove and reinstall what the first is installing."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def installing(environment: Path) -> Iterator[None]:
    """Hold `<environment>.lock` while the environment is checked and, if needed, (re)installed."""
    environment.parent.mkdir(parents=True, exist_ok=True)
    with open(environment.with_name(environment.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # waits for another process's install to end
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
