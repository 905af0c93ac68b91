"""Explain one requirement: where it is specified, checked, implemented and proven by mutants, as `path:line`.

Everything is found by reading files: the registry, the check functions, and the text of the reference server,
its tests and its mutants. The reference server and the tests are never imported: the suite judges the server
as a stranger (tests/test_layering.py), and an installed package has no tests/ at all.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import gns3_copilot_spec as spec
from conformance.reports.voices import citation_of, source_of

# The repository, or the directory an installed package was put in (spec/ and reference_server/ sit side by side).
ROOT = spec.SPEC_DIR.parent
MUTANTS_FILE = "tests/quality/mutants.py"
# The registry module imports its second-generation siblings; every `mutants*.py` file holds mutants.
MUTANTS_GLOB = "mutants*.py"
SERVER_TESTS = "tests/reference_server"
HOSTILE_TESTS = "tests/hostile"  # the reference server's tests under hostile input carry covers() too
CHANNEL_TESTS = "tests/channels"  # the channels' tests, with the protocols' real clients, carry covers() too

# Where each family of rules is implemented and verified; the fake LLM's rules bind the harness, not a server.
AREAS = {
    "FAKELLM": ("fake_llm", "tests/fake_llm"),
    **{family: ("reference_server", CHANNEL_TESTS) for family in ("CHANNEL", "OPENAI", "UI", "AGUI")},
}
DEFAULT_AREA = ("reference_server", SERVER_TESTS)

# An id named as a whole word, optionally continued as a range (`STATS-001..004`, `DB-001..DB-007`) or a list
# (`INPUT-006, -007`). The lookbehind keeps `ORDER-001` from matching inside `STREAM-ORDER-001`.
MENTION = re.compile(
    r"(?<![A-Za-z0-9_-])(?P<prefix>[A-Z]+(?:-[A-Z]+)*)-(?P<first>\d{3})(?![0-9])"
    r"(?P<tail>(?:\s*\.\.\s*(?:(?P=prefix)-)?\d{3}(?![0-9])|,\s*-\d{3}(?![0-9]))*)"
)
TAIL_ITEM = re.compile(r"(\.\.|,)\D*?(\d{3})")

HEADINGS = ("specified", "checked by", "implemented in", "proven by mutants")
LABEL_WIDTH = 120  # a source line fits; longer ones (YAML, Markdown) are cut


class UnknownRequirement(LookupError):
    """An id the registry does not have; the message names the closest ones."""

    def __init__(self, requirement_id: str, closest: list[str]) -> None:
        self.requirement_id = requirement_id
        self.closest = closest
        super().__init__(f"unknown requirement id {requirement_id!r}; closest: {', '.join(closest) or '(none)'}")


@dataclass(frozen=True)
class Location:
    path: str  # relative to ROOT, with forward slashes (absolute when outside ROOT)
    line: int
    label: str = ""  # what is there: a check id, a test name, a mutant, the line's text

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class Explanation:
    id: str
    level: str
    section: str
    capability: str | None
    text: str
    specified: tuple[Location, ...]  # spec/behaviour.md, then spec/requirements.yaml
    checked_by: tuple[Location, ...]  # the function of each check the registry names
    implemented_in: tuple[Location, ...]  # lines of reference_server/ (fake_llm/ for FAKELLM-*) naming the id
    verified_by: tuple[Location, ...]  # tests with @pytest.mark.covers(id) (for FAKELLM-*: tests/fake_llm/ lines)
    mutants: tuple[Location, ...]  # mutants whose targets name the id
    mutant_consequences: tuple[Location, ...]  # mutants that name it only among their consequences
    area: str = "reference_server"  # the folder implemented_in was read from
    missing_checks: tuple[str, ...] = ()  # named by the registry, registered by no check module
    excluded: str | None = None
    retired: str | None = None
    notes: Mapping[str, str] = field(default_factory=dict)  # field name -> why nothing is listed under it
    # Whose rule: "protocol" (the protocol's own text, schema or real client) or "contract" (what ours adds).
    source: str = "contract"
    citation: Mapping[str, str] | None = None  # a protocol rule's {protocol, version, reference}


# --- the registry and the checks ------------------------------------------------------------------------------


@cache
def _records() -> dict[str, dict[str, Any]]:
    return {record["id"]: record for record in spec.load_requirements()["requirements"]}


def _record(requirement_id: str) -> dict[str, Any]:
    records = _records()
    key = requirement_id.strip().upper()
    if key in records:
        return records[key]
    raise UnknownRequirement(requirement_id, difflib.get_close_matches(key, list(records), n=3, cutoff=0.5))


def _relative(path: Path | str) -> str:
    path = Path(path).resolve()
    root = ROOT.resolve()
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)


def _lines(path: Path) -> list[tuple[int, str]]:
    return list(enumerate(path.read_text(encoding="utf-8").splitlines(), start=1))


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= LABEL_WIDTH else text[: LABEL_WIDTH - 3] + "..."


def _specified(requirement_id: str) -> list[Location]:
    rid = re.escape(requirement_id)
    sources = (
        (spec.BEHAVIOUR_PATH, re.compile(rf"^\s*-\s+\*\*{rid}\*\*"), "the rule"),
        (spec.REQUIREMENTS_PATH, re.compile(rf"^\s*-\s+id:\s*['\"]?{rid}['\"]?\s*$"), "its registry record"),
    )
    return [
        Location(_relative(path), number, label)
        for path, pattern, label in sources
        for number, text in _lines(path)
        if pattern.match(text)
    ]


def _checks(record: dict[str, Any]) -> tuple[list[Location], list[str]]:
    from conformance.checks import load_all

    registered = load_all()
    found, missing = [], []
    for check_id in record.get("checks", []):
        if check_id not in registered:
            missing.append(check_id)
            continue
        function = inspect.unwrap(registered[check_id].function)
        _, line = inspect.getsourcelines(function)  # the first decorator's line
        found.append(Location(_relative(inspect.getsourcefile(function)), line, check_id))
    return found, missing


# --- the implementation and its tests, read as text or as an AST -------------------------------------------------
# The cached readers take absolute paths, so that a different ROOT is a different cache entry.


def mentioned_ids(text: str) -> set[str]:
    """The requirement ids a line names, ranges and `X-001, -002` lists expanded."""
    ids = set()
    for match in MENTION.finditer(text):
        prefix, previous = match["prefix"], int(match["first"])
        ids.add(f"{prefix}-{previous:03d}")
        for separator, number in TAIL_ITEM.findall(match["tail"]):
            start = previous + 1 if separator == ".." else int(number)
            ids.update(f"{prefix}-{n:03d}" for n in range(start, int(number) + 1))
            previous = int(number)
    return ids


@cache
def _mentions(folder: Path) -> dict[str, list[Location]]:
    """Requirement id -> the lines of the text files under `folder` that name it."""
    found: dict[str, list[Location]] = {}
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        try:
            lines = _lines(path)
        except UnicodeDecodeError:  # a binary file
            continue
        for number, text in lines:
            for requirement_id in mentioned_ids(text):
                found.setdefault(requirement_id, []).append(Location(_relative(path), number, _clip(text)))
    return found


@cache
def _covers(folder: Path) -> dict[str, list[Location]]:
    """Requirement id -> the tests carrying `@pytest.mark.covers(...)` with it, read as
    tests/reference_server/test_traceability.py reads them."""
    found: dict[str, list[Location]] = {}
    for path in sorted(folder.rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and getattr(decorator.func, "attr", None) == "covers":
                    for argument in decorator.args:
                        location = Location(_relative(path), node.lineno, node.name)
                        found.setdefault(ast.literal_eval(argument), []).append(location)
    return found


@dataclass(frozen=True)
class _Mutant:
    location: Location
    targets: frozenset[str]
    consequences: frozenset[str]


def _literal(node: ast.expr, where: str) -> Any:
    # `set()` and `frozenset({...})` are calls, which literal_eval refuses.
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("set", "frozenset"):
        return set(ast.literal_eval(node.args[0])) if node.args else set()
    try:
        return ast.literal_eval(node)
    except ValueError:
        # Fail loudly rather than leave a mutant out: its claims can only be read when they are literals.
        raise ValueError(f"{where}: a mutant argument is not a literal: {ast.unparse(node)}") from None


@cache
def _mutants(path: Path) -> tuple[_Mutant, ...]:
    """Every `mutant(name, breaks, targets, consequences)` call of the file (decorators, in practice)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "mutant"):
            continue
        where = f"{_relative(path)}:{node.lineno}"
        given = dict(zip(("name", "breaks", "targets", "consequences"), node.args, strict=False))
        # `only` (the areas a mutant's run needs) says nothing about what it breaks, and may name constants.
        given |= {keyword.arg: keyword.value for keyword in node.keywords if keyword.arg != "only"}
        values = {key: _literal(value, where) for key, value in given.items()}
        location = Location(_relative(path), node.lineno, _clip(f"{values['name']}: {values['breaks']}"))
        found.append(_Mutant(location, frozenset(values["targets"]), frozenset(values.get("consequences", ()))))
    return tuple(sorted(found, key=lambda m: m.location.line))


