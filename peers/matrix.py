"""docs/implementations.md: every judged implementation (the peers of peers.PEERS) side by side, rule by rule.

Built from each peer's report, reports/<target>/conformance.json, which `python3 tasks.py peers` writes (run with
the contract profile, so that both voices are judged): first the protocols' own rules (`source: protocol` in
spec/requirements.yaml, each with the text it cites), one table per channel, with a column for each implementation
that serves it; then, apart, the rules this contract adds (`source: contract`), in the same layout; then each
implementation's counts in both voices. The reports are not committed, so their verdicts are: docs/implementations.json,
written with the page, which a test re-renders (the page must be what they give). Neither holds a date or a run time:
a rebuild from the same verdicts gives the same bytes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from conformance.gns3.matrix import COUNTED, summarize
from conformance.reports.voices import (
    CONTRACT,
    NOT_MET,
    NOUNS,
    PROTOCOL,
    SOURCES,
    citation_of,
    citation_text,
    with_voices,
)

from . import PEERS, REPO, Peer

MATRIX_DOC = REPO / "docs" / "implementations.md"
MATRIX_VERDICTS = REPO / "docs" / "implementations.json"
# A channel: the key of a target file's `channels`, its title, and the id prefix of its rules (OPENAI-PROTO-001 is
# the OpenAI protocol's, OPENAI-001 the contract's). CHANNEL-* are the contract's rules of every channel.
CHANNELS = (
    ("openai", "OpenAI Chat Completions / Responses", "OPENAI"),
    ("ui", "AI SDK UI message stream", "UI"),
    ("ag_ui", "AG-UI", "AGUI"),
)
EVERY_CHANNEL = "CHANNEL"
RULE_PREFIXES = {prefix for _, _, prefix in CHANNELS} | {EVERY_CHANNEL}
NOT_JUDGED = ("N/A", "EXCLUDED", "NOT SELECTED")  # verdicts of a rule the run did not judge at all
# How a rule not met reads in each voice: known (the baseline lists it: XFAIL), new (FAIL), or only reported (WARN,
# a SHOULD).
NOT_MET_LABELS = {
    PROTOCOL: {"XFAIL": "FAIL (known)", "FAIL": "FAIL (new)", "WARN": "WARN (SHOULD not met)"},
    CONTRACT: {"XFAIL": "deviates (known)", "FAIL": "deviates (new)", "WARN": "WARN (SHOULD not met)"},
}


def _is_channel_rule(rid: str) -> bool:
    return rid.split("-")[0] in RULE_PREFIXES


def served_channels(peer: Peer) -> list[str]:
    """The channels the peer's target file declares, in CHANNELS order."""
    declared = yaml.safe_load(peer.target_file.read_text(encoding="utf-8")).get("channels") or {}
    return [key for key, _, _ in CHANNELS if key in declared]


def summarize_peer(peer: Peer, data: dict[str, Any]) -> dict[str, Any]:
    """What the page needs of one peer's conformance.json: who it is, what it serves, its run's result and counts
    (conformance.gns3.matrix.summarize), its counts in each voice, and the verdict of each channel rule."""
    summary = summarize(data)
    sources = data.get("by_source") or {}
    return {
        "target": peer.target,
        "distribution": peer.distribution,
        "version": peer.version,
        "description": data["target"].get("description") or "",
        "channels": served_channels(peer),
        "profile": data.get("profile") or CONTRACT,
        "passed": summary["passed"],
        "counts": summary["counts"],
        "voices": {
            source: {
                NOUNS[source][1]: (sources.get(source) or {}).get(NOUNS[source][1], 0),
                "failing": (sources.get(source) or {}).get("failing", 0),
                "counts": {k: v for k, v in ((sources.get(source) or {}).get("counts") or {}).items() if v},
            }
            for source in SOURCES
        },
        "verdicts": {r["id"]: r["verdict"] for r in summary["requirements"] if _is_channel_rule(r["id"])},
    }


