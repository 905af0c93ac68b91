"""The fake-LLM scripts the stream benchmark plays, written into a temporary folder of scripts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from fake_llm.scripts import load_script_file
from fake_llm.selection import tag_for

TITLE = {"text_chunks": ["Benchmark"], "usage": {"input_tokens": 10, "output_tokens": 1}}


@dataclass(frozen=True)
class Variant:
    """One scripted answer: `text` (one long answer) or `tool` (a tool call, then the long answer)."""

    name: str
    script: str

    @property
    def message(self) -> str:
        return f"Benchmark turn {tag_for(self.script)}"


VARIANTS = (Variant("text", "bench-long-text"), Variant("tool", "bench-long-tool"))
# The built-in three-chunk answer, run back to back on one connection: what TTFE is between quick turns.
SHORT = Variant("short", "plain")


def _chunks(count: int) -> list[str]:
    return [f"word{i % 1000:03d} " for i in range(count)]


def write_scripts(folder: Path, chunks: int) -> list[Variant]:
    """Write one script per variant (delay 0); each is loaded back once so that a bad script fails here."""
    folder.mkdir(parents=True, exist_ok=True)
    answer = {"text_chunks": _chunks(chunks), "usage": {"input_tokens": 50, "output_tokens": chunks}}
    tool_call = {
        "id": "call_bench_1",
        "name": "get_topology",
        "arguments": {"detail": "summary"},
        "fragment_size": 4,
    }
    documents = {
        "bench-long-text": {"description": "One long answer.", "steps": [answer]},
        "bench-long-tool": {
            "description": "A tool call with streamed arguments, then one long answer.",
            "steps": [{"tool_calls": [tool_call], "usage": {"input_tokens": 50, "output_tokens": 8}}, answer],
        },
    }
    for name, body in documents.items():
        path = folder / f"{name}.yaml"
        path.write_text(yaml.safe_dump({"name": name, **body, "title": TITLE}, sort_keys=False), encoding="utf-8")
        load_script_file(path)
    return list(VARIANTS)
