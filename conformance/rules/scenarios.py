"""The fake-LLM scripts of the suite's scenarios, written for one target (its tool names and arguments).

Each check plays a scenario under its own run id (`[[fake-llm:SCRIPT:RUN]]`), so the fake LLM's request log
tells exactly which generations the target made for that check, and with what usage.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

SCRIPT_TAG = re.compile(r"\[\[fake-llm:([A-Za-z0-9_-]+)")
PLAIN_TEXT = ["The lab ", "looks ", "healthy."]
TITLE = "Conformance check title"
QUOTED_TITLE_REPLY = '  "Quoted\ntitle reply"  '  # made one line and unquoted: Quoted title reply
QUOTED_TITLE_EXPECTED = "Quoted title reply"
UNKNOWN_TOOL = "cs_tool_that_does_not_exist"


def _title(text: str = TITLE, **extra: Any) -> dict[str, Any]:
    return {"text_chunks": [text], "usage": {"input_tokens": 31, "output_tokens": 4}, **extra}


# cs-long-history: a user message, an assistant message of these calls, their results and the answer: 103 messages.
LONG_HISTORY_CALLS = 100


def _call(call_id: str, tool: dict[str, Any], fragment: int = 6) -> dict[str, Any]:
    return {"id": call_id, "name": tool["name"], "arguments": tool["arguments"], "fragment_size": fragment}


def scenario_scripts(tools: dict[str, Any], heartbeat_interval: float) -> dict[str, dict[str, Any]]:
    silence_ms = int((heartbeat_interval * 2.5 + 0.5) * 1000)  # long enough for two heartbeats and more
    scripts: dict[str, dict[str, Any]] = {
        "cs-plain": {
            "steps": [{"text_chunks": PLAIN_TEXT, "usage": {"input_tokens": 21, "output_tokens": 5}}],
            "title": _title(),
        },
        "cs-llm-error": {
            "steps": [
                {
                    "fail": {"mode": "http_status", "status": 500, "message": "scripted failure"},
                    "usage": {"input_tokens": 0, "output_tokens": 0},
                }
            ],
            "title": _title(),
        },
        "cs-mid-stream-error": {
            "steps": [
                {
                    "text_chunks": ["Partial ", "answer"],
                    "usage": {"input_tokens": 17, "output_tokens": 2},
                    "fail": {"mode": "mid_stream", "after_chunks": 1, "message": "scripted reset"},
                }
            ],
            "title": _title(),
        },
        "cs-slow": {
            "steps": [
                {
                    "text_chunks": ["Slow ", "answer."],
                    "delay_before_ms": silence_ms,
                    "usage": {"input_tokens": 13, "output_tokens": 2},
                }
            ],
            "title": _title(),
        },
        "cs-dribble": {
            "steps": [
                {
                    "text_chunks": ["One ", "two ", "three ", "four ", "five."],
                    "delay_between_ms": 700,
                    "usage": {"input_tokens": 19, "output_tokens": 5},
                }
            ],
            "title": _title(),
        },
        "cs-title-fails": {
            "steps": [{"text_chunks": ["Answer."], "usage": {"input_tokens": 11, "output_tokens": 1}}],
            "title": _title("never", fail={"mode": "http_status", "status": 500, "message": "scripted title failure"}),
        },
        "cs-quoted-title": {
            "steps": [{"text_chunks": ["Answer."], "usage": {"input_tokens": 11, "output_tokens": 1}}],
            "title": _title(QUOTED_TITLE_REPLY),
        },
        "cs-tool": {
            "steps": [
                {
                    "tool_calls": [_call("call_cs_1", tools["single"])],
                    "usage": {"input_tokens": 101, "output_tokens": 17},
                },
                {"text_chunks": ["Tool ", "result ", "read."], "usage": {"input_tokens": 163, "output_tokens": 6}},
            ],
            "title": _title(),
        },
    }
    # A turn whose history is longer than the GNS3 history's default limit (HISTORY-006: 100 messages): a user
    # message, a generation of LONG_HISTORY_CALLS calls, their results, the answer (UI-004 reads it back whole).
    scripts["cs-long-history"] = {
        "steps": [
            {
                "tool_calls": [_call(f"call_cs_h{n}", tools["single"], 64) for n in range(LONG_HISTORY_CALLS)],
                "usage": {"input_tokens": 120, "output_tokens": 900},
            },
            {"text_chunks": ["Read ", "them all."], "usage": {"input_tokens": 2400, "output_tokens": 4}},
        ],
        "title": _title(),
    }
    # A call's arguments dribble in, two characters at a time: an abort lands while they still stream, so the call
    # never completes (CHANNEL-009; UI-003's tool-input-error, AG-UI's TOOL_CALL_END before RUN_FINISHED).
    scripts["cs-slow-args"] = {
        "steps": [
            {
                "tool_calls": [_call("call_cs_a1", tools["single"], 2)],
                "delay_between_ms": 400,
                "usage": {"input_tokens": 61, "output_tokens": 12},
            },
            {"text_chunks": ["Read."], "usage": {"input_tokens": 84, "output_tokens": 1}},
        ],
        "title": _title(),
    }
    # Text, then a call, dribbling: a client that goes away at the first words leaves the turn a tool and a generation
    # to make, which a turn that stops on the disconnect never makes (CHANNEL-009).
    scripts["cs-dribble-tool"] = {
        "steps": [
            {
                "text_chunks": ["One ", "two ", "three ", "four."],
                "tool_calls": [_call("call_cs_d1", tools["single"], 64)],
                "delay_between_ms": 800,
                "usage": {"input_tokens": 57, "output_tokens": 14},
            },
            {"text_chunks": ["Done."], "usage": {"input_tokens": 96, "output_tokens": 1}},
        ],
        "title": _title(),
    }
    # The LLM asks for a tool the server does not have: a failing tool like any other (TOOLCALL-008).
    scripts["cs-unknown-tool"] = {
        "steps": [
            {
                "tool_calls": [_call("call_cs_u1", {"name": UNKNOWN_TOOL, "arguments": {"target": "R1"}})],
                "usage": {"input_tokens": 88, "output_tokens": 11},
            },
            {"text_chunks": ["No such ", "tool."], "usage": {"input_tokens": 131, "output_tokens": 4}},
        ],
        "title": _title(),
    }
    if "parallel" in tools:
        first, second = tools["parallel"]
        scripts["cs-parallel"] = {
            "steps": [
                {
                    "text_chunks": ["Checking both."],
                    "tool_calls": [_call("call_cs_p1", first, 7), _call("call_cs_p2", second, 7)],
                    "usage": {"input_tokens": 150, "output_tokens": 40},
                },
                {"text_chunks": ["Both ", "answered."], "usage": {"input_tokens": 260, "output_tokens": 9}},
            ],
            "title": _title(),
        }
    if "failing" in tools:
        scripts["cs-failing-tool"] = {
            "steps": [
                {
                    "tool_calls": [_call("call_cs_f1", tools["failing"])],
                    "usage": {"input_tokens": 90, "output_tokens": 12},
                },
                {"text_chunks": ["The tool ", "failed."], "usage": {"input_tokens": 140, "output_tokens": 8}},
            ],
            "title": _title(),
        }
    if "raising" in tools:  # a tool that raises inside, not one that returns an error: still a failed tool result
        scripts["cs-raising-tool"] = {
            "steps": [
                {
                    "tool_calls": [_call("call_cs_r1", tools["raising"])],
                    "usage": {"input_tokens": 86, "output_tokens": 10},
                },
                {"text_chunks": ["The tool ", "raised."], "usage": {"input_tokens": 137, "output_tokens": 7}},
            ],
            "title": _title(),
        }
    if "slow" in tools:
        scripts["cs-slow-tool"] = {
            "steps": [
                {"tool_calls": [_call("call_cs_s1", tools["slow"])], "usage": {"input_tokens": 70, "output_tokens": 9}},
                {"text_chunks": ["Waited."], "usage": {"input_tokens": 95, "output_tokens": 2}},
            ],
            "title": _title(),
        }
    scripts.update(shape_scripts(tools))
    for name, script in scripts.items():
        script["name"] = name
    return scripts


# The stream shapes real providers send (spec/fake-llm/README.md, "Stream shapes"), each a scenario of its own: the
# same calls and text as cs-tool and cs-parallel, cut otherwise. A server that serves a call's deltas one way only is
# found here; the channels judge them in the protocol's voice, the GNS3 stream and the statistics in the contract's.
TOOL_SHAPES = ["cs-tool-whole", "cs-text-then-tool"]
PARALLEL_SHAPES = ["cs-parallel-one-chunk", "cs-parallel-interleaved"]
USAGE_SHAPES = ["cs-no-usage", "cs-usage-in-finish"]
TEXT_SHAPES = ["cs-empty-deltas", "cs-finish-length"]
SHAPES = TOOL_SHAPES + PARALLEL_SHAPES + USAGE_SHAPES + TEXT_SHAPES
# The turns every stream (the GNS3 one and each channel's) is judged on: each kind of turn, then each shape.
TURNS = ["cs-plain", "cs-tool", "cs-parallel", "cs-failing-tool", "cs-llm-error", "cs-mid-stream-error", *SHAPES]


def _tool_turn(call: dict[str, Any], shape: dict[str, Any], text: list[str] | None = None) -> dict[str, Any]:
    first: dict[str, Any] = {"tool_calls": [call], "usage": {"input_tokens": 97, "output_tokens": 15}}
    if text:
        first = {"text_chunks": text, **first}
    if shape:
        first["stream"] = shape
    answer: dict[str, Any] = {"text_chunks": ["Read ", "it."], "usage": {"input_tokens": 151, "output_tokens": 3}}
    title = _title()
    if shape.get("usage"):  # a usage shape is the model's: every generation of the turn, the title's too
        answer["stream"] = title["stream"] = {"usage": shape["usage"]}
    return {"steps": [first, answer], "title": title}


def shape_scripts(tools: dict[str, Any]) -> dict[str, dict[str, Any]]:
    single = tools["single"]
    scripts = {
        "cs-tool-whole": _tool_turn(_call("call_cs_w1", single), {"tool_calls": "whole"}),
        "cs-text-then-tool": _tool_turn(_call("call_cs_t1", single), {}, ["Let me ", "look first."]),
        "cs-no-usage": _tool_turn(_call("call_cs_n1", single), {"usage": "absent"}),
        "cs-usage-in-finish": _tool_turn(_call("call_cs_i1", single), {"usage": "in_finish_chunk"}),
        "cs-empty-deltas": {
            "steps": [
                {
                    "text_chunks": ["Empty ", "deltas ", "between."],
                    "stream": {"empty_deltas": True},
                    "usage": {"input_tokens": 23, "output_tokens": 4},
                }
            ],
            "title": _title(),
        },
        # A generation cut by its token limit is still the generation's text (the contract has no other meaning).
        "cs-finish-length": {
            "steps": [
                {
                    "text_chunks": ["Cut at ", "the limit"],
                    "stream": {"finish_reason": "length"},
                    "usage": {"input_tokens": 24, "output_tokens": 16},
                }
            ],
            "title": _title(),
        },
    }
    if "parallel" in tools:
        first, second = tools["parallel"]
        for name, cut in (("cs-parallel-one-chunk", "one_chunk"), ("cs-parallel-interleaved", "interleaved")):
            suffix = "o" if cut == "one_chunk" else "x"
            scripts[name] = {
                "steps": [
                    {
                        "tool_calls": [_call(f"call_cs_{suffix}1", first, 5), _call(f"call_cs_{suffix}2", second, 5)],
                        "stream": {"tool_calls": cut},
                        "usage": {"input_tokens": 148, "output_tokens": 38},
                    },
                    {"text_chunks": ["Both ", "answered."], "usage": {"input_tokens": 255, "output_tokens": 9}},
                ],
                "title": _title(),
            }
    return scripts


def write_scripts(folder: Path, tools: dict[str, Any], heartbeat_interval: float) -> dict[str, dict[str, Any]]:
    folder.mkdir(parents=True, exist_ok=True)
    scripts = scenario_scripts(tools, heartbeat_interval)
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's where there is one: written at every run
    for name, script in scripts.items():
        (folder / f"{name}.yaml").write_text(yaml.dump(script, Dumper=dumper, sort_keys=False), encoding="utf-8")
    return scripts


def usage_of(scripts: dict[str, dict[str, Any]], script: str, step: int | None) -> tuple[int, int]:
    """The (input, output) tokens a generation of `script` reports; `step=None` is the title generation."""
    chosen = scripts[script]
    data = chosen["title"] if step is None else chosen["steps"][step]
    if data.get("fail") or (data.get("stream") or {}).get("usage") == "absent":
        return 0, 0  # a failed generation reports no usage, and a generation of the shape `absent` none either
    return data["usage"]["input_tokens"], data["usage"]["output_tokens"]


def scripted_seconds(script: dict[str, Any]) -> float:
    """How long the fake LLM itself waits while playing `script` (every step's and the title's delays)."""
    total_ms = 0
    for step in [*script["steps"], script.get("title") or {}]:
        chunks = len(step.get("text_chunks", []))
        total_ms += step.get("delay_before_ms", 0) + step.get("delay_between_ms", 0) * max(0, chunks - 1)
    return total_ms / 1000


def calls_tool(script: dict[str, Any], name: str) -> int:
    """How many calls of the tool `name` the script makes."""
    return sum(1 for step in script["steps"] for call in step.get("tool_calls", []) if call["name"] == name)


def script_named_in(text: object) -> str | None:
    """The script a message (or a request body holding one) selects with its fake-LLM tag."""
    found = SCRIPT_TAG.search(text) if isinstance(text, str) else None
    return found.group(1) if found else None


def scripts_a_failure(script: dict[str, Any]) -> bool:
    """Whether a turn of `script` is meant to end in an `error` event (a failing generation)."""
    return any(step.get("fail") for step in script["steps"])
