"""The call bodies' log (`call_bodies.sqlite-log`): a run writes new blobs and call rows
to it, one write per turn of the loop, and folds it into `call_bodies.sqlite` when its
store closes. A run killed before that leaves the log: readers see the same bodies with
or without the fold, and never fold themselves; the next writer folds it, dropping a
torn last record as calls.jsonl's torn last line is dropped."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import msgspec
import pytest

from vera.records import CallBody, CallRecord, Completion, Message
from vera.report import export_calls
from vera.store import BODIES, BodyReader, RunStore, _bodies, count_bodies
from vera.store._bodies import _BLOB, LOG, _msgpack, _record

from .test_call_bodies_store import _call, _old_store_bodies, _reply, _strip


@pytest.fixture(autouse=True)
def _format_1(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about format 1 (`call_bodies.sqlite`), which new runs no longer
    write (format 2: tests/test_call_bodies_vlog.py): written here by its own writer,
    as a run started by an earlier vera holds it."""
    monkeypatch.setattr(_bodies, "WRITE_FORMAT", 1)


def _killed_and_folded(tmp_path: Path) -> tuple[Path, Path, list[CallBody]]:
    """The same run twice: `killed` as a kill -9 leaves it (every write in the OS, the
    store never closed, so its log never folded) and `folded` closed as it should be."""
    written = _old_store_bodies()
    folded = tmp_path / "folded"
    store = RunStore(folded, call_bodies=True)
    for body in written:
        store.add_call(body.call, body)
    store.sync()
    killed = tmp_path / "killed"
    shutil.copytree(folded, killed)
    store.close()
    if _bodies.WRITE_FORMAT == 1:
        assert (killed / LOG).exists() and not (folded / LOG).exists()
    return killed, folded, written


def _files(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(run.iterdir()) if p.is_file()}


def _calls(run: Path) -> list[CallRecord]:
    return [msgspec.json.decode(x, type=CallRecord) for x in (run / "calls.jsonl").read_bytes().splitlines()]


def _exported(run: Path, out: Path) -> bytes:
    export_calls(run, out)
    return out.read_bytes()


def test_a_killed_runs_log_reads_as_the_folded_store_and_reading_changes_nothing(tmp_path: Path) -> None:
    killed, folded, written = _killed_and_folded(tmp_path)
    with sqlite3.connect(f"{(killed / BODIES).as_uri()}?mode=ro", uri=True) as db:
        assert db.execute("SELECT count(*) FROM calls").fetchone() == (0,)  # all in the log
    before = _files(killed)
    killed.chmod(0o555)  # a read-only run folder (root writes anyway: the files are compared)
    try:
        with BodyReader(killed) as reader:
            from_log = [_strip(b) for b in reader.all()]
            assert [_strip(b) for b in reader.conversation("b")] == [x for x in from_log if x[0] == "b"]
        assert count_bodies(killed) == len(written)
        export_killed = _exported(killed, tmp_path / "killed.jsonl")
    finally:
        killed.chmod(0o755)
    assert _files(killed) == before  # nothing folded, nothing created
    with BodyReader(folded) as reader:
        from_db = [_strip(b) for b in reader.all()]
    assert from_log == from_db == [_strip(b) for b in written]
    assert export_killed == _exported(folded, tmp_path / "folded.jsonl")

    # The next writer folds the log; what is read is the same again.
    RunStore(killed, call_bodies=True).close()
    assert not (killed / LOG).exists()
    with sqlite3.connect(killed / BODIES) as db:
        assert db.execute("SELECT count(*) FROM calls").fetchone() == (len(written),)
        assert (
            db.execute("SELECT count(*) FROM blobs").fetchone()
            == db.execute("SELECT max(id) FROM blobs").fetchone()
        )
    assert _exported(killed, tmp_path / "again.jsonl") == export_killed