# --- explain and render ---------------------------------------------------------------------------------------


def explain(requirement_id: str) -> Explanation:
    """Where the requirement (id in any case) is specified, checked, implemented and proven; raises
    UnknownRequirement for an id the registry does not have."""
    record = _record(requirement_id)
    rid = record["id"]
    notes: dict[str, str] = {}
    installed_only = "(an installed package has no tests/: they are in the source repository)"

    specified = _specified(rid)
    if not specified:
        notes["specified"] = f"{rid} is not defined in spec/behaviour.md"

    checked_by, missing = _checks(record)
    if "excluded" in record:
        notes["checked_by"] = f"no check: excluded. {record['excluded']}"

    area, tests = AREAS.get(rid.split("-")[0], DEFAULT_AREA)
    implemented_in = _mentions((ROOT / area).resolve()).get(rid, [])
    if not (ROOT / area).is_dir():
        notes["implemented_in"] = f"{area}/ is not installed beside spec/"
    elif not implemented_in:
        notes["implemented_in"] = f"no line of {area}/ names {rid}"

    verified_by: list[Location] = []
    if not (ROOT / tests).is_dir():
        notes["verified_by"] = f"{tests}/ is not here {installed_only}"
    elif tests in (SERVER_TESTS, CHANNEL_TESTS):
        # The reference server's tests carry covers(): its own folder, the hostile inputs, the channels.
        for folder in (SERVER_TESTS, HOSTILE_TESTS, CHANNEL_TESTS):
            if (ROOT / folder).is_dir():
                verified_by = verified_by + _covers((ROOT / folder).resolve()).get(rid, [])
        if not verified_by:
            notes["verified_by"] = f'no test under {tests}/ has covers("{rid}")'
    else:  # the fake LLM's tests carry no covers() marker: the lines that name the id
        verified_by = _mentions((ROOT / tests).resolve()).get(rid, [])
        if not verified_by:
            notes["verified_by"] = f"no test under {tests}/ names {rid}"

    mutants: list[Location] = []
    consequences: list[Location] = []
    if not (ROOT / MUTANTS_FILE).is_file():
        notes["mutants"] = f"{MUTANTS_FILE} is not here {installed_only}"
    else:
        every = tuple(
            found
            for path in sorted((ROOT / MUTANTS_FILE).parent.glob(MUTANTS_GLOB))
            for found in _mutants(path.resolve())
        )
        mutants = [m.location for m in every if rid in m.targets]
        consequences = [m.location for m in every if rid in m.consequences and rid not in m.targets]
        if not mutants:
            notes["mutants"] = "no mutant targets it"

    return Explanation(
        id=rid,
        level=record["level"],
        section=record["section"],
        capability=record.get("capability"),
        text=" ".join(record["text"].split()),
        specified=tuple(specified),
        checked_by=tuple(checked_by),
        implemented_in=tuple(implemented_in),
        verified_by=tuple(verified_by),
        mutants=tuple(mutants),
        mutant_consequences=tuple(consequences),
        area=area,
        missing_checks=tuple(missing),
        excluded=record.get("excluded"),
        retired=record.get("retired"),
        notes=notes,
        source=source_of(record),
        citation=citation_of(record),
    )