def rules_of(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The channel rules a conformance.json lists: level, section, source and (a protocol's) citation, one line."""
    return {
        r["id"]: {
            "level": r["level"],
            "section": r["section"],
            "source": r.get("source") or CONTRACT,
            "citation": citation_text(citation_of(r)) or None,  # None for the contract's
        }
        for r in data["requirements"]
        if _is_channel_rule(r["id"])
    }


def collect(reports_root: Path, committed: Path | None = MATRIX_VERDICTS) -> tuple[dict[str, Any], list[str]]:
    """The page's data from every peer's report; a peer without one keeps its verdicts from `committed` (the
    committed docs/implementations.json), when that file has them. Returns it and the peers taken from `committed`."""
    old = json.loads(committed.read_text(encoding="utf-8")) if committed and committed.exists() else {}
    rules: dict[str, dict[str, Any]] = {}
    implementations: dict[str, dict[str, Any]] = {}
    kept = []
    for name, peer in PEERS.items():
        path = reports_root / peer.target / "conformance.json"
        if path.exists():
            data = with_voices(json.loads(path.read_text(encoding="utf-8")))  # an older report: its rules' sources
            implementations[name] = summarize_peer(peer, data)
            rules.update(rules_of(data))
        elif name in old.get("implementations", {}):
            implementations[name] = old["implementations"][name]
            kept.append(name)
    for rid, rule in old.get("rules", {}).items():  # a kept peer's rules, where no report lists them
        if any(rid in i["verdicts"] for i in implementations.values()):
            rules.setdefault(rid, rule)
    if not implementations:
        raise FileNotFoundError(f"no reports/<target>/conformance.json of any peer under {reports_root}")
    return {"rules": dict(sorted(rules.items())), "implementations": implementations}, kept


def _anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lstrip("#").strip().lower()).replace(" ", "-")


def _column(name: str, impl: dict[str, Any]) -> str:
    title = (
        f"{name} {impl['version']}"
        if name == impl["distribution"]
        else f"{name} ({impl['distribution']} {impl['version']})"
    )
    return f"[{title}]({impl['target']}.md)"


def _cell(rule: dict[str, Any], rid: str, impl: dict[str, Any]) -> str:
    verdict = impl["verdicts"].get(rid, "-")
    if verdict in NOT_MET:  # the findings document has a section for it: link it
        heading = f"### {rid} ({rule['level']}, {rule['section']}): {verdict}"
        return f"[**{NOT_MET_LABELS[rule['source']][verdict]}**]({impl['target']}.md#{_anchor(heading)})"
    return verdict if verdict in ("PASS", "N/A", "-") else f"**{verdict}**"


def _table(data: dict[str, Any], source: str, prefix: str, names: list[str]) -> list[str]:
    """One table: the rules of `source` whose ids start with `prefix`, a column for each of `names`."""
    rules = {rid: r for rid, r in data["rules"].items() if r["source"] == source and rid.split("-")[0] == prefix}
    impls = data["implementations"]
    if not names:
        return ["No implementation judged here serves this channel.", ""]
    lines = [
        "| rule | level | " + " | ".join(_column(n, impls[n]) for n in names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for rid, rule in rules.items():
        lines.append(f"| {rid} | {rule['level']} | " + " | ".join(_cell(rule, rid, impls[n]) for n in names) + " |")
    lines.append("")
    cited = [f"- {rid}: {rule['citation']}" for rid, rule in rules.items() if rule.get("citation")]
    if not cited:
        return lines
    return [*lines, "<details><summary>The text each rule cites</summary>", "", *cited, "", "</details>", ""]


def _serving(data: dict[str, Any], channel: str) -> list[str]:
    return [name for name, impl in data["implementations"].items() if channel in impl["channels"]]


def _voice_cells(voice: dict[str, Any], source: str) -> str:
    counts = voice["counts"]
    judged = sum(v for k, v in counts.items() if k not in NOT_JUDGED)
    others = [f"{counts[k]} {k}" for k in COUNTED if counts.get(k) and k not in (*NOT_JUDGED, "PASS", *NOT_MET)]
    return f"{judged} | {counts.get('PASS', 0)} | {voice[NOUNS[source][1]]} | {', '.join(others) or '-'}"


def render_matrix(data: dict[str, Any]) -> str:
    impls = data["implementations"]
    titles = {key: title for key, title, _ in CHANNELS}
    lines = [
        "# The implementations judged: verdicts side by side",
        "",
        "Every peer of `peers/` (third-party servers of the channels' protocols, `peers.PEERS`), each serving the "
        "reference server's agent or tools with the suite's fake LLM as its model, judged by the conformance suite "
        "inside a loopback-only network namespace against its baseline (`peers/baselines/<target>.yaml`: the "
        "known deviations, one line of reason each). Generated by `python3 tasks.py peers --matrix` (every peer run, "
        "then this page), or rebuilt without running a server by `python3 tasks.py peers --matrix --doc-only` "
        "(`peers/matrix.py`, from `reports/<target>/conformance.json`; a peer without a report keeps its verdicts "
        "from `docs/implementations.json`, committed beside this page); regenerate rather than edit. Each rule's "
        "text is in `spec/behaviour.md`; each finding's evidence and reproduction in the implementation's findings "
        "document, linked from its column and its cells.",
        "",
        "Two voices, kept apart: a *protocol violation* breaks a rule of the protocol itself (`source: protocol` "
        "in `spec/requirements.yaml`, with the text it cites); a *contract deviation* misses a rule that this "
        "contract adds on top (`source: contract`), which a server of the protocol that is not a GNS3 Copilot "
        "implementation has no reason to follow.",
        "",
        "## Implementations",
        "",
        "| implementation | serves | what was judged | run | findings document |",
        "|---|---|---|---|---|",
    ]
    for name, impl in impls.items():
        run = "passed" if impl["passed"] else "**failed**"
        run += "" if impl["profile"] == CONTRACT else f" (profile {impl['profile']}: the contract's rules not judged)"
        served = ", ".join(titles[c] for c in impl["channels"])
        document = f"[docs/{impl['target']}.md]({impl['target']}.md)"
        what = impl["description"].replace("|", "\\|")  # a cell of the table
        lines.append(f"| {_column(name, impl)} | {served} | {what} | {run} | {document} |")
    lines += [
        "",
        "`passed`: the run matched the implementation's baseline. In the tables: PASS, the rule is met; "
        "**FAIL (known)**, a protocol violation the baseline lists (**FAIL (new)**: one it does not, the run "
        "failed); **deviates (known)** / **deviates (new)**, the same for a contract rule; each links the finding's "
        "section of the findings document. N/A: the rule does not apply (a capability or endpoint not served); "
        "`-`: the implementation's report does not list the rule (it predates it).",
        "",
        "## The protocols' own rules",
        "",
        "One table per channel, a column for each implementation that serves it.",
        "",
    ]
    for key, title, prefix in CHANNELS:
        lines += [f"### {title}", "", *_table(data, PROTOCOL, prefix, _serving(data, key))]
    lines += [
        "## This contract's additions (not the protocols' rules)",
        "",
        "The rules the GNS3 Copilot contract adds to each channel (`source: contract`): server-kept sessions, the "
        "busy lock, usage in the stream, its error codes, its paths. Missing one is a deviation from this contract, "
        "not from the protocol. The contract's GNS3 chat API rules are left out: no implementation here serves it.",
        "",
        "### Every channel (this contract's rules)",
        "",
        *_table(data, CONTRACT, EVERY_CHANNEL, list(impls)),
    ]
    for key, title, prefix in CHANNELS:
        lines += [f"### {title} (this contract's rules)", "", *_table(data, CONTRACT, prefix, _serving(data, key))]
    lines += [
        "## Counts by implementation",
        "",
        "Per voice: the rules judged (not N/A or excluded), those met (PASS), those not met (violations of the "
        "protocol, deviations from the contract: known, new or only warned) and any other verdict.",
        "",
        "| implementation | protocol rules judged | PASS | protocol violations | other | contract rules judged | "
        "PASS | contract deviations | other |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, impl in impls.items():
        cells = " | ".join(_voice_cells(impl["voices"][s], s) for s in SOURCES)
        lines.append(f"| {_column(name, impl)} | {cells} |")
    return "\n".join(lines).rstrip() + "\n"


def write_matrix(
    reports_root: Path = REPO / "reports",
    out: Path = MATRIX_DOC,
    verdicts_out: Path | None = None,
    committed: Path | None = MATRIX_VERDICTS,
) -> list[str]:
    """The page from the reports, and beside it (`verdicts_out`, default: `out` with .json) their verdicts; the
    peers whose verdicts came from `committed` instead (no report)."""
    data, kept = collect(reports_root, committed)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_matrix(data), encoding="utf-8")
    (verdicts_out or out.with_suffix(".json")).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return kept
