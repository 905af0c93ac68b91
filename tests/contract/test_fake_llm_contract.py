"""The fake-LLM determinism contract: the script schema is sound and the shipped example scripts follow it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

import gns3_copilot_spec as spec

SCHEMA = spec.FAKE_LLM_DIR / "script.schema.json"
EXAMPLES = sorted((spec.FAKE_LLM_DIR / "examples").glob("*.yaml"))


def errors(script: dict) -> list[str]:
    return [e.message for e in spec.schema_validator(SCHEMA).iter_errors(script)]


def test_schema_is_valid_2020_12():
    Draft202012Validator.check_schema(spec.load_document(SCHEMA))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_scripts_validate_and_are_named_after_their_file(path: Path):
    script = spec.load_document(path)
    assert errors(script) == []
    assert script["name"] == path.stem


def test_default_script_exists():
    assert "default" in {p.stem for p in EXAMPLES}


@pytest.mark.parametrize(
    ("mutation", "message"),
    [
        (lambda s: s["steps"][0].pop("usage"), "'usage' is a required property"),
        (lambda s: s["steps"][0].update(text="typo"), "Additional properties"),
        (lambda s: s["steps"][0].update(usage={"input_tokens": -1, "output_tokens": 0}), "less than the minimum"),
        (lambda s: s.update(name="Bad Name"), "does not match"),
        (lambda s: s.update(steps=[]), "should be non-empty"),
        (lambda s: s["steps"][0].update(fail={"mode": "explode"}), "is not one of"),
    ],
)
def test_bad_scripts_are_rejected(mutation, message):
    script = spec.load_document(spec.FAKE_LLM_DIR / "examples" / "default.yaml")
    mutation(script)
    assert any(message in e for e in errors(script)), errors(script)


def test_tag_pattern_matches_the_documented_forms():
    selection = spec.load_document(spec.FAKE_LLM_DIR / "selection.yaml")
    tag = re.compile(selection["tag_pattern"])
    formatted = selection["tag_format"].format(script="plain", run="r1")
    assert tag.fullmatch(formatted).group("script", "run") == ("plain", "r1")
    assert tag.search("please [[fake-llm:tool-round-trip:run42]] now").group("script", "run") == (
        "tool-round-trip",
        "run42",
    )
    assert tag.search("[[fake-llm:default]]").group("script") == "default"
    assert tag.search("[[fake-llm:Bad]]") is None
