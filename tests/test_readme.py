"""The README stays true: its Python examples run and print what they claim, its commands exist."""

from __future__ import annotations

import ast
import contextlib
import io
import re
from pathlib import Path

import pytest

from tests.quality.runs import SHARES_REFERENCE_RUN, reference_run
from tests.readme import README_PAGES, SECTIONS_RUN_WHOLE, commands, examples

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_python_examples_run_and_print_what_their_comments_say():
    blocks = python_blocks()
    assert blocks
    for block in blocks:
        output = io.StringIO()
        with contextlib.redirect_stdout(output):
            exec(compile(block, "README.md", "exec"), {})
        expected = [m.group(1) for m in re.finditer(r"^print\(.*\)  # (.+)$", block, flags=re.M)]
        assert output.getvalue().splitlines() == expected


def test_the_two_commands_exist_and_ci_runs_the_test_command():
    text = README.read_text()
    assert "python3 tasks.py conformance" in text and "python3 tasks.py test" in text
    ci = (README.parent / ".ci" / "run").read_text()
    assert "python3 tasks.py test" in ci


# Commands no test runs itself, and why that is enough.
RUN_ELSEWHERE = {
    "python3 tasks.py test": ".ci/run runs exactly this (the test above holds it to that)",
}


def claimed_commands() -> dict[str, str]:
    """README command -> the test file that runs it through tests.readme (readme_command / readme_line)."""
    claimed = {}
    for path in (README.parent / "tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) in ("readme_command", "readme_line")
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                claimed[node.args[0].value] = str(path.relative_to(README.parent))
    return claimed


def test_every_readme_command_is_run_by_a_test():
    claimed = claimed_commands()
    for module in SECTIONS_RUN_WHOLE.values():
        assert (README.parent / module).is_file(), module
    unclaimed = [c for c in commands() if c not in claimed and c not in RUN_ELSEWHERE]
    assert unclaimed == [], "run these in a test with tests.readme.readme_command(...) (or readme_line)"
    stale = sorted(c for c in claimed if c not in commands(with_whole_sections=True))
    assert stale == [], "these tests run commands the README no longer shows"


# The SDKs' own READMEs, whose named examples their package tests run (readme_example(fence, <that README>)).
PACKAGE_READMES = [README.parent / "sdk" / "typescript" / "README.md", README.parent / "sdk" / "python" / "README.md"]


def test_every_named_readme_example_is_run_by_a_test():
    """A block fenced ```<language> <name> is run by a test through tests.readme.readme_example("<language> <name>"),
    and one of an SDK's README through readme_example("<language> <name>", <that README>)."""
    claimed, claimed_elsewhere = set(), set()
    for path in (README.parent / "tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "readme_example" and node.args:
                (claimed_elsewhere if len(node.args) > 1 else claimed).add(node.args[0].value)
    assert sorted(set(examples()) - claimed) == [], "run these README examples in a test (readme_example)"
    assert sorted(claimed - set(examples())) == [], "tests run README examples the README no longer shows"
    in_packages = {fence for readme in PACKAGE_READMES for fence in examples(readme)}
    assert sorted(in_packages - claimed_elsewhere) == [], "run these SDK README examples in a test"
    assert sorted(claimed_elsewhere - in_packages) == [], "tests run SDK README examples no SDK README shows"


@pytest.mark.slow  # whole suite runs or servers: left out of --quick
@SHARES_REFERENCE_RUN  # the tests of the built-in run read this run's report
def test_the_readme_main_job_command_runs_the_suite_and_passes():
    """`python3 tasks.py conformance`, as the README shows it, from the repository root (its reports go to
    reports/, as the README says)."""
    main_job = reference_run()
    assert main_job.returncode == 0, main_job.output[-6000:]
    assert "RESULT: PASSED" in main_job.output and "run took" in main_job.output
    assert main_job.report["passed"] and main_job.report["target"]["name"] == "reference-server"


def test_every_readme_page_is_linked_from_the_readme_and_links_back():
    text = README.read_text(encoding="utf-8")
    for page in README_PAGES:
        assert f"](docs/{page.name})" in text, f"the README does not link {page.name}"
        assert "](../README.md)" in page.read_text(encoding="utf-8"), f"{page.name} does not link the README"


def _github_anchor(title: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation but hyphens dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def test_the_contents_link_every_section_and_only_headings_that_exist():
    text = README.read_text(encoding="utf-8")
    outside_code = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    headings = re.findall(r"^(##|###) (.+)$", outside_code, flags=re.M)
    contents = text[text.index("## Contents\n") : text.index("\n## ", text.index("## Contents\n") + 1)]
    linked = dict(re.findall(r"\[(.+?)\]\(#([\w-]+)\)", contents))
    anchors = {_github_anchor(title) for _level, title in headings}
    assert sorted(a for a in linked.values() if a not in anchors) == [], "contents entries with no heading"
    sections = [title for level, title in headings if level == "##" and title != "Contents"]
    assert sorted(set(sections) - set(linked)) == [], "sections the contents leave out"
    assert all(linked[title] == _github_anchor(title) for title in linked)
