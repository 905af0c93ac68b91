"""Regenerate everything in generated/ from spec/ (python3 tasks.py generate).

    python tools/generate.py [--output-dir DIR] [--check]

* generated/events/, generated/api/: pydantic v2 models, by datamodel-code-generator, with the flags of the
  `events` and `api` profiles in pyproject.toml.
  The session id has a schema of its own (spec/schemas/session-id.json), hence a model of its own
  (generated/api/session_id.py, `SessionId`).
* generated/openapi-3.1.yaml: the bundled OpenAPI 3.1 copy for SDK generators (tools/derive_openapi31.py).
* generated/constants.py: the constants the contract fixes (spec/constants.yaml: each value, or where in spec/ it is
  written), each with the requirement that fixes it.

--check regenerates into a temporary folder and exits 1, listing the differences, when generated/ is stale.
"""

from __future__ import annotations

import argparse
import difflib
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import gns3_copilot_spec as spec  # noqa: E402
from tools import derive_openapi31  # noqa: E402

PROFILES = ("events", "api")
INIT = '"""Code generated from spec/ by tools/generate.py. Never edit by hand: run `python3 tasks.py generate`."""\n'


def generate(output: Path) -> None:
    # The generator formats with ruff, and ruff reads the nearest pyproject.toml: generating outside the
    # repository, then copying, makes the result the same wherever the output goes.
    with tempfile.TemporaryDirectory() as tmp:
        staging = Path(tmp) / "generated"
        staging.mkdir()
        env = {**os.environ, "RUFF_CACHE_DIR": str(Path(tmp) / "ruff-cache")}
        codegen = Path(sys.executable).with_name("datamodel-codegen")
        for profile in PROFILES:
            subprocess.run(
                # The events reference the session id's schema in spec/schemas/, outside their input folder.
                [str(codegen), "--profile", profile, "--allow-remote-refs", "--output", str(staging / profile)],
                cwd=ROOT,
                env=env,
                check=True,
            )
        (staging / "__init__.py").write_text(INIT)
        (staging / "openapi-3.1.yaml").write_text(derive_openapi31.render(), encoding="utf-8")
        (staging / "constants.py").write_text(render_constants(), encoding="utf-8")
        shutil.rmtree(output, ignore_errors=True)
        shutil.copytree(staging, output)


def _literal(value: object) -> str:
    """Python source of a constant: a string, an integer, or a mapping of them (one item a line)."""
    if isinstance(value, dict):
        items = "".join(f"    {_literal(k)}: {_literal(v)},\n" for k, v in value.items())
        return "{\n" + items + "}"
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise TypeError(f"a constant must be a string, an integer or a mapping of them, not {value!r}")
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else str(value)


def _annotation(value: object) -> str:
    if isinstance(value, dict):
        key, item = (sorted({type(v).__name__ for v in values}) for values in (value.keys(), value.values()))
        return f"Final[Mapping[{' | '.join(key)}, {' | '.join(item)}]]"
    return "Final"


def render_constants() -> str:
    """generated/constants.py: every constant of spec/constants.yaml, with its requirement and its home."""
    errors = [
        e.message
        for e in spec.schema_validator(spec.CONSTANTS_PATH.with_suffix(".schema.json")).iter_errors(
            spec.load_document(spec.CONSTANTS_PATH)
        )
    ]
    if errors:
        raise SystemExit(f"spec/constants.yaml is not valid against spec/constants.schema.json: {errors}")
    lines = [
        '"""Code generated from spec/constants.yaml by tools/generate.py. Never edit by hand: run `python3 tasks.py'
        " generate`.",
        "",
        "The constants the contract fixes, each with the requirement of spec/requirements.yaml that fixes it and its",
        'home in spec/. Mappings are read-only."""',
        "",
        "from __future__ import annotations",
        "",
        "from collections.abc import Mapping",
        "from types import MappingProxyType",
        "from typing import Final",
    ]
    values = spec.constant_values()
    for name, entry in spec.load_constants().items():
        home = f"spec/{entry['at']}" if "at" in entry else "spec/constants.yaml"
        value = values[name]
        literal = _literal(value)
        if isinstance(value, dict):
            literal = f"MappingProxyType({literal})"
        lines += ["", f"# {entry['requirement']}: {entry['description']}", f"# ({home})"]
        lines.append(f"{name}: {_annotation(value)} = {literal}")
    return "\n".join(lines) + "\n"


def differences(expected: Path, actual: Path) -> list[str]:
    """Human-readable differences between two generated trees (files added, removed or changed)."""
    found = []
    expected_files = {
        p.relative_to(expected) for p in expected.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    }
    actual_files = {p.relative_to(actual) for p in actual.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    for missing in sorted(expected_files - actual_files):
        found.append(f"missing from generated/: {missing}")
    for extra in sorted(actual_files - expected_files):
        found.append(f"not produced by the generator (hand-made?): {extra}")
    for common in sorted(expected_files & actual_files):
        if not filecmp.cmp(expected / common, actual / common, shallow=False):
            diff = difflib.unified_diff(
                (actual / common).read_text().splitlines(),
                (expected / common).read_text().splitlines(),
                f"generated/{common}",
                f"regenerated/{common}",
                lineterm="",
                n=1,
            )
            found.append("\n".join(list(diff)[:40]))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output-dir", type=Path, default=ROOT / "generated")
    parser.add_argument("--check", action="store_true", help="fail if generated/ differs from a fresh generation")
    args = parser.parse_args()
    if not args.check:
        generate(args.output_dir)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "generated"
        generate(fresh)
        found = differences(fresh, args.output_dir)
    if found:
        print("generated/ is stale; run `python3 tasks.py generate`:\n" + "\n".join(found))
        return 1
    print("generated/ is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
