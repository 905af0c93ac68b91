"""Every report speaks in two voices (issue 29): the protocol violations, each with the protocol text it cites, apart
from the contract deviations; no report format cuts evidence; `--only` shows the selected requirement's own verdict;
and a findings document names no absolute path of the machine that made it."""

from __future__ import annotations

import html as html_text
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import pytest

import gns3_copilot_spec as spec
from conformance.checks.support_channels import record as record_violations
from conformance.harness.execution import CheckRun
from conformance.harness.findings import Finding, Outcome, RequirementVerdict, Verdict
from conformance.harness.target import parse_target
from conformance.harness.verdicts import RunResult
from conformance.reports import findings_doc, html, junit, report_data
from conformance.reports.console import summary_text
from conformance.reports.local_paths import portable
from conformance.reports.voices import with_voices
from conformance.rules.violations import Violation

from .test_target_file import minimal

RECORDS = {r["id"]: r for r in spec.load_requirements()["requirements"]}
PROTOCOL_ID, CONTRACT_ID = "OPENAI-PROTO-002", "OPENAI-001"
VIOLATIONS = [f"OPENAI-PROTO-002 (event {n}): the chunk breaks rule-{n:02d} of ChatCompletionChunk" for n in range(12)]
BODY_END = "END-OF-THE-LONG-BODY"
LONG_BODY = " ".join(f"filler-{n:05d}" for n in range(3000)) + " " + BODY_END  # some 40000 characters
EVENTS = [{"type": "TEXT_MESSAGE_CONTENT", "delta": f"word-{n:03d}"} for n in range(120)]
# An absolute path of a generating machine, as a server's traceback or a target file's place puts it in a run.
BASE_URL = "http://127.0.0.1:3080"
MACHINE_PATHS = ("/tmp/pytest-of-someone/run-7/target.yaml", "/home/someone/venv/lib/python3.11/site-packages/x.py")


def _evidence(body: str | None = None, events: list | None = None) -> dict:
    response = {"status": 200, "content_type": "text/event-stream", "headers": {}}
    if events is not None:
        response["events"] = events
    else:
        response["body"] = body
    return {
        "request": {
            "method": "POST",
            "url": "http://127.0.0.1:3080/v1/chat/completions",
            "body": "{}",
            "as_user": "main",
        },
        "response": response,
        "reproduction": f"curl -sS -N -X POST {BASE_URL}/v1/chat/completions",
    }


def _result(verdicts: list[RequirementVerdict], *, only: list[str] | None = None, path=None) -> RunResult:
    target = parse_target(minimal(), path=path)
    result = RunResult(
        target=target,
        base_url="http://127.0.0.1:3080",
        verdicts=verdicts,
        checks=[CheckRun("channel_openai.chat_stream", (PROTOCOL_ID,), 1.0, [])],
        wall_time=3.0,
        started_at="2026-12-05T00:00:00Z",
        passed=False,
    )
    result.only = list(only or [])
    return result


def _failed(rid: str, message: str, *evidence: dict) -> RequirementVerdict:
    finding = Finding(rid, Outcome.FAILED, message, "channel_openai.chat_stream", list(evidence))
    return RequirementVerdict(RECORDS[rid], Verdict.FAIL, [finding])


@pytest.fixture(scope="module")
def data() -> dict:
    """A protocol requirement failed with twelve violations and long evidence (a body, many events), and a contract
    requirement failed; every other requirement passed."""
    verdicts = [
        _failed(PROTOCOL_ID, "openai_chat: " + "; ".join(VIOLATIONS), _evidence(LONG_BODY), _evidence(events=EVENTS)),
        _failed(CONTRACT_ID, f"openai_chat: {CONTRACT_ID}: `temperature` was refused with 400"),
    ]
    verdicts += [
        RequirementVerdict(r, Verdict.PASS, []) for rid, r in RECORDS.items() if rid not in (PROTOCOL_ID, CONTRACT_ID)
    ]
    return report_data(_result(verdicts))


