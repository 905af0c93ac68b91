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

# Argon2id at its lowest cost (the reference server's own default: about 0.2 s of CPU per hash or login). A run
# provisions and logs in several users, and the test command judges some two hundred variants: the password hashing
# of the real parameters alone cost minutes of CPU. What a variant breaks is never the hashing; the server itself
# keeps its parameters (tests/reference_server judges them).
CHEAP_HASHING = {"time_cost": 1, "memory_cost": 8, "parallelism": 1}


def _cheap_password_hashing() -> None:
    from argon2 import PasswordHasher

    import reference_server.controller.security as security

    security._passwords = PasswordHasher(**CHEAP_HASHING)


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in VARIANTS:
        sys.exit(f"usage: python -m tests.quality.mutant_server NAME [options]; names: {', '.join(sorted(VARIANTS))}")
    _cheap_password_hashing()
    VARIANTS[sys.argv[1]].apply()
    sys.argv = [sys.argv[0], *sys.argv[2:]]
    from reference_server.cli import main as serve

    serve()


if __name__ == "__main__":
    main()
