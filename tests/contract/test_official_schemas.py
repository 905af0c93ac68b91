"""The protocols' official schemas (spec/channels/official/) are valid against their own metaschemas: the suite's
validators (conformance/rules/official.py) take them as they are, without checking them again on every run."""

from __future__ import annotations

import pytest
from jsonschema import validators

from conformance.rules import official


@pytest.mark.parametrize("name", official.NAMES)
def test_each_official_schema_is_valid_against_its_metaschema(name):
    document = official.schema(name)
    validators.validator_for(document).check_schema(document)


@pytest.mark.parametrize("name", ["ag_ui_event", "openai_response_stream_event"])
def test_a_union_told_apart_by_type_judges_an_instance_by_its_own_branch_as_the_union_does(name):
    """official.errors picks the branch of an instance's `type` (each branch one constant): the same verdict as the
    whole union, for a valid instance and for one missing a required member."""
    branches = official._branches(name)
    assert branches, "the schema is a union told apart by `type`"
    union = official.validator(name)
    for kind, branch in branches.items():
        bare = {"type": kind}
        assert branch.is_valid(bare) == union.is_valid(bare), kind
        assert (official.errors(name, bare) == []) == union.is_valid(bare), kind


def test_a_union_with_an_unconstrained_type_is_judged_whole():
    """The UI message chunk's `data-*` branch takes any `type`: no instance is judged by one branch alone."""
    assert official._branches("ai_ui_message_chunk") == {}