def test_each_requirement_carries_its_source_and_a_protocol_one_its_citation(data):
    entries = {e["id"]: e for e in data["requirements"]}
    for rid, record in RECORDS.items():
        assert entries[rid]["source"] == record["source"] in ("protocol", "contract")
        if record["source"] == "protocol":
            assert entries[rid]["citation"] == record["citation"]
            assert set(entries[rid]["citation"]) == {"protocol", "version", "reference"}
        else:
            assert entries[rid]["citation"] is None
    protocol, contract = data["by_source"]["protocol"], data["by_source"]["contract"]
    assert (protocol["violations"], protocol["not_met"], protocol["failing"]) == (1, [PROTOCOL_ID], 1)
    assert (contract["deviations"], contract["not_met"], contract["failing"]) == (1, [CONTRACT_ID], 1)
    assert protocol["requirements"] + contract["requirements"] == len(RECORDS)
    assert data["voices"] == "protocol: 1 violation; contract: 1 deviation"


def test_the_console_lists_protocol_violations_apart_from_contract_deviations(data):
    text = summary_text(data)
    protocol, contract = text.index("Protocol violations (1)"), text.index("Contract deviations (1)")
    assert protocol < text.index(PROTOCOL_ID) < contract < text.index(CONTRACT_ID, contract)
    assert PROTOCOL_ID not in text[contract:] and CONTRACT_ID not in text[protocol:contract]
    citation = RECORDS[PROTOCOL_ID]["citation"]
    cited = " ".join(text[protocol:contract].split())
    assert f"cites: {citation['protocol']}, {citation['version']}:" in cited
    assert " ".join(citation["reference"].split()) in cited
    assert "protocol: 1 violation; contract: 1 deviation" in text


def test_quiet_lists_each_failing_requirement_with_its_voice_and_nothing_that_passed(data):
    brief = summary_text(data, brief=True)
    listing = brief[brief.index("failing:\n") : brief.index("RESULT: FAILED")]
    rows = [line.split() for line in listing.splitlines()[1:] if line.strip()]
    expected = {PROTOCOL_ID: ("FAIL", "protocol"), CONTRACT_ID: ("FAIL", "contract")}
    assert {row[0]: (row[1], row[-1]) for row in rows[:2]} == expected
    assert len([row for row in rows if row[0] in RECORDS]) == 2  # no passing requirement listed
    passing = report_data(_result([RequirementVerdict(r, Verdict.PASS, []) for r in RECORDS.values()]))
    assert "failing:" not in summary_text(passing, brief=True)


def test_a_run_without_violations_says_so_in_each_voice():
    verdicts = [RequirementVerdict(r, Verdict.PASS, []) for r in RECORDS.values()]
    data = report_data(_result(verdicts))
    text = summary_text(data)
    assert "Protocol violations: none" in text and "Contract deviations: none" in text
    assert "protocol: 0 violations; contract: 0 deviations" in text
    assert "protocol: 0 violations" in findings_doc.render(data)


def test_junit_names_the_voice_of_each_testcase(data):
    root = ET.fromstring(junit.render(data))
    suite = root.find("testsuite")
    properties = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert properties["voices"] == data["voices"]
    assert (properties["protocol_violations"], properties["contract_deviations"]) == ("1", "1")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    protocol = cases[PROTOCOL_ID]
    assert protocol.get("classname") == "protocol.OpenAI protocol"
    found = {p.get("name"): p.get("value") for p in protocol.find("properties")}
    citation = RECORDS[PROTOCOL_ID]["citation"]
    assert found == {
        "source": "protocol",
        "citation_protocol": citation["protocol"],
        "citation_version": citation["version"],
        "citation_reference": citation["reference"],
    }
    assert "source: protocol (cites OpenAI Chat Completions" in protocol.find("failure").text
    contract = cases[CONTRACT_ID]
    assert contract.get("classname") == "contract.OpenAI channel"
    assert {p.get("name"): p.get("value") for p in contract.find("properties")} == {"source": "contract"}
    assert "(MUST, contract)" in contract.find("failure").get("message")


