#!/usr/bin/env python3
"""Derive the official JSON Schemas of the channel protocols into spec/channels/official/, mechanically.

    python3 tools/derive_channel_schemas.py           (re)write every schema
    python3 tools/derive_channel_schemas.py --check   exit 1, naming the stale files, when any differs

The JavaScript packages (npm `ai`, `@ag-ui/core`, pinned in package.json) are read by one `node
tools/derive_channel_schemas.mjs` process; the `openai` Python package (the one installed in .venv) by pydantic's
`TypeAdapter(...).json_schema()` in this process. Every file gets a top-level "$comment" naming the package, its
version and the export it came from, sorted keys, an indent of 2 and a trailing newline.
Run it with the project's virtual environment (.venv/bin/python) or any Python where `openai` is installed; it
re-executes itself with .venv/bin/python when `openai` is missing from the running one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "spec" / "channels" / "official"
NODE_SCRIPT = ROOT / "tools" / "derive_channel_schemas.mjs"
VENV_PYTHON = ROOT / ".venv" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
# What pydantic 2 generates (its documented dialect); pydantic itself writes no "$schema".
PYDANTIC_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def _openai_types() -> dict[str, tuple[str, Any]]:
    """File name -> (the openai export, the type)."""
    from openai.types import Model
    from openai.types.chat import ChatCompletion, ChatCompletionChunk, completion_create_params
    from openai.types.responses import Response, ResponseStreamEvent, response_create_params
    from openai.types.shared import ErrorObject

    return {
        "openai_chat_completion_chunk": ("openai.types.chat.ChatCompletionChunk", ChatCompletionChunk),
        "openai_chat_completion": ("openai.types.chat.ChatCompletion", ChatCompletion),
        "openai_chat_completion_create_params_streaming": (
            "openai.types.chat.completion_create_params.CompletionCreateParamsStreaming",
            completion_create_params.CompletionCreateParamsStreaming,
        ),
        "openai_chat_completion_create_params_non_streaming": (
            "openai.types.chat.completion_create_params.CompletionCreateParamsNonStreaming",
            completion_create_params.CompletionCreateParamsNonStreaming,
        ),
        "openai_response_stream_event": ("openai.types.responses.ResponseStreamEvent", ResponseStreamEvent),
        "openai_response": ("openai.types.responses.Response", Response),
        "openai_response_create_params_streaming": (
            "openai.types.responses.response_create_params.ResponseCreateParamsStreaming",
            response_create_params.ResponseCreateParamsStreaming,
        ),
        "openai_response_create_params_non_streaming": (
            "openai.types.responses.response_create_params.ResponseCreateParamsNonStreaming",
            response_create_params.ResponseCreateParamsNonStreaming,
        ),
        "openai_model": ("openai.types.Model (an item of GET /v1/models)", Model),
        # The object of an error body `{"error": <object>}` (OPENAI-PROTO-006); the envelope is the client's
        # (openai._client.OpenAI._make_status_error reads body["error"]), not a type of the package.
        "openai_error_object": ("openai.types.shared.ErrorObject (the `error` of an error body)", ErrorObject),
    }


def derive_openai() -> dict[str, dict[str, Any]]:
    from pydantic import TypeAdapter

    openai_version, pydantic_version = version("openai"), version("pydantic")
    schemas = {}
    for name, (export, tp) in _openai_types().items():
        schema = TypeAdapter(tp).json_schema(mode="validation")
        schema["$schema"] = PYDANTIC_DIALECT
        schema["$comment"] = (
            f"PyPI openai {openai_version}, {export}, converted by pydantic {pydantic_version} "
            'TypeAdapter(...).json_schema(mode="validation") ("$schema" added: pydantic emits draft 2020-12); '
            "tools/derive_channel_schemas.py"
        )
        schemas[name] = schema
    return schemas


def derive_node() -> dict[str, dict[str, Any]]:
    try:
        result = subprocess.run(
            ["node", str(NODE_SCRIPT)], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
        )
    except FileNotFoundError:
        sys.exit("node was not found on PATH: Node 20 or newer is needed (and `npm ci` at the repository root)")
    if result.returncode != 0:
        sys.exit(f"node {NODE_SCRIPT.relative_to(ROOT)} failed ({result.returncode}):\n{result.stderr}")
    schemas = {}
    for name, entry in json.loads(result.stdout).items():
        schema = entry["schema"]
        schema["$comment"] = entry["comment"]
        schemas[name] = schema
    return schemas


def derive_all() -> dict[str, dict[str, Any]]:
    return {**derive_node(), **derive_openai()}


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def stale(schemas: dict[str, dict[str, Any]]) -> list[str]:
    """The files (relative paths) that differ from `schemas`, are missing, or are left over."""
    expected = {OUT / f"{name}.json": render(schema) for name, schema in schemas.items()}
    problems = [
        str(path.relative_to(ROOT))
        for path, text in expected.items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ]
    leftovers = sorted(set(OUT.glob("*.json")) - set(expected)) if OUT.exists() else []
    return problems + [f"{path.relative_to(ROOT)} (not derived any more)" for path in leftovers]


def write(schemas: dict[str, dict[str, Any]], log: Callable[[str], None] = print) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, schema in schemas.items():
        path = OUT / f"{name}.json"
        text = render(schema)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            log(f"wrote {path.relative_to(ROOT)}")
    for path in set(OUT.glob("*.json")) - {OUT / f"{name}.json" for name in schemas}:
        path.unlink()
        log(f"removed {path.relative_to(ROOT)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 naming the stale files")
    args = parser.parse_args(argv)
    try:
        import openai  # noqa: F401
    except ImportError:
        if VENV_PYTHON.exists() and Path(sys.executable).resolve() != VENV_PYTHON.resolve():
            os.execv(str(VENV_PYTHON), [str(VENV_PYTHON), __file__, *sys.argv[1:]])
        sys.exit("the `openai` package is not installed (python3 tasks.py test creates .venv with it)")
    schemas = derive_all()
    if args.check:
        problems = stale(schemas)
        if problems:
            print("stale official schemas (run python3 tools/derive_channel_schemas.py):", file=sys.stderr)
            for problem in problems:
                print(f"  {problem}", file=sys.stderr)
            return 1
        print(f"{len(schemas)} official schemas up to date")
        return 0
    write(schemas)
    return 0


if __name__ == "__main__":
    sys.exit(main())
