"""The suite's one SSE tokenizer (conformance/transport/sse.py): a body fed in pieces gives the frames the whole body
gives, wherever it is cut; and no other module of the suite splits SSE itself."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

from conformance.transport.sse import SseTokenizer, parse

SUITE = Path(__file__).resolve().parents[2] / "conformance"
TOKENIZER = SUITE / "transport" / "sse.py"

BODIES = [
    'data: {"type": "content", "content": "Hi"}\n\ndata: {"type": "done"}\n\n',
    'data: {"a": 1}\r\n\r\ndata: {"b": 2}\r\n\r\n',  # CRLF
    'data: {"a": 1}\r\rdata: {"b": 2}\r\r',  # CR alone
    ": heartbeat\n\nevent: message\ndata: one\ndata: two\nid: 7\nretry: 5\nfoo: bar\n\n",
    'data: {"a": 1}\n\n\n\ndata: {"b": 2}\n\ndata: {"unfinished": ',  # blank runs, an unterminated frame
    "\r\n\ndata: 1\r\ndata: 2\r\r\r\ndata: 3\r",  # blank lines before any frame, a CR at the very end
    "data: [DONE]\n\n",
    "",
]


def _frame_shape(f) -> tuple:
    return f.index, f.raw, f.lines, f.event, f.data, f.data_lines, f.comments, f.unknown_fields


def _shape(body) -> tuple:
    frames = [_frame_shape(f) for f in body.frames]
    unfinished = _frame_shape(body.unfinished) if body.unfinished else None
    return frames, body.line_ends, body.unterminated, unfinished, body.extra_blank_lines


@pytest.mark.parametrize("text", BODIES)
def test_every_cut_in_two_or_three_pieces_gives_the_whole_bodys_frames(text):
    whole = _shape(parse(text))
    for cuts in itertools.chain(
        ((i,) for i in range(len(text) + 1)), itertools.combinations(range(0, len(text) + 1, 3), 2)
    ):
        tokenizer, start = SseTokenizer(), 0
        for cut in (*cuts, len(text)):
            tokenizer.feed(text[start:cut])
            start = cut
        assert _shape(tokenizer.body()) == whole, f"cut at {cuts}"


def test_fields_comments_and_line_ends():
    body = parse(BODIES[3] + 'data: {"x": 1}\r\n\r\n')
    first, second, third = body.frames
    assert first.is_comment and first.comments == ["heartbeat"]
    assert (second.event, second.data, second.unknown_fields) == ("message", "one\ntwo", ["foo"])
    assert third.json() == {"x": 1}
    assert body.line_ends == {"\n", "\r\n"} and body.unterminated == ""


def test_a_cr_at_the_end_of_a_piece_waits_for_the_next():
    tokenizer = SseTokenizer()
    assert tokenizer.feed("data: 1\r\n\r") == []  # the CR may be the first half of a CRLF
    assert [f.data for f in tokenizer.feed("\n", at=2.0)] == ["1"]
    assert tokenizer.body().line_ends == {"\r\n"}


def test_blank_lines_that_end_no_frame_and_the_unfinished_frame_are_kept_for_the_rules():
    body = parse("\n\ndata: 1\n\n\ndata: 2\n\n\n\n\ndata: 3\ndata:")
    assert [f.data for f in body.frames] == ["1", "2"]
    assert body.extra_blank_lines == [(0, 2), (1, 1), (2, 3)]  # (frames before the run, its length)
    assert body.unfinished.lines == ["data: 3", "data:"] and body.unfinished.data_lines == ["3", ""]
    assert body.unterminated == "data: 3\ndata:"
    assert parse("data: 1\n").unfinished.lines == ["data: 1", ""]  # the line end came, the blank line did not
    assert parse("data: 1\n\n\n").extra_blank_lines == [(1, 1)] and parse("data: 1\n\n").unfinished is None


def test_a_frame_ended_by_a_lone_cr_ended_when_the_cr_came():
    tokenizer = SseTokenizer()
    assert tokenizer.feed("data: 1\r\r", at=1.0) == []  # the second CR may still be half of a CRLF
    assert [(f.data, f.at) for f in tokenizer.feed("data: 2\r\n\r", at=3.0)] == [("1", 1.0)]
    assert [(f.data, f.at) for f in tokenizer.feed("\n", at=5.0)] == [("2", 5.0)]  # a CRLF ends when its LF comes
    tokenizer.feed("data: 3\r\r", at=6.0)
    assert [(f.data, f.at) for f in tokenizer.body().frames][-1] == ("3", 6.0)  # the body ended on the CR
    assert tokenizer.body().line_ends == {"\r", "\r\n"}


def test_each_frame_is_stamped_with_the_arrival_of_its_end():
    tokenizer = SseTokenizer()
    assert tokenizer.feed("data: 1\n", at=0.5) == []
    assert [(f.data, f.at) for f in tokenizer.feed("\ndata: 2\n\ndata:", at=1.5)] == [("1", 1.5), ("2", 1.5)]
    assert [(f.data, f.at) for f in tokenizer.feed(" 3\n\n", at=4.0)] == [("3", 4.0)]
    arrivals = [(9, 0.5), (18, 1.0)]
    assert [f.at for f in parse("data: 1\n\ndata: 2\n\n", arrivals).frames] == [0.5, 1.0]


# --- one tokenizer --------------------------------------------------------------------------------------------

SEPARATORS = {"\n\n", "\r\n\r\n", "\r\r"}


SPLITTING = {"split", "rsplit", "partition", "rpartition", "find", "rfind", "index", "rindex", "endswith", "count"}


def _splits_lines(node: ast.AST) -> bool:
    """`x.splitlines()`, or a split on a line end (the framing rules read a frame's lines from the tokenizer)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    if node.func.attr == "splitlines":
        return True
    line_end = any(isinstance(arg, ast.Constant) and arg.value in ("\n", "\r\n", "\r") for arg in node.args)
    return node.func.attr in ("split", "rsplit", "partition") and line_end


def second_tokenizers(source: str, name: str = "<module>") -> list[str]:
    """Where `source` splits SSE itself: a frame separator (or a name bound to one) searched for or split on, or
    lines of a body scanned for `data:` fields. Joining with a blank line (a report's paragraphs) is no splitting."""
    tree = ast.parse(source)
    bound = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value in SEPARATORS
        for target in node.targets
        if isinstance(target, ast.Name)
    }

    def separator(node: ast.AST) -> bool:
        return (isinstance(node, ast.Constant) and node.value in SEPARATORS) or (
            isinstance(node, ast.Name) and node.id in bound
        )

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SPLITTING:
            if any(separator(arg) for arg in node.args):
                found.append(f"{name}:{node.lineno}: {node.func.attr} on the frame separator")
        elif isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
            if separator(node.left):
                found.append(f"{name}:{node.lineno}: a search for the frame separator")
    for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)):
        fields = any(isinstance(c, ast.Constant) and c.value in ("data:", "data: ") for c in ast.walk(function))
        if fields and any(_splits_lines(c) for c in ast.walk(function)):
            found.append(f"{name}:{function.lineno}: {function.name} reads `data:` lines of a body")
    return found


def test_the_detector_finds_the_splitters_the_suite_once_had():
    framing = 'FRAME_END = "\\n\\n"\ndef parse(body):\n    return body.split(FRAME_END)\n'
    reader = 'def read(buffer):\n    while "\\n\\n" in buffer:\n        frame, buffer = buffer.split("\\n\\n", 1)\n'
    lenient = 'def events(body):\n    return [l for l in body.splitlines() if l.startswith("data:")]\n'
    lines = 'def judge(frame):\n    return [l for l in frame.split("\\n") if not l.startswith("data: ")]\n'
    assert all(second_tokenizers(source) for source in (framing, reader, lenient, lines))
    assert second_tokenizers('text = "\\n\\n".join(paragraphs) + body + "\\n\\n"\n') == []


def test_no_module_but_the_tokenizer_splits_sse():
    found = [
        problem
        for path in sorted(SUITE.rglob("*.py"))
        if path != TOKENIZER
        for problem in second_tokenizers(path.read_text(encoding="utf-8"), str(path.relative_to(SUITE.parent)))
    ]
    assert found == [], "split SSE with conformance.transport.sse instead:\n" + "\n".join(found)
