"""The four reports of a run, from a synthetic RunResult: every requirement of the registry is in each, the
JUnit file parses, the HTML page is self-contained and escaped, and no secret survives."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from itertools import cycle

import pytest

import gns3_copilot_spec as spec
from conformance.harness.execution import CheckRun
from conformance.harness.findings import Finding, Outcome, RequirementVerdict, Verdict
from conformance.harness.verdicts import RunResult
from conformance.reports import report_data, write_reports
from conformance.reports.console import summary_text
from conformance.reports.model import Redactor

from .test_target_file import minimal

RECORDS = spec.load_requirements()["requirements"]
IDS = [r["id"] for r in RECORDS]

API_KEY = "sk-conformance-main-0123456789abcdef01234567"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjcy1tYWluIn0.c2lnbmF0dXJlLXNpZ25hdHVyZQ"
KEPT_SECRET = "hunter2-kept-by-the-engine"
TARGET_TOKEN = "plain-token-of-main-0042"
OPAQUE_BEARER = "opaqueBearerValue1234"
SECRETS = [API_KEY, JWT, KEPT_SECRET, TARGET_TOKEN, OPAQUE_BEARER]
HOSTILE = "<script>alert('x')</script>"

VERDICTS = [
    Verdict.PASS,
    Verdict.FAIL,
    Verdict.WARN,
    Verdict.XFAIL,
    Verdict.STALE,
    Verdict.NOT_TESTABLE,
    Verdict.ERROR,
    Verdict.NOT_APPLICABLE,
    Verdict.EXCLUDED,
]
OUTCOME = {
    Verdict.FAIL: Outcome.FAILED,
    Verdict.WARN: Outcome.FAILED,
    Verdict.XFAIL: Outcome.FAILED,
    Verdict.STALE: Outcome.PASSED,
    Verdict.NOT_TESTABLE: Outcome.NOT_TESTABLE,
    Verdict.ERROR: Outcome.HARNESS_ERROR,
}


def evidence(status=500, events=None):
    response = {"status": status, "content_type": "application/json", "headers": {"cache-control": "no-cache"}}
    if events:
        response["events"] = events
    else:
        response["body"] = json.dumps({"api_key": API_KEY, "detail": HOSTILE})
    return {
        "request": {
            "method": "POST",
            "url": "http://127.0.0.1:3080/v3/projects/p1/chat/stream",
            "body": json.dumps({"message": "hi", "token": TARGET_TOKEN}),
            "as_user": "main",
        },
        "response": response,
        "reproduction": "curl -sS -N -X POST http://127.0.0.1:3080/v3/projects/p1/chat/stream "
        "-H 'Authorization: Bearer $TOKEN'",
    }


def synthetic_result(records=RECORDS, *, passed=False, harness_error=None) -> RunResult:
    data = minimal()
    data["auth"]["tokens"]["main"] = TARGET_TOKEN
    from conformance.harness.target import parse_target

    target = parse_target(data)
    verdicts = []
    for record, verdict in zip(records, cycle(VERDICTS), strict=False):
        findings = []
        if verdict == Verdict.PASS:
            findings = [Finding(record["id"], Outcome.PASSED, "ok", "x.check", [evidence(200)])]
        elif verdict in OUTCOME:
            message = (
                f"sent a turn, the server answered 500 with Authorization: Bearer {JWT} and {KEPT_SECRET} "
                f"and Bearer {OPAQUE_BEARER} in it; expected 200 {HOSTILE}"
            )
            findings = [
                Finding(record["id"], Outcome.PASSED, "ok", "x.first", [evidence(200)]),
                Finding(
                    record["id"],
                    OUTCOME[verdict],
                    message,
                    "x.check",
                    [evidence(), evidence(200, [{"type": "content", "content": API_KEY}])],
                ),
            ]
        note = {
            Verdict.XFAIL: "known: issue 12",
            Verdict.STALE: "baseline lists it as failing (r), but it is passed",
        }.get(verdict, "")
        if verdict == Verdict.NOT_APPLICABLE:
            note = "capability `abort` not declared"
        if verdict == Verdict.EXCLUDED:
            note = "not observable"
        verdicts.append(RequirementVerdict(record, verdict, findings, note))
    result = RunResult(
        target=target,
        base_url="http://127.0.0.1:3080",
        verdicts=verdicts,
        checks=[CheckRun("x.check", ("FRAME-001",), 1.25, []), CheckRun("x.first", ("FRAME-001",), 0.5, [])],
        wall_time=12.34,
        started_at="2025-01-02T03:04:05Z",
        harness_error=harness_error,
        passed=passed,
    )
    result.secrets = {"LLM API key of main": API_KEY, "something kept": KEPT_SECRET}
    return result


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    directory = tmp_path_factory.mktemp("reports") / "nested" / "dir"
    paths = write_reports(synthetic_result(), directory)
    return {path.name: path for path in paths}, directory


def test_the_four_reports_are_written_in_order(written):
    files, directory = written
    assert list(files) == ["conformance.json", "junit.xml", "report.html", "summary.txt"]
    assert all(path.parent == directory and path.stat().st_size > 0 for path in files.values())


def test_json_holds_the_run_and_every_requirement(written):
    files, _ = written
    data = json.loads(files["conformance.json"].read_text())
    assert [r["id"] for r in data["requirements"]] == IDS
    assert data["contract_version"] == spec.contract_version()
    assert data["target"]["name"] == "my-server"
    assert data["base_url"] == "http://127.0.0.1:3080"
    assert data["started_at"] == "2025-01-02T03:04:05Z"
    assert data["wall_time_seconds"] == 12.34
    assert data["passed"] is False
    expected = {v: sum(1 for _, x in zip(IDS, cycle(VERDICTS), strict=False) if x == v) for v in VERDICTS}
    assert {k: v for k, v in data["counts"].items() if k in expected} == expected
    assert data["counts"][Verdict.NOT_SELECTED] == 0
    by_id = {r["id"]: r for r in data["requirements"]}
    for record in RECORDS:
        entry = by_id[record["id"]]
        assert entry["level"] == record["level"] and entry["section"] == record["section"]
        assert entry["text"] == record["text"] and entry["capability"] == record.get("capability")
        assert entry["checks"] == record.get("checks", [])
    failing = next(r for r in data["requirements"] if r["verdict"] == Verdict.FAIL)
    problem = next(f for f in failing["findings"] if f["outcome"] == Outcome.FAILED)
    assert problem["check"] == "x.check" and problem["message"].startswith("sent a turn")
    assert set(problem["evidence"][0]) == {"request", "response", "reproduction"}
    assert problem["evidence"][0]["reproduction"].startswith("curl ")
    assert failing["message"] == problem["message"]
    assert failing["failing"] is True
    assert data["reports"]["html"].endswith("report.html")


def test_junit_has_one_testcase_per_requirement_by_verdict(written):
    files, _ = written
    root = ET.parse(files["junit.xml"]).getroot()
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == IDS
    by_id = {c.get("name"): c for c in cases}
    verdict_of = dict(zip(IDS, cycle(VERDICTS), strict=False))
    for rid, case in by_id.items():
        verdict = verdict_of[rid]
        record = next(r for r in RECORDS if r["id"] == rid)
        assert case.get("classname") == f"{record['source']}.{record['section']}"  # the voice, then the section
        properties = {p.get("name"): p.get("value") for p in case.find("properties")}
        assert properties["source"] == record["source"]
        children = {child.tag for child in case} - {"properties"}
        if verdict in (Verdict.FAIL, Verdict.STALE, Verdict.NOT_TESTABLE):
            assert children == {"failure"} and case.find("failure").get("type") == verdict
        elif verdict == Verdict.ERROR:
            assert children == {"error"}
        elif verdict in (Verdict.NOT_APPLICABLE, Verdict.EXCLUDED):
            assert children == {"skipped"}
        elif verdict in (Verdict.WARN, Verdict.XFAIL):
            assert children == {"system-out"} and verdict in case.find("system-out").text
        else:
            assert children == set()
    failures = sum(1 for v in verdict_of.values() if v in (Verdict.FAIL, Verdict.STALE, Verdict.NOT_TESTABLE))
    assert suite.get("tests") == str(len(IDS)) and suite.get("failures") == str(failures)
    assert suite.get("errors") == str(sum(1 for v in verdict_of.values() if v == Verdict.ERROR))
    assert suite.get("skipped") == str(
        sum(1 for v in verdict_of.values() if v in (Verdict.NOT_APPLICABLE, Verdict.EXCLUDED))
    )
    failure = next(c for c in cases if verdict_of[c.get("name")] == Verdict.FAIL).find("failure")
    assert "sent a turn" in failure.get("message") and "reproduce: curl" in failure.text


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attributes, self.articles = [], [], {}

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += [(tag, name, value or "") for name, value in attrs]
        attributes = dict(attrs)
        if tag == "article":
            self.articles[attributes["id"]] = attributes["class"].split()


def test_html_is_self_contained(written):
    files, _ = written
    page = files["report.html"].read_text()
    parser = Tags()
    parser.feed(page)
    assert not {"script", "link", "img", "iframe", "object", "embed", "base"} & set(parser.tags)
    assert [a for a in parser.attributes if a[1] in ("src", "srcset", "action", "data")] == []
    assert all(value.startswith("#") for tag, name, value in parser.attributes if name == "href")
    style = page[page.index("<style>") : page.index("</style>")]
    assert "url(" not in style and "@import" not in style
    assert "<style>" in page and "</style>" in page


def test_html_lists_every_requirement_with_its_colour(written):
    files, _ = written
    parser = Tags()
    parser.feed(files["report.html"].read_text())
    assert set(parser.articles) == set(IDS)
    colour = {
        Verdict.PASS: "pass",
        Verdict.FAIL: "fail",
        Verdict.STALE: "fail",
        Verdict.NOT_TESTABLE: "fail",
        Verdict.ERROR: "fail",
        Verdict.WARN: "warn",
    }
    colour |= {Verdict.XFAIL: "xfail", Verdict.NOT_APPLICABLE: "neutral", Verdict.EXCLUDED: "neutral"}
    for rid, verdict in zip(IDS, cycle(VERDICTS), strict=False):
        assert colour[verdict] in parser.articles[rid], (rid, verdict, parser.articles[rid])
        if verdict in (Verdict.NOT_TESTABLE, Verdict.ERROR):
            assert "pass" not in parser.articles[rid]


def test_html_escapes_and_shows_evidence(written):
    files, _ = written
    page = files["report.html"].read_text()
    assert HOSTILE not in page and "&lt;script&gt;" in page
    assert "<details" in page and "<pre>curl -sS" in page
    assert "run took 12.3 s" in page
    assert "FAILED" in page


def test_no_secret_survives_in_any_report(written):
    files, _ = written
    for name, path in files.items():
        text = path.read_text()
        for secret in SECRETS:
            assert secret not in text, (name, secret)
    data = json.loads(files["conformance.json"].read_text())
    failing = next(r for r in data["requirements"] if r["verdict"] == Verdict.FAIL)
    message = next(f for f in failing["findings"] if f["outcome"] == Outcome.FAILED)["message"]
    assert message.count("<redacted>") == 3 and "Bearer <redacted>" in message
    assert "Bearer $TOKEN" in files["conformance.json"].read_text()  # the placeholder of the curl lines stays


def test_summary_text(written):
    files, _ = written
    text = files["summary.txt"].read_text()
    assert "run took 12.3 s" in text and "my-server" in text and "http://127.0.0.1:3080" in text
    assert "RESULT: FAILED" in text
    # summary.txt also holds the evidence of every requirement not met (the requirements' texts name other ids):
    # the console's summary lists each requirement that did not pass, and none that did.
    printed = summary_text(json.loads(files["conformance.json"].read_text()))
    assert set(printed.splitlines()) <= set(text.splitlines())
    for rid, verdict in zip(IDS, cycle(VERDICTS), strict=False):
        # A whole id: LLM-001 is also the tail of FAKELLM-001.
        assert bool(re.search(rf"(?<![A-Z-]){rid}\b", printed)) == (verdict != Verdict.PASS), rid
    for path in files.values():
        assert str(path) in text


def test_requirements_without_a_verdict_are_reported_not_run(tmp_path):
    result = synthetic_result(RECORDS[:5], passed=True)
    paths = write_reports(result, tmp_path)
    data = json.loads(paths[0].read_text())
    assert [r["id"] for r in data["requirements"]] == IDS
    assert {r["verdict"] for r in data["requirements"][5:]} == {Verdict.NOT_SELECTED}
    assert data["counts"][Verdict.NOT_SELECTED] == len(IDS) - 5
    cases = ET.parse(paths[1]).getroot().find("testsuite").findall("testcase")
    assert [c.get("name") for c in cases] == IDS
    assert all(c.find("skipped") is not None for c in cases[5:])
    parser = Tags()
    parser.feed(paths[2].read_text())
    assert set(parser.articles) == set(IDS)


def test_a_harness_error_is_shown(tmp_path):
    result = synthetic_result(harness_error=f"the target did not start: Bearer {JWT}")
    data = report_data(result)
    assert data["harness_error"] == "the target did not start: Bearer <redacted>"
    text = summary_text(data)
    assert "HARNESS ERROR: the target did not start" in text
    page = write_reports(result, tmp_path)[2].read_text()
    assert "Harness error" in page and JWT not in page


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("curl -H 'Authorization: Bearer $TOKEN'", "curl -H 'Authorization: Bearer $TOKEN'"),
        ("starts with `Bearer` then <token>", "starts with `Bearer` then <token>"),
        ("WWW-Authenticate: Bearer realm=chat", "WWW-Authenticate: Bearer realm=chat"),
        ("authorization: bearer abcdefgh12345678", "authorization: bearer <redacted>"),
        ('{"password": "p4ss", "name": "x"}', '{"password": "<redacted>", "name": "x"}'),
        ('{"access_token": "abc.def"}', '{"access_token": "<redacted>"}'),
        ("key sk-abcdefghijklmnop0123 leaked", "key <redacted> leaked"),
        ("task-abcdefghijklmnop0123", "task-abcdefghijklmnop0123"),
        ("input_tokens 12", "input_tokens 12"),
    ],
)
def test_redaction_patterns(text, expected):
    assert Redactor([]).text(text) == expected


def test_known_secrets_are_replaced_longest_first():
    redactor = Redactor(["abcdefgh", "abcdefgh-longer", ""])
    assert redactor.text("x abcdefgh-longer y abcdefgh z") == "x <redacted> y <redacted> z"
    assert redactor.value({"abcdefgh": ["abcdefgh", 3, None]}) == {"abcdefgh": ["<redacted>", 3, None]}


def test_too_short_known_values_are_not_replaced():
    """A target whose tokens are `a` and `b` must not blank every letter a and b of its reports."""
    assert Redactor(["a", "b", "admin"]).text("a bad admin") == "a bad admin"
