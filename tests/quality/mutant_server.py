"""`python -m tests.quality.mutant_server NAME [reference server options]`: the reference server with one
mutant of tests/quality/mutants.py (or a variant of answer_breakers.py, flaky_servers.py or
scenario_preventers.py) applied, for the conformance
suite to judge over HTTP."""

from __future__ import annotations

import sys

from tests.quality.answer_breakers import BREAKERS
from tests.quality.flaky_servers import FLAKY_SERVERS
from tests.quality.mutants import MUTANTS
from tests.quality.scenario_preventers import PREVENTERS

VARIANTS = {**MUTANTS, **BREAKERS, **FLAKY_SERVERS, **PREVENTERS}


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in VARIANTS:
        sys.exit(f"usage: python -m tests.quality.mutant_server NAME [options]; names: {', '.join(sorted(VARIANTS))}")
    VARIANTS[sys.argv[1]].apply()
    sys.argv = [sys.argv[0], *sys.argv[2:]]
    from reference_server.cli import main as serve

    serve()


if __name__ == "__main__":
    main()
