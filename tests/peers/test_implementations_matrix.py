"""docs/implementations.md, every judged implementation side by side (peers/matrix.py): the committed page is what
its committed verdicts (docs/implementations.json) render, it holds every peer and every rule of the channels they
serve, each in its own voice, its verdicts are those the peers' baselines accept, and the README's commands that
write it work. Fast: nothing is installed or started (the runs themselves are tests/peers/test_peer_runs.py's)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import yaml

import gns3_copilot_spec as spec
from peers import PEERS, REPO
from peers.matrix import (
    CHANNELS,
    EVERY_CHANNEL,
    MATRIX_DOC,
    MATRIX_VERDICTS,
    _anchor,
    collect,
    render_matrix,
    served_channels,
    write_matrix,
)
from peers.run import main
from tests.readme import readme_command

REBUILD = "rebuild: python3 tasks.py peers --matrix (or --matrix --doc-only from fresh reports)"
RULES = {r["id"]: r for r in spec.load_requirements()["requirements"] if not r.get("retired")}


@pytest.fixture(scope="module")
def committed() -> dict:
    return json.loads(MATRIX_VERDICTS.read_text(encoding="utf-8"))


def _part(text: str, heading: str) -> str:
    """The text of the section `heading` (a `### ` heading), up to the next heading of its level or above."""
    return re.split(r"^#{1,3} ", text.split(f"\n{heading}\n", 1)[1], flags=re.M)[0]


def _rows(section: str) -> dict[str, list[str]]:
    """rule -> its cells, of the one table in `section`."""
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines() if line.startswith("| ")]
    return {row[0]: row[2:] for row in cells[1:]}


def test_the_committed_page_is_what_its_verdicts_render(committed):
    assert MATRIX_DOC.read_text(encoding="utf-8") == render_matrix(committed), REBUILD


def test_every_peer_is_there_with_what_it_serves(committed):
    assert list(committed["implementations"]) == list(PEERS), REBUILD
    for name, peer in PEERS.items():
        impl = committed["implementations"][name]
        assert (impl["target"], impl["version"]) == (peer.target, peer.version)
        assert impl["channels"] == served_channels(peer) and impl["channels"], name
        assert impl["profile"] == "contract", f"{name}: the page needs both voices judged"


def test_every_rule_of_a_served_channel_has_its_row_in_its_voice(committed):
    """Each protocol rule of a channel some peer serves is a row of that channel's table in the protocols' part, a
    verdict in every serving peer's column; the contract's rules only in the contract's part, never the other way."""
    text = MATRIX_DOC.read_text(encoding="utf-8")
    protocols = text.split("\n## The protocols' own rules\n")[1]
    protocols, additions = protocols.split("\n## This contract's additions (not the protocols' rules)\n")
    for key, title, prefix in CHANNELS:
        serving = [name for name, impl in committed["implementations"].items() if key in impl["channels"]]
        for source, part, heading in (
            ("protocol", protocols, f"### {title}"),
            ("contract", additions, f"### {title} (this contract's rules)"),
        ):
            rows = _rows(_part(part, heading))
            expected = {rid for rid, r in RULES.items() if r["source"] == source and rid.split("-")[0] == prefix}
            assert set(rows) == (expected if serving else set()), (title, source, REBUILD)
            for rid in expected if serving else ():
                assert all(rid in committed["implementations"][name]["verdicts"] for name in serving), rid
                assert all(cell != "-" for cell in rows[rid]), (rid, "a peer's report predates the rule", REBUILD)
    every = _rows(_part(additions, "### Every channel (this contract's rules)"))
    assert set(every) == {rid for rid in RULES if rid.split("-")[0] == EVERY_CHANNEL}
    assert "deviates" not in protocols and "FAIL (" not in additions  # each voice names its own findings


def test_the_verdicts_are_what_each_baseline_accepts(committed):
    """An XFAIL is a known failure of the peer's baseline, every known failure is an XFAIL, and nothing fails."""
    for name, peer in PEERS.items():
        impl = committed["implementations"][name]
        baseline = yaml.safe_load((REPO / "peers" / "baselines" / f"{peer.target}.yaml").read_text(encoding="utf-8"))
        known = set(baseline["known_failures"])
        xfail = {rid for rid, verdict in impl["verdicts"].items() if verdict == "XFAIL"}
        assert xfail == known, (name, sorted(xfail ^ known), REBUILD)
        assert impl["passed"], name
        assert not {"FAIL", "STALE", "ERROR", "FLAKY"} & set(impl["verdicts"].values()), name
        for source, noun in (("protocol", "violations"), ("contract", "deviations")):
            mine = {rid for rid in xfail if RULES[rid]["source"] == source}
            assert impl["voices"][source][noun] == len(mine), (name, source)