def test_html_has_a_section_per_voice(data):
    page = html.render(data)
    protocol, contract = page.index('id="protocol-voice"'), page.index('id="contract-voice"')
    sections = page.index('<section id="sec-')
    assert protocol < contract < sections
    assert (
        f'href="#{PROTOCOL_ID}"' in page[protocol:contract] and f'href="#{CONTRACT_ID}"' not in page[protocol:contract]
    )
    assert f'href="#{CONTRACT_ID}"' in page[contract:sections]
    assert "cites: OpenAI Chat Completions" in page[protocol:contract]
    article = page[page.index(f'id="{PROTOCOL_ID}"') :]
    assert '<span class="source protocol">protocol</span>' in article[: article.index("</article>")]
    assert html_text.escape(data["voices"].split("; ")[0]) in page


def test_the_findings_document_leads_with_protocol_violations(data):
    text = findings_doc.render(data)
    protocol, contract = text.index("## Protocol violations"), text.index("## Contract deviations")
    assert protocol < text.index(f"### {PROTOCOL_ID} (") < contract < text.index(f"### {CONTRACT_ID} (")
    citation = RECORDS[PROTOCOL_ID]["citation"]
    assert f"**Source:** protocol. **Cites:** {citation['protocol']}, {citation['version']}:" in text
    assert "**Source:** contract." in text
    assert "**protocol: 1 violation; contract: 1 deviation.**" in text
    # Before any section, a line per protocol violation; the contract's deviations are not in that list.
    glance = text[text.index("The protocol violations, each detailed below:") : protocol]
    assert f"- **{PROTOCOL_ID}** (" in glance and CONTRACT_ID not in glance


def test_no_report_format_cuts_evidence(data, tmp_path):
    """Twelve violations in one finding, a body of some 40000 characters and 120 events: all of it in each format."""
    entry = next(e for e in data["requirements"] if e["id"] == PROTOCOL_ID)
    kept = entry["findings"][0]
    assert kept["evidence"][0]["response"]["body"] == LONG_BODY
    assert kept["evidence"][1]["response"]["events"] == EVENTS
    formats = {
        "console, verbose": summary_text(data, verbose=True),
        "json": json.dumps(data, ensure_ascii=False),
        "junit": junit.render(data).decode("utf-8"),
        "html": html_text.unescape(html.render(data)),
        "findings document": findings_doc.render(data),
    }
    for name, text in formats.items():
        for violation in VIOLATIONS:
            assert violation in text, (name, violation)
        assert LONG_BODY in text, name
        for event in EVENTS:
            assert event["delta"] in text, (name, event)
        assert " more)" not in text and "more characters" not in text and "more events" not in text, name
    # summary.txt is the verbose console: its long lines are neither wrapped nor cropped.
    assert any(
        line.strip().endswith(BODY_END) and LONG_BODY in line for line in formats["console, verbose"].split("\n")
    )
    page = html.render(data)
    assert page.count("<details") >= 2  # the evidence folded, all of it inside
    # The findings document folds a long block in <details>, whole.
    assert f"{BODY_END}\n```\n\n</details>" in formats["findings document"]


def test_only_shows_the_selected_requirements_own_verdict():
    passed = Finding("TITLE-003", Outcome.PASSED, "ok", "titles.sticky_after_rename")
    result = _result([RequirementVerdict(RECORDS["TITLE-003"], Verdict.PASS, [passed])], only=["TITLE-003"])
    data = report_data(result)
    text = summary_text(data)
    assert "Selected (--only TITLE-003)" in text
    row = next(line for line in text.splitlines() if line.strip().startswith("TITLE-003"))
    assert row.split()[:4] == ["TITLE-003", "contract", "MUST", "PASS"]
    assert "Requirements per section" not in text  # no table of NOT SELECTED in its place
    assert f"{len(RECORDS) - 1 - data['counts']['EXCLUDED']} requirements NOT SELECTED (--only)" in text


