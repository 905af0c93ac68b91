"""`python -m conformance`: the main job.

The conformance engine (issue #5) is not built yet, so this command only validates the contract in spec/ and
says so. It never reports a server as conforming.
"""

from __future__ import annotations

import sys

import spec
from conformance.contract_check import contract_problems


def main() -> int:
    print(f"GNS3 Copilot Chat API contract {spec.contract_version()}")
    checked, problems = contract_problems()
    for line in checked:
        print(f"  checked: {line}")
    for problem in problems:
        print(f"  PROBLEM: {problem}")
    print(
        "\nNOT RUN: the conformance suite against a server does not exist yet; no implementation was tested."
        "\nThis run validated the contract only."
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
