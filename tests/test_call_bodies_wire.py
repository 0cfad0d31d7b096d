"""The request a team's own chatbot received (`CallBody.wire`) in the body log: stored as
texts beside the row, read back as written; a file holding one says so in its magic (a
vera from before it refuses the file in one line instead of failing on the row); a run
written before it reads as ever, with no wire; a damaged wire is None, never a refusal."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vera.errors import StorageError
from vera.records import CallBody, Completion, Message, WireRequest
from vera.store import BodyReader, RunStore, _bodies
from vera.store._bodylog import MAGIC, MAGIC_WIRE, VLOG, LogReader

from .test_call_bodies_store import _call, _old_store_bodies, _strip

FIXTURE = Path(__file__).parent / "fixtures" / "call_bodies_vlog_v2"


@pytest.fixture(autouse=True)
def _format_2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_bodies, "WRITE_FORMAT", 2)


def _write(run: Path, bodies: list[CallBody]) -> None:
    store = RunStore(run, call_bodies=True)
    for body in bodies:
        store.add_call(body.call, body)
    store.sync()
    store.close()


def _sent(i: int) -> WireRequest:
    return WireRequest(
        "POST",
        "http://bot.test/api/sessions/a/reply?token=****",
        '{"history":[{"role":"user","content":"hey ' + "x" * i + '"}],"session":"a"}',
    )


def _http_body(i: int, wire: WireRequest | None) -> CallBody:
    return CallBody(
        call=_call("a"),
        conversation_id="a",
        messages=(Message("user", "hey " + "x" * i),),
        response=Completion(f"reply {i}"),
        wire=wire,
    )


def test_a_run_written_before_the_wire_reads_as_ever(tmp_path: Path) -> None:
    # Written by the vera before this change (format 2, ten-element rows).
    run = tmp_path / "old"
    shutil.copytree(FIXTURE, run)
    assert (run / VLOG).read_bytes()[:8] == MAGIC
    with BodyReader(run) as reader:
        bodies = list(reader.all())
    assert [_strip(b) for b in bodies] == [_strip(b) for b in _old_store_bodies()]
    assert all(b.wire is None for b in bodies)
    # Resumed by this vera with no http call: it stays readable by the vera before.
    _write(run, [_http_body(1, None)])
    assert (run / VLOG).read_bytes()[:8] == MAGIC


def test_the_wire_reads_back_and_turns_the_magic(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _write(run, [_http_body(0, None)])
    assert (run / VLOG).read_bytes()[:8] == MAGIC
    written = [_http_body(i, _sent(i)) for i in range(1, 4)]
    _write(run, written)  # a resume whose chatbot is an http one
    data = (run / VLOG).read_bytes()
    assert data[:8] == MAGIC_WIRE
    log = LogReader(run)
    try:
        rows = [r for r in log._live(None) if isinstance(r, list)]
    finally:
        log.close()
    # The URL is one text, stored once, each row naming it by its id.
    assert len(rows) == 4 and len({r[10][1] for r in rows[1:]}) == 1
    with BodyReader(run) as reader:
        got = list(reader.all())
    assert [b.wire for b in got] == [None, *(_sent(i) for i in range(1, 4))]
    assert [_strip(b) for b in got[1:]] == [_strip(b) for b in written]


def test_a_vera_from_before_the_wire_refuses_its_file_in_one_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _write(run, [_http_body(1, _sent(1))])
    old_check = MAGIC  # what the vera before compared the head with
    head = (run / VLOG).read_bytes()[:8]
    assert head != old_check[: len(head)]  # so it raised its one-line StorageError
    # And this vera refuses a magic it does not know, in one line.
    (run / VLOG).write_bytes(b"VERABD\x00\x09" + (run / VLOG).read_bytes()[8:])
    with pytest.raises(StorageError, match="not a call bodies file of a format this vera reads"):
        BodyReader(run)


def test_a_damaged_wire_is_none_and_the_rest_reads(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _write(run, [_http_body(1, _sent(1))])
    reader = LogReader(run)
    try:
        (row,) = [r for r in reader._live(None) if isinstance(r, list)]
        assert reader._wire(row) == _sent(1)
        for bad in (["POST", 10**9, 1], ["POST", 1], None, "x", ["POST", "url", "body"]):
            damaged = [*row[:10], bad]
            assert reader._wire(damaged) is None
            body = reader._body(damaged)
            assert body.wire is None and body.response is not None and body.response.text == "reply 1"
    finally:
        reader.close()