def test_each_finding_links_its_section_of_the_findings_document():
    text = MATRIX_DOC.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([\w.-]+\.md)#([\w-]+)\)", text)
    assert links
    for document, anchor in set(links):
        headings = re.findall(r"^#{1,6} .+$", (REPO / "docs" / document).read_text(encoding="utf-8"), flags=re.M)
        assert anchor in {_anchor(h) for h in headings}, f"docs/{document} has no section #{anchor}: {REBUILD}"


def test_a_new_failure_and_a_missing_verdict_are_told_apart_from_known_ones(committed):
    data = json.loads(json.dumps(committed))
    impls = data["implementations"]
    name = next(n for n, i in impls.items() if "XFAIL" in i["verdicts"].values())
    rid = next(r for r, v in impls[name]["verdicts"].items() if v == "XFAIL")
    impls[name]["verdicts"][rid] = "FAIL"
    gone = next(r for r, v in impls[name]["verdicts"].items() if v == "PASS")
    del impls[name]["verdicts"][gone]
    rows = {line.split(" | ")[0][2:]: line for line in render_matrix(data).splitlines() if line.startswith("| ")}
    assert ("**FAIL (new)**" if RULES[rid]["source"] == "protocol" else "**deviates (new)**") in rows[rid]
    assert " | - |" in rows[gone] or rows[gone].endswith(" | - |")


def test_without_reports_the_committed_verdicts_give_the_committed_page(tmp_path):
    """A fresh clone has no reports/: the rebuild keeps every peer's committed verdicts, byte for byte."""
    data, kept = collect(tmp_path / "no-reports")
    assert kept == list(PEERS)
    assert render_matrix(data) == MATRIX_DOC.read_text(encoding="utf-8")
    with pytest.raises(FileNotFoundError):
        collect(tmp_path / "no-reports", committed=None)


def test_a_rebuild_gives_the_same_bytes_and_no_date(tmp_path):
    out = tmp_path / "page.md"
    write_matrix(REPO / "reports", out)
    first, verdicts = out.read_bytes(), out.with_suffix(".json").read_bytes()
    write_matrix(REPO / "reports", out)
    assert out.read_bytes() == first and out.with_suffix(".json").read_bytes() == verdicts
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:", first.decode() + verdicts.decode())  # no run time
    assert "started_at" not in verdicts.decode() and "wall_time" not in verdicts.decode()
    assert first.decode() == render_matrix(json.loads(verdicts))


def test_the_readme_doc_only_command_rebuilds_the_page(tmp_path, committed):
    """`python3 tasks.py peers --matrix --doc-only`, as the README shows it, into a folder of the test's (`--doc`):
    through `python -m peers.run`, which tasks.py hands these arguments to after installing the peers (which this
    fast test leaves to the slow ones)."""
    args = readme_command("python3 tasks.py peers --matrix --doc-only")[3:]
    out = tmp_path / "implementations.md"
    completed = subprocess.run(
        [sys.executable, "-m", "peers.run", *args, "--doc", str(out)], cwd=REPO, capture_output=True, text=True
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    rebuilt = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert out.read_text(encoding="utf-8") == render_matrix(rebuilt)
    if rebuilt == committed:  # reports absent, or those the page was made from: the committed page comes out
        assert out.read_text(encoding="utf-8") == MATRIX_DOC.read_text(encoding="utf-8")


def test_the_readme_matrix_command_is_accepted():
    """`python3 tasks.py peers --matrix` runs every peer (minutes, tests/peers/test_peer_runs.py runs each): parsed
    here with the runner's own options; the refusals that keep the page whole are checked."""
    context = main.make_context("run", readme_command("python3 tasks.py peers --matrix")[3:])
    assert context.params["matrix"] and not context.params["doc_only"] and not context.params["names"]
    for wrong in (["--doc-only"], ["--matrix", "--peer", "ai-server"], ["--matrix", "--profile", "protocol"]):
        completed = subprocess.run(
            [sys.executable, "-m", "peers.run", *wrong], cwd=REPO, capture_output=True, text=True
        )
        assert completed.returncode == 2 and "Error:" in completed.stderr, wrong
