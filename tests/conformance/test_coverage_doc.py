"""docs/coverage.md is generated from conformance/coverage.yaml, which must be true: every MUST and SHOULD has
states, and every check it names exists and judges that requirement."""

from __future__ import annotations

from conformance.reports import coverage_doc


def test_the_coverage_file_is_true():
    assert coverage_doc.problems() == []


def test_docs_coverage_md_is_not_stale():
    assert coverage_doc.DEFAULT_OUT.read_text(encoding="utf-8") == coverage_doc.render(), (
        "docs/coverage.md is stale: run `python -m conformance.reports.coverage_doc`"
    )


def test_each_rule_says_how_many_of_the_states_its_text_names_are_judged():
    states = {"a plain turn": "stats.single_turn", "a tool turn": "stats.tool_turn", "gaps": ["a silent tool"]}
    assert coverage_doc.state_counts(states) == (2, 3)
    assert coverage_doc.state_counts({"every stream": "every stream"}) == (1, 1)
    rendered = coverage_doc.render()
    assert "| requirement | judged | state | judged by |" in rendered
    assert " known gap" in rendered.splitlines()[-1] and " states judged; " in rendered
