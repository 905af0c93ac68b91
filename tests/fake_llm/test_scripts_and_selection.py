"""Scripts load and validate with clear errors; selection follows spec/fake-llm/selection.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest

from fake_llm.errors import ScriptFileError, ScriptSelectionError
from fake_llm.playback import FailNow, Finish, Pause, TextDelta, ToolCallDelta, UsageReport, pieces
from fake_llm.scripts import BUILTIN_DIR, ScriptLibrary, load_script_file, parse_script
from fake_llm.selection import Message, select, tag_for

LIBRARY = ScriptLibrary.from_folders()


def script(**overrides):
    data = {
        "name": "s",
        "steps": [{"text_chunks": ["a"], "usage": {"input_tokens": 1, "output_tokens": 2}}],
        "title": {"text_chunks": ["T"], "usage": {"input_tokens": 3, "output_tokens": 4}},
    }
    data.update(overrides)
    return data


def test_builtin_scripts_cover_the_suite_scenarios():
    assert {
        "default",
        "plain",
        "tool-round-trip",
        "parallel-tools",
        "failing-tool",
        "llm-error",
        "mid-stream-error",
        "slow",
        "title-fails",
        "quoted-title",
    } <= set(LIBRARY.names())


def test_bad_script_error_names_file_script_and_step(tmp_path: Path):
    path = tmp_path / "broken.yaml"
    path.write_text(
        "name: broken\nsteps:\n  - text_chunks: [a]\n  - text_chunks: [b]\n    usage: {input_tokens: 1}\n"
        "title: {text_chunks: [t], usage: {input_tokens: 1, output_tokens: 1}}\n"
    )
    with pytest.raises(ScriptFileError) as error:
        load_script_file(path)
    message = str(error.value)
    assert str(path) in message and "'broken'" in message
    assert "step 0: 'usage' is a required property" in message
    assert "step 1 (usage): 'output_tokens' is a required property" in message


def test_script_name_must_match_its_file(tmp_path: Path):
    path = tmp_path / "other.json"
    path.write_text(
        '{"name": "s", "steps": [{"text_chunks": ["a"], "usage": {"input_tokens": 1, "output_tokens": 1}}],'
        ' "title": {"text_chunks": ["T"], "usage": {"input_tokens": 1, "output_tokens": 1}}}'
    )
    with pytest.raises(ScriptFileError, match="must be in a file named s.json"):
        load_script_file(path)


def test_unreadable_script_and_missing_folder(tmp_path: Path):
    (tmp_path / "bad.yaml").write_text("name: [unclosed")
    with pytest.raises(ScriptFileError, match="bad.yaml: cannot read"):
        ScriptLibrary.from_folders([tmp_path])
    with pytest.raises(ScriptFileError, match="not a folder"):
        ScriptLibrary.from_folders([tmp_path / "missing"])


def test_unknown_members_are_errors():
    with pytest.raises(ScriptFileError, match="Additional properties"):
        parse_script(script(steps=[{"txt": ["a"], "usage": {"input_tokens": 1, "output_tokens": 1}}]))


def msgs(*pairs: tuple[str, str]) -> list[Message]:
    return [Message(role, text) for role, text in pairs]


def test_tag_selects_script_and_assistant_messages_select_the_step():
    tag = tag_for("tool-round-trip", "run1")
    first = select(msgs(("system", "sys"), ("user", f"hi {tag}")), tools_bound=True, library=LIBRARY)
    assert (first.script.name, first.step_index, first.run) == ("tool-round-trip", 0, "run1")
    second = select(msgs(("user", tag), ("assistant", ""), ("tool", "{}")), tools_bound=True, library=LIBRARY)
    assert second.step_index == 1


def test_last_user_message_decides():
    chosen = select(
        msgs(("user", tag_for("plain")), ("assistant", "x"), ("user", tag_for("slow"))),
        tools_bound=True,
        library=LIBRARY,
    )
    assert (chosen.script.name, chosen.step_index) == ("slow", 0)


def test_no_tag_is_the_default_script_and_no_tools_is_a_title_request():
    assert select(msgs(("user", "hello")), tools_bound=True, library=LIBRARY).script.name == "default"
    title = select(
        msgs(("system", "title"), ("user", tag_for("plain")), ("assistant", "answer")),
        tools_bound=False,
        library=LIBRARY,
    )
    assert title.is_title and title.step.text == "Lab health check"


@pytest.mark.parametrize(
    ("messages", "match"),
    [
        (msgs(("user", "[[fake-llm:nope:r]]")), r"tag \[\[fake-llm:nope:r\]\] names no known script 'nope' \(step 0\)"),
        (
            msgs(("user", tag_for("plain")), ("assistant", "x")),
            r"script 'plain' has 1 step\(s\), but the request asks for step 1",
        ),
        (msgs(("user", tag_for("plain") + tag_for("slow"))), "2 script tags"),
        (msgs(("system", "only")), "no user message"),
    ],
)
def test_selection_errors_name_tag_and_step(messages, match):
    with pytest.raises(ScriptSelectionError, match=match):
        select(messages, tools_bound=True, library=LIBRARY)


def test_playback_chunks_fragments_parallel_calls_and_delays():
    parallel = LIBRARY.get("parallel-tools").steps[0]
    played = pieces(parallel)
    assert [p.text for p in played if isinstance(p, TextDelta)] == ["Checking both routers."]
    calls = [p for p in played if isinstance(p, ToolCallDelta)]
    firsts = [c for c in calls if c.id]
    assert [(c.index, c.id, c.name, c.arguments) for c in firsts] == [
        (0, "call_par_1", "run_show_command", ""),
        (1, "call_par_2", "run_show_command", ""),
    ]
    for index, call in enumerate(parallel.tool_calls):
        fragments = [c.arguments for c in calls if c.index == index and not c.id]
        expected = '{"command":"show ip route","device":"R' + str(index + 1) + '"}'
        assert "".join(fragments) == call.arguments_json == expected
        assert all(len(f) <= 7 for f in fragments) and len(fragments) > 1
    slow = pieces(LIBRARY.get("slow").steps[0])
    assert slow[0] == Pause(3.0)
    spaced = parse_script(
        script(
            steps=[
                {"text_chunks": ["a", "b"], "delay_between_ms": 50, "usage": {"input_tokens": 1, "output_tokens": 1}}
            ]
        )
    )
    assert pieces(spaced.steps[0]) == [
        TextDelta("a"),
        Pause(0.05),
        TextDelta("b"),
        Finish("stop"),
        UsageReport(spaced.steps[0].usage),
    ]


def test_playback_mid_stream_failure_after_n_chunks():
    played = pieces(LIBRARY.get("mid-stream-error").steps[0])
    assert [type(p).__name__ for p in played] == ["TextDelta", "FailNow"]
    assert isinstance(played[-1], FailNow) and played[-1].failure.after_chunks == 1


def test_every_builtin_file_is_a_valid_script():
    for path in BUILTIN_DIR.iterdir():
        assert load_script_file(path).name == path.stem