def test_a_findings_document_names_no_absolute_path_of_the_machine(tmp_path):
    repository = spec.SPEC_DIR.parent
    target_file = repository / "peers" / "targets" / "x.yaml"
    message = f"the server failed: File {MACHINE_PATHS[0]}, File {MACHINE_PATHS[1]}, File {repository}/.cache/y.py"
    result = _result([_failed(CONTRACT_ID, message, _evidence(f"Traceback: {MACHINE_PATHS[0]}"))], path=target_file)
    result.seed = 7
    text = findings_doc.render(report_data(result))
    assert "--target peers/targets/x.yaml --only OPENAI-001 --seed 7" in text
    assert "File $TMPDIR/pytest-of-someone/run-7/target.yaml" in text
    assert "File <site-packages>/x.py" in text and "File .cache/y.py" in text
    absolute = re.compile(r"(?<![\w.:/~-])/(?:tmp|home|root|Users|work|var|private|opt|usr|mnt)/")
    assert not absolute.search(text), absolute.search(text)
    assert str(repository) not in text and str(tmp_path) not in text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "POST http://127.0.0.1:3080/v3/projects/p1/chat/stream",
            "POST http://127.0.0.1:3080/v3/projects/p1/chat/stream",
        ),
        ("served at '/v1', not '/work'", "served at '/v1', not '<work>'"),
        ('{"file": "/root/.cache/x"}', '{"file": "~/.cache/x"}'),
        ("/private/var/tmp/a and /var/folders/ab/cd/T/b", "$TMPDIR/a and $TMPDIR/b"),
    ],
)
def test_local_paths_are_made_portable(text, expected):
    assert portable(text) == expected


def test_the_repository_is_made_relative_wherever_it_sits():
    """A CI runner cloned the repository under /check/work/main, a first folder no pattern knows: the findings
    document kept its absolute target path in the reproduce command."""
    root = Path("/check/work/main")
    text = "--target /check/work/main/peers/targets/x.yaml; File /check/work/main/.cache/y.py; in /check/work/main."
    assert portable(text, root) == "--target peers/targets/x.yaml; File .cache/y.py; in .."
    assert portable("/check/work/main-old/x", root) == "/check/work/main-old/x"  # another folder, not the root


def test_a_conformance_json_written_before_the_two_voices_gets_them_from_the_registry(data):
    old = json.loads(json.dumps(data))
    for entry in old["requirements"]:
        del entry["source"], entry["citation"]
    del old["by_source"], old["voices"]
    again = with_voices(old)
    assert again["by_source"] == data["by_source"] and again["voices"] == data["voices"]
    assert [e["source"] for e in again["requirements"]] == [e["source"] for e in data["requirements"]]
    assert findings_doc.render(old) == findings_doc.render(data)


def test_a_channel_check_records_every_violation_of_a_requirement():
    """support_channels.record once kept four violations and said "and N more"; the reports now show all."""
    recorded = []
    ctx = SimpleNamespace(findings=SimpleNamespace(expect=lambda *args: recorded.append(args)))
    exchange = SimpleNamespace(request_body='{"messages": [{"content": "Hi [[fake-llm:cs-plain:r1]]"}]}')
    answer = SimpleNamespace(endpoint=SimpleNamespace(name="openai_chat"), exchange=exchange)
    violations = [Violation(PROTOCOL_ID, f"problem number {n}") for n in range(12)]
    record_violations(ctx, violations, answer, {PROTOCOL_ID, CONTRACT_ID})
    by_rule = {args[0]: args for args in recorded}
    requirement, ok, message, exchange = by_rule[PROTOCOL_ID]
    assert not ok and exchange is answer.exchange and "more" not in message
    assert message.startswith("openai_chat (cs-plain): ")  # the turn's scenario, named by its fake-LLM tag
    assert all(str(violation) in message for violation in violations)
    assert by_rule[CONTRACT_ID][1] is True
