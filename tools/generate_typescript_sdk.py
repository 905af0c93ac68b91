#!/usr/bin/env python3
"""Generate the TypeScript SDK's client code (sdk/typescript/src/generated/) from the contract.

    python3 tools/generate_typescript_sdk.py                  regenerate sdk/typescript/src/generated/
    python3 tools/generate_typescript_sdk.py --check          exit 1, listing the differing files, when it is stale
    python3 tools/generate_typescript_sdk.py --input X.yaml   from this OpenAPI 3.1 document instead

`python3 tasks.py sdk` runs it (and the Python SDK's generator). The generator is @hey-api/openapi-ts, pinned in
package.json with the TypeScript it works with, run from the repository's node_modules/ with
sdk/typescript/openapi-ts.config.ts. Its input is the OpenAPI 3.1 copy of the contract derived afresh from spec/
by tools/derive_openapi31.py (what `python3 tasks.py generate` writes to generated/openapi-3.1.yaml), so the SDK
follows spec/ even before generated/ is regenerated, and --check fails as soon as spec/ changes. The output carries
no timestamp or version: the same input gives the same files. The hand-written facade (src/index.ts, errors.ts,
streams.ts) is not touched.
"""

from __future__ import annotations

import argparse
import difflib
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools import derive_openapi31  # noqa: E402

SDK_DIR = ROOT / "sdk" / "typescript"
OUTPUT = SDK_DIR / "src" / "generated"
CONFIG = SDK_DIR / "openapi-ts.config.ts"
OPENAPI_TS = ROOT / "node_modules" / ".bin" / "openapi-ts"


def generate(output: Path, source: Path | None = None) -> None:
    """Run openapi-ts with the SDK's configuration, reading `source` (default: a fresh derivation) into `output`."""
    if not OPENAPI_TS.exists():
        raise SystemExit(f"{OPENAPI_TS.relative_to(ROOT)} is missing: run `npm ci` (python3 tasks.py sdk does)")
    with tempfile.TemporaryDirectory() as tmp:
        if source is None:
            source = Path(tmp) / "openapi-3.1.yaml"
            source.write_text(derive_openapi31.render(), encoding="utf-8")
        # openapi-ts cleans its output folder: generate apart, then swap, so a failed run leaves the SDK whole.
        staging = Path(tmp) / "generated"
        env = {**os.environ, "COPILOT_SDK_INPUT": str(source.resolve()), "COPILOT_SDK_OUTPUT": str(staging)}
        completed = subprocess.run(
            [str(OPENAPI_TS), "--file", str(CONFIG)], cwd=SDK_DIR, env=env, capture_output=True, text=True
        )
        if completed.returncode != 0 or not (staging / "sdk.gen.ts").exists():
            raise SystemExit(f"openapi-ts failed ({completed.returncode}):\n{completed.stdout}\n{completed.stderr}")
        shutil.rmtree(output, ignore_errors=True)
        shutil.copytree(staging, output)


def differences(expected: Path, actual: Path) -> list[str]:
    """The files that differ between a fresh generation and the SDK's, with the start of each diff."""

    def files(folder: Path) -> set[Path]:
        return {p.relative_to(folder) for p in folder.rglob("*") if p.is_file()} if folder.exists() else set()

    fresh, current = files(expected), files(actual)
    found = [f"missing from the SDK: {name}" for name in sorted(fresh - current)]
    found += [f"not produced by the generator: {name}" for name in sorted(current - fresh)]
    for name in sorted(fresh & current):
        if not filecmp.cmp(expected / name, actual / name, shallow=False):
            diff = difflib.unified_diff(
                (actual / name).read_text(encoding="utf-8").splitlines(),
                (expected / name).read_text(encoding="utf-8").splitlines(),
                f"sdk/typescript/src/generated/{name}",
                f"regenerated/{name}",
                lineterm="",
                n=1,
            )
            found.append(f"differs: {name}\n" + "\n".join(list(diff)[:30]))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when the SDK is stale")
    parser.add_argument("--input", type=Path, help="an OpenAPI 3.1 document (default: derived afresh from spec/)")
    args = parser.parse_args(argv)
    if not args.check:
        generate(OUTPUT, args.input)
        print(f"regenerated {OUTPUT.relative_to(ROOT)}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "generated"
        generate(fresh, args.input)
        found = differences(fresh, OUTPUT)
    if found:
        print("the TypeScript SDK is stale; run `python3 tasks.py sdk`:\n" + "\n".join(found))
        return 1
    print("the TypeScript SDK is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