def _block(heading: str, locations: tuple[Location, ...], note: str | None, indent: str = "") -> list[str]:
    lines = [f"{indent}{heading}:"]
    width = max((len(str(location)) for location in locations), default=0)
    lines += [f"{indent}  {str(location):<{width}}  {location.label}".rstrip() for location in locations]
    if note:
        lines += textwrap.wrap(note, 116, initial_indent=f"{indent}  ", subsequent_indent=f"{indent}    ")
    return lines


def _source(expl: Explanation) -> list[str]:
    """Whose rule it is, and for the protocol's, the text it cites."""
    if expl.citation is None:
        return [f"source: {expl.source} (what the GNS3 Copilot contract adds; spec/behaviour.md)"]
    cited = expl.citation
    lines = [f"source: {expl.source} (the protocol's own rule)", "citation:"]
    lines += [f"  protocol   {cited['protocol']}", f"  version    {cited['version']}"]
    lines += textwrap.wrap(
        " ".join(cited["reference"].split()), 116, initial_indent="  reference  ", subsequent_indent="             "
    )
    return lines


def render(expl: Explanation) -> str:
    """The explanation as plain text: a heading per kind of location, one `path:line` per line."""
    title = ", ".join(filter(None, [expl.level, expl.section, expl.capability and f"capability {expl.capability}"]))
    lines = [f"{expl.id} ({title})", *textwrap.wrap(expl.text, 116, initial_indent="  ", subsequent_indent="  ")]
    lines += ["", *_source(expl)]
    if expl.retired:
        lines.append(f"  retired: {expl.retired}")
    lines += ["", *_block("specified", expl.specified, expl.notes.get("specified"))]
    lines += _block("checked by", expl.checked_by, expl.notes.get("checked_by"))
    for check_id in expl.missing_checks:
        lines.append(f"  missing  {check_id} (named by the registry, but no check module registers it)")
    lines += _block(f"implemented in {expl.area}/", expl.implemented_in, expl.notes.get("implemented_in"))
    lines += _block("verified by", expl.verified_by, expl.notes.get("verified_by"), indent="  ")
    lines += _block("proven by mutants", expl.mutants, expl.notes.get("mutants"))
    if expl.mutant_consequences:
        lines += _block("fails as a consequence of", expl.mutant_consequences, None, indent="  ")
    return "\n".join(lines) + "\n"
