"""The README's shell commands, for the tests that run them: `readme_command("...")` returns the argv of a command
exactly as the README shows it (so the test runs what a reader copies), and fails when the README no longer has it.
tests/test_readme.py checks that every command of the README is claimed this way, or sits in a section that a
test runs whole (SECTIONS_RUN_WHOLE)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
DOCS = README.parent / "docs"
# The README's long reference parts, each on a page of its own that the README links: their commands and examples
# are the README's (claimed and run the same way).
README_PAGES = (
    DOCS / "gns3-server.md",
    DOCS / "peers.md",
    DOCS / "fake-llm.md",
    DOCS / "reference-server.md",
    DOCS / "conformance-suite.md",
)
DOCUMENTS = (README, *README_PAGES)

# Sections whose shell blocks a test runs as a whole, in its own way (a README page: its `# title`).
SECTIONS_RUN_WHOLE = {
    "### Quick start": "tests/reference_server/test_quickstart.py",
    "# The real GNS3 server": "tests/gns3/test_readme_gns3.py",
}


def _sections() -> list[tuple[str, str]]:
    """(heading, text) of every section of the README, at any level, and of every README page as a whole."""
    parts = re.split(r"^(#{2,4} .+)$", README.read_text(encoding="utf-8"), flags=re.M)
    sections = list(zip(parts[1::2], parts[2::2], strict=True))
    for page in README_PAGES:
        title, text = page.read_text(encoding="utf-8").split("\n", 1)
        sections.append((title, text))
    return sections


def page_text(title: str) -> str:
    """The text of the README page titled `# title`."""
    return dict(_sections())[f"# {title}"]


def commands(*, with_whole_sections: bool = False) -> list[str]:
    """Every command line of the README's ```sh blocks: continuation lines joined, the trailing comment and the
    comment-only lines left out."""
    found = []
    for heading, text in _sections():
        if heading in SECTIONS_RUN_WHOLE and not with_whole_sections:
            continue
        for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = re.split(r"\s{2,}#", line)[0].strip()
                if line and not line.startswith("#"):
                    found.append(" ".join(line.split()))
    return found


def readme_line(text: str) -> str:
    """The README command `text` as a shell line (for `bash -c`), after checking the README shows it."""
    assert text in commands(), f"the README shows no command {text!r}; it has: {commands()}"
    return text


def readme_command(text: str) -> list[str]:
    """The argv of the README command `text` (exactly as the README shows it, without its comment)."""
    return shlex.split(readme_line(text))


def examples(readme: Path | None = None) -> dict[str, str]:
    """Named examples: the code of every block of `readme` (the project's README and its pages by default) fenced as
    ```<language> <name> (e.g. ```ts ag-ui), by "<language> <name>". Plain ```python blocks of the project's README
    are run by tests/test_readme.py; a named one needs a live server."""
    text = "\n".join(d.read_text(encoding="utf-8") for d in ([readme] if readme else DOCUMENTS))
    found: dict[str, str] = {}
    for fence, code in re.findall(r"^```(\w+ [\w-]+)\n(.*?)^```", text, flags=re.S | re.M):
        assert fence not in found, f"two README examples are fenced ```{fence}"
        found[fence] = code
    return found


def readme_example(fence: str, readme: Path | None = None) -> str:
    """The code of the example fenced ```<fence> in `readme`, after checking that README shows it."""
    found = examples(readme)
    assert fence in found, f"{(readme or README).name} has no example fenced ```{fence}; it has: {sorted(found)}"
    return found[fence]
