"""`python -m conformance`: the main job, `copilot-conformance run` against the built-in reference server.

It validates the contract in spec/ first (conformance/harness/contract_check.py), then runs the suite and writes the
reports to reports/. Options are those of `run` (`python -m conformance --target FILE --report-dir DIR`); the
other commands work too (`python -m conformance targets`, `python -m conformance requirements`).
"""

from __future__ import annotations

import sys

from conformance.cli import cli, main

PASSED_THROUGH = {"--help", "-h", "--version"}


def arguments(argv: list[str]) -> list[str]:
    """`run` unless the first argument names another command (or asks for the group's help or version)."""
    if argv and (argv[0] in cli.commands or argv[0] in PASSED_THROUGH):
        return argv
    return ["run", *argv]


if __name__ == "__main__":
    main(arguments(sys.argv[1:]), prog_name="python -m conformance")
