"""`--only`: requirement ids, areas and check ids, several at once, select exactly the checks that judge them; the
reports mark every other requirement NOT SELECTED; a selector that names nothing is a usage error."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import gns3_copilot_spec as spec
from conformance.checks import AREAS, SelectionError, load_all, select
from tests.readme import readme_command

ROOT = Path(__file__).resolve().parents[2]
RECORDS = {r["id"]: r for r in spec.load_requirements()["requirements"]}


def ids(*selectors: str) -> list[str]:
    return [c.id for c in select(list(selectors))]


def test_a_requirement_id_selects_the_checks_that_judge_it():
    for rid, record in RECORDS.items():
        if "excluded" not in record:
            assert set(ids(rid)) == set(record["checks"]), rid
            assert ids(rid.lower()) == ids(rid)  # ids are not case-sensitive


def test_an_area_selects_its_checks_and_a_check_id_itself():
    excluded = {"fake_llm"}  # the rules of the harness: no checks
    for area in set(AREAS.values()) - excluded:
        assert ids(area) == [c for c in load_all() if c.split(".")[0] == area]
    for area in excluded:
        with pytest.raises(SelectionError, match=f"the area {area} has no checks"):
            select([area])  # the rules of the harness: excluded
    assert ids("stats.multi_turn") == ["stats.multi_turn"]
    assert ids("titles.once") == ["titles.once"]  # not titles.once_... : ids are matched whole, or up to a dot
    assert ids("framing.") == ids("framing")


def test_several_selectors_at_once_and_commas_mean_the_union_in_registry_order():
    union = ids("TITLE-003", "stats.multi_turn")
    assert union == ids("TITLE-003,stats.multi_turn") == ids("stats.multi_turn", "TITLE-003")
    assert set(union) == set(ids("TITLE-003")) | {"stats.multi_turn"}
    assert union == [c for c in load_all() if c in union]
    assert len(ids()) == len(load_all())  # no selector: every check


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("TITLE-03", "did you mean TITLE-003"),
        ("stat", "no requirement id, area or check id of that name"),
        ("TITLE-005", "TITLE-005 is excluded from the suite"),
    ],
)
def test_a_selector_that_names_no_check_is_refused_with_the_closest_names(selector, message):
    with pytest.raises(SelectionError, match=message):
        select([selector])


@pytest.mark.slow  # whole suite runs or servers: left out of --quick
def test_the_readme_selection_runs_only_those_checks(tmp_path):
    command = readme_command(".venv/bin/copilot-conformance run --only TITLE-003 stats.multi_turn")
    completed = subprocess.run(
        [str(ROOT / command[0]), *command[1:], "-q", "--report-dir", "reports"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    data = json.loads((tmp_path / "reports" / "conformance.json").read_text())
    assert data["only"] == ["TITLE-003", "stats.multi_turn"]
    # TITLE-003 is judged by its own check and by the session-states table (a title overwritten after a turn)
    selected = sorted(c["id"] for c in data["checks"])
    assert selected == ["sessions.states", "sessions.states_running", "stats.multi_turn", "titles.sticky_after_rename"]
    verdicts = {r["id"]: r["verdict"] for r in data["requirements"]}
    judged = {rid for rid in verdicts if verdicts[rid] not in ("NOT SELECTED", "EXCLUDED")}
    assert "TITLE-003" in judged and judged <= {r for c in data["checks"] for r in c["requirements"]}
    assert all(verdicts[rid] == "PASS" for rid in judged)
    unselected = [rid for rid, v in verdicts.items() if v == "NOT SELECTED"]
    assert len(unselected) == len(RECORDS) - len(judged) - data["counts"]["EXCLUDED"]
    note = next(r["note"] for r in data["requirements"] if r["verdict"] == "NOT SELECTED")
    assert "not selected" in note
    suite = ET.parse(tmp_path / "reports" / "junit.xml").getroot().find("testsuite")
    properties = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert properties["only"] == "TITLE-003 stats.multi_turn" and properties["seed"] == str(data["seed"])
    skipped = [c for c in suite.findall("testcase") if c.find("skipped") is not None]
    assert len(skipped) == len(unselected) + data["counts"]["EXCLUDED"]
