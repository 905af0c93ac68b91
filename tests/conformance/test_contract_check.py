"""The main job's self-check of spec/: problems are found, and a clean result is kept only for the same files."""

from __future__ import annotations

import gns3_copilot_spec as spec
from conformance.harness import contract_check
from conformance.harness.contract_check import contract_problems


def test_the_contract_on_disk_has_no_problems_and_its_clean_result_is_kept(tmp_path, monkeypatch):
    checked, problems = contract_problems(tmp_path)
    assert problems == [] and any("valid OpenAPI 3.2" in line for line in checked)
    assert [p.name for p in tmp_path.iterdir()] == [f"contract-{contract_check.fingerprint()}.json"]

    def not_called():
        raise AssertionError("the contract was checked again on the same files")

    monkeypatch.setattr(contract_check, "_check", not_called)
    assert contract_problems(tmp_path) == (checked, [])


def test_a_problem_is_reported_and_never_kept(tmp_path, monkeypatch):
    registry = spec.load_requirements()
    doubled = {**registry, "requirements": [*registry["requirements"], registry["requirements"][0]]}
    monkeypatch.setattr(spec, "load_requirements", lambda: doubled)
    _, problems = contract_problems(tmp_path)
    assert problems == [f"spec/requirements.yaml: duplicate id {registry['requirements'][0]['id']}"]
    assert not list(tmp_path.iterdir())  # found again at the next run, until fixed


def test_the_fingerprint_changes_with_any_contract_file(tmp_path, monkeypatch):
    copy = tmp_path / "spec"
    for path in spec.SPEC_DIR.rglob("*"):
        if path.is_file() and path.suffix in contract_check.CHECKED_SUFFIXES:
            (copy / path.relative_to(spec.SPEC_DIR)).parent.mkdir(parents=True, exist_ok=True)
            (copy / path.relative_to(spec.SPEC_DIR)).write_bytes(path.read_bytes())
    monkeypatch.setattr(spec, "SPEC_DIR", copy)
    before = contract_check.fingerprint()
    assert before == contract_check.fingerprint()
    example = next((copy / "examples").glob("*.sse"))
    example.write_text(example.read_text() + "\n")
    assert contract_check.fingerprint() != before


def test_an_unwritable_cache_only_costs_the_check_again(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    assert contract_problems(blocked / "cache")[1] == []