def test_a_torn_last_record_is_dropped_and_the_resumed_run_goes_on(tmp_path: Path) -> None:
    killed, _, written = _killed_and_folded(tmp_path)
    log = killed / LOG
    whole = log.read_bytes()
    # What a kill in the middle of the next turn's write leaves: part of a record.
    record = _record(_BLOB, _msgpack.encode((len(whole), b"h" * 16, b"r" + b"never lined " * 20)))
    log.write_bytes(whole + record[: len(record) // 2])
    with BodyReader(killed) as reader:
        assert [_strip(b) for b in reader.all()] == [_strip(b) for b in written]
    # A record whose bytes are wrong (a disk that lost the tail) ends the log too.
    log.write_bytes(whole + record[:-1] + bytes([record[-1] ^ 1]))
    with BodyReader(killed) as reader:
        assert len(list(reader.all())) == len(written)

    # Resumed: folded on open, the torn tail gone; the run adds a body with new texts
    # and old ones, each stored once.
    store = RunStore(killed, call_bodies=True)
    assert not log.exists()
    more = CallBody(
        call=_call("b"),
        conversation_id="b",
        messages=(*written[-1].messages, Message("user", "a new line, long enough to compress " * 5)),
        response=Completion(_reply(2)),
    )
    store.add_call(more.call, more)
    store.close()
    with BodyReader(killed) as reader:
        kept = list(reader.all())
    assert [_strip(b) for b in kept] == [_strip(b) for b in (*written, more)]
    assert [b.call for b in kept] == _calls(killed)
    with sqlite3.connect(killed / BODIES) as db:
        hashes = db.execute("SELECT count(*), count(DISTINCT hash) FROM blobs").fetchone()
    assert hashes[0] == hashes[1]


def test_a_fold_killed_before_the_log_was_removed_folds_again_to_the_same_rows(tmp_path: Path) -> None:
    killed, folded, written = _killed_and_folded(tmp_path)
    # The fold's commit made, the log still there (a kill between the two).
    shutil.copy(killed / LOG, folded / LOG)
    with BodyReader(folded) as reader:  # rows in both: each read once
        assert [_strip(b) for b in reader.all()] == [_strip(b) for b in written]
    assert count_bodies(folded) == len(written)
    RunStore(folded, call_bodies=True).close()
    assert not (folded / LOG).exists()
    with sqlite3.connect(folded / BODIES) as db:
        assert db.execute("SELECT count(*) FROM calls").fetchone() == (len(written),)
    with BodyReader(folded) as reader:
        assert [_strip(b) for b in reader.all()] == [_strip(b) for b in written]


async def test_a_reader_beside_a_run_still_writing_sees_each_turns_bodies(tmp_path: Path) -> None:
    import asyncio

    run = tmp_path / "run"
    written = _old_store_bodies()
    store = RunStore(run, call_bodies=True)
    store.add_call(written[0].call, written[0])  # the bodies' files are made at the first
    await asyncio.sleep(0)
    with BodyReader(run) as reader:
        for n, body in enumerate(written[1:], 2):
            store.add_call(body.call, body)
            await asyncio.sleep(0)  # the turn ends: the log, then the line
            assert [_strip(b) for b in reader.all()] == [_strip(b) for b in written[:n]]
        store.close()  # folded under the reader's feet: it still reads the same
        assert [_strip(b) for b in reader.all()] == [_strip(b) for b in written]


def test_a_log_folded_a_few_bytes_at_a_time_folds_the_same_rows(tmp_path: Path, monkeypatch) -> None:
    # The fold reads a long run's log a chunk at a time: records cut by a chunk's end
    # are read whole with the next, and a bad record ends the log there.
    from vera.store import _bodies

    monkeypatch.setattr(_bodies, "_FOLD_CHUNK", 37)
    killed, folded, written = _killed_and_folded(tmp_path)
    with sqlite3.connect(folded / BODIES) as db:
        expected = (
            db.execute("SELECT * FROM blobs ORDER BY id").fetchall(),
            db.execute("SELECT * FROM calls ORDER BY offset").fetchall(),
        )
    log = killed / LOG
    whole = log.read_bytes()
    bad = _record(_BLOB, _msgpack.encode((10**6, b"h" * 16, b"r" + b"lost " * 50)))
    log.write_bytes(whole + bad[:-1] + bytes([bad[-1] ^ 1]) + whole[:200])
    RunStore(killed, call_bodies=True).close()
    assert not log.exists()
    with sqlite3.connect(killed / BODIES) as db:
        got = (
            db.execute("SELECT * FROM blobs ORDER BY id").fetchall(),
            db.execute("SELECT * FROM calls ORDER BY offset").fetchall(),
        )
    assert got == expected and len(expected[1]) == len(written)


def test_a_log_of_one_record_per_row_as_written_before_is_read_and_folded(tmp_path: Path) -> None:
    # Logs are now one record per turn of the loop; a run killed by a vera that wrote a
    # record per blob and per call row is read and folded the same.
    from vera.store._bodies import _CALL, _read_log

    killed, folded, written = _killed_and_folded(tmp_path)
    log = killed / LOG
    blobs, calls, used = _read_log(log.read_bytes())
    assert used == log.stat().st_size and len(calls) == len(written)
    log.write_bytes(
        b"".join(_record(_BLOB, _msgpack.encode(r)) for r in blobs)
        + b"".join(_record(_CALL, _msgpack.encode(r)) for r in calls)
    )
    with BodyReader(killed) as reader:
        assert [_strip(b) for b in reader.all()] == [_strip(b) for b in written]
    RunStore(killed, call_bodies=True).close()
    assert not log.exists()
    for name in ("blobs ORDER BY id", "calls ORDER BY offset"):
        with sqlite3.connect(killed / BODIES) as a, sqlite3.connect(folded / BODIES) as b:
            assert (
                a.execute(f"SELECT * FROM {name}").fetchall() == b.execute(f"SELECT * FROM {name}").fetchall()
            )
