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
