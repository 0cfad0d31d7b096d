"""A damaged call bodies' file costs the bodies it holds, not the run's (`--skip-corrupt`),
and a calls.jsonl line added or removed costs its own body, not every later one's.

Real runs (the offline providers), damaged as a disk or a hand edit would, read back by
the real commands: `vera export --calls`, `vera merge`, `vera view --bundle`."""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
from pathlib import Path

import pytest

from vera.store import _bodies
from vera.store._bodylog import VLOG, _read_index, _turn

from .door import invoke, refused
from .door import run as run  # the fixture
from .door import runs as runs  # the fixture


def _turns(run: Path) -> tuple[list[int], list[tuple[int, list[bytes], list[list]]]]:
    """Where each turn record of a closed run's bodies' file begins, and what it holds."""
    path = run / VLOG
    with open(path, "rb") as f:
        closed = _read_index(f, os.fstat(f.fileno()).st_size)
    assert closed is not None
    positions = closed[0].turns
    data = path.read_bytes()
    held = []
    for pos in positions:
        length = int.from_bytes(data[pos + 1 : pos + 5], "little")
        held.append(_turn(data[pos + 9 : pos + 9 + length]))
    return positions, held


def _flip(run: Path, number: int) -> None:
    """Flip a byte inside turn record `number`'s payload (its CRC then fails)."""
    positions, _ = _turns(run)
    path = run / VLOG
    data = bytearray(path.read_bytes())
    data[positions[number] + 9 + 40] ^= 0xFF
    path.write_bytes(bytes(data))


def _lost_offsets(run: Path, number: int) -> set[int]:
    """The calls (by their line's offset) whose body needs turn `number`: held in it, or
    naming a text only it defines."""
    _, held = _turns(run)
    return _needing(held, number)


def _export(run: Path, target: Path, *extra: str) -> tuple[list[dict], str]:
    result = invoke(["export", "--calls", str(run), "-o", str(target), *extra])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in target.read_text().splitlines()], result.stderr


def _offsets(run: Path) -> list[int]:
    lines = (run / "calls.jsonl").read_bytes().splitlines(keepends=True)
    return [sum(len(x) for x in lines[:i]) for i in range(len(lines))]


def test_a_damaged_turn_record_is_refused_naming_the_way_past_it(run, tmp_path) -> None:
    _flip(run, 2)
    line = refused(invoke(["export", "--calls", str(run), "-o", str(tmp_path / "c.jsonl")]))
    # The same words as the resume warning and the --skip-corrupt note ("record 2").
    assert "call_bodies.vlog: record 2 is damaged" in line
    assert "--skip-corrupt" in line
    assert not (tmp_path / "c.jsonl").exists()
    refused(
        invoke(["merge", str(tmp_path / "merged"), str(run)]), "vlog: record 2 is damaged", "--skip-corrupt"
    )
    assert not (tmp_path / "merged").exists()


def test_skip_corrupt_loses_only_the_bodies_the_damaged_record_holds_or_defines(run, tmp_path) -> None:
    whole, _ = _export(run, tmp_path / "whole.jsonl")
    assert all(c["request"] is not None for c in whole)
    lost = _lost_offsets(run, 2)
    _flip(run, 2)
    calls, stderr = _export(run, tmp_path / "damaged.jsonl", "--skip-corrupt")
    assert len(calls) == len(whole)
    offsets = _offsets(run)
    assert 0 < len(lost) < len(calls)
    for offset, before, after in zip(offsets, whole, calls, strict=True):
        if offset in lost:
            assert after["call"] == before["call"]
            assert after["request"] is None and after["response"] is None
            assert "call_bodies.vlog is damaged at record 2" in after["no_body"]
        else:
            assert after == before  # everything else is kept, byte for byte
    warnings = [x for x in stderr.splitlines() if x.startswith("warning: ")]
    assert len(warnings) == 1, stderr  # once, with the count
    assert f"(record 2): {len(lost)} call(s) left without" in warnings[0]


def test_merge_with_skip_corrupt_carries_every_body_the_damage_spared(run, tmp_path) -> None:
    whole, _ = _export(run, tmp_path / "whole.jsonl")
    lost = len(_lost_offsets(run, 1))
    _flip(run, 1)
    out = tmp_path / "merged"
    result = invoke(["merge", str(out), str(run), "--skip-corrupt"])
    assert result.exit_code == 0, result.output
    assert sum("call_bodies.vlog is damaged (record 1)" in x for x in result.stderr.splitlines()) == 1
    merged, _ = _export(out, tmp_path / "merged.jsonl")
    assert [c["call"] for c in merged] == [c["call"] for c in whole]
    assert sum(c["request"] is None for c in merged) == lost
    assert [c for c in merged if c["request"] is not None] == [
        c for c, m in zip(whole, merged, strict=True) if m["request"] is not None
    ]


def test_the_viewer_shows_the_calls_a_damaged_record_lost_as_without_body(run, tmp_path) -> None:
    _flip(run, 2)
    bundle = tmp_path / "bundle"
    result = invoke(["view", str(run), "--bundle", str(bundle)])
    assert result.exit_code == 0, result.output
    pages = [p.read_text() for p in bundle.rglob("*.html")]
    named = [p for p in pages if "call_bodies.vlog is damaged (record 2)" in p]
    assert named  # the pages whose calls it held say so
    assert any('class="call-body"' in p for p in named)  # and show the bodies still there


def test_a_damaged_format_1_file_is_one_line_naming_skip_corrupt(
    runs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_bodies, "WRITE_FORMAT", 1)
    old = tmp_path / "old"
    assert invoke(["run", "--limit-personas", "1", "--out", str(old), "--quiet"]).exit_code == 0
    path = old / "call_bodies.sqlite"
    assert path.exists() and not (old / VLOG).exists()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE calls SET body = 'not json' WHERE offset = (SELECT MAX(offset) FROM calls)")
    db.close()
    line = refused(invoke(["export", "--calls", str(old), "-o", str(tmp_path / "c.jsonl")]))
    assert "call_bodies.sqlite: cannot read the call bodies" in line and "--skip-corrupt" in line
    calls, stderr = _export(old, tmp_path / "c.jsonl", "--skip-corrupt")
    assert calls[-1]["request"] is None and "call_bodies.sqlite could not be read" in calls[-1]["no_body"]
    assert all(c["request"] is not None for c in calls[:-1])
    assert "1 call(s) left without" in stderr


def test_a_line_removed_or_added_loses_only_its_own_body(run, tmp_path) -> None:
    whole, _ = _export(run, tmp_path / "whole.jsonl")
    path = run / "calls.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)

    # A hand edit: a line near the 10th removed, and a copy of a later line put before the line
    # before it (its body is the later line's: the copy gets none, the later line keeps
    # its own). The copy lands where the line before it was: where that line's body
    # says its call was. A body is its call's there if the length and the job match, so
    # the copy is taken where those differ (a line's length moves with its latency's
    # digits from one run to the next; a copy of a same-length line of the same job, at
    # that line's place, would be paired with that line's body: a hand edit pairing
    # cannot see through).
    def told_apart(i: int) -> bool:
        return (
            len(lines[i]) != len(lines[i + 1])
            or json.loads(lines[i])["job_id"] != json.loads(lines[i + 1])["job_id"]
        )

    # The same holds for the line removed: the line after it lands where its body says
    # its call was, so a line of the same length and job as the one removed (consecutive
    # judge calls often are) would be paired with the removed line's body. The removed
    # line is the first from the 10th that the next one is told apart from (in one CI
    # run the 10th was not, and the test failed on the run's latency digits).
    gone = next(i for i in range(10, len(lines) - 1) if told_apart(i))
    del lines[gone]
    del whole[gone]
    at = next(i for i in range(40, len(lines) - 1) if told_apart(i))
    lines.insert(at, lines[at + 1])
    path.write_bytes(b"".join(lines))
    calls, _ = _export(run, tmp_path / "edited.jsonl")
    assert len(calls) == len(whole) + 1
    copy = calls.pop(at)
    assert copy["request"] is None and copy["call"] == whole[at + 1]["call"]
    assert calls == whole  # every other call with its own body


def test_a_body_whose_line_changed_under_it_is_not_paired_with_it(run, tmp_path) -> None:
    whole, _ = _export(run, tmp_path / "whole.jsonl")
    path = run / "calls.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    jobs = [json.loads(x)["job_id"] for x in lines]
    # Line 5 given another job's id, in place (same length, same place): the body at its
    # place is the other job's call's, and must not be shown as this one's.
    other = next(j for j in jobs if j != jobs[5] and len(j) == len(jobs[5]))
    lines[5] = lines[5].replace(jobs[5].encode(), other.encode(), 1)
    path.write_bytes(b"".join(lines))
    calls, _ = _export(run, tmp_path / "edited.jsonl")
    assert calls[5]["call"]["job_id"] == other
    assert calls[5]["request"] is None
    assert calls[:5] + calls[6:] == whole[:5] + whole[6:]


def _page_numbers(run: Path, conversation: str) -> dict[tuple[str, float], int]:
    """(job id, time) -> the call's number on the conversation's page (its own calls and
    its judgements', by time)."""
    jobs = {conversation} | {
        j["id"]
        for j in map(json.loads, (run / "judgements.jsonl").read_text().splitlines())
        if j["conversation_id"] == conversation
    }
    calls = [
        c for c in map(json.loads, (run / "calls.jsonl").read_text().splitlines()) if c["job_id"] in jobs
    ]
    return {(c["job_id"], c["at"]): n for n, c in enumerate(sorted(calls, key=lambda c: c["at"]), start=1)}


def _page(run: Path, bundle: Path, conversation: str) -> str:
    result = invoke(["view", str(run), "--bundle", str(bundle)])
    assert result.exit_code == 0, result.output
    return (bundle / "runs" / "0" / "conversations" / f"{conversation}.html").read_text()


def test_the_viewer_pairs_a_body_with_its_line_as_the_export_does(run, tmp_path) -> None:
    """A line of calls.jsonl edited in place (a user agent's call given its judgement's
    id, same length, same place): the viewer used to read the body's call from the
    line at the body's place and showed the user agent's messages as the judge's call.
    Paired as the export pairs (length and job at the place, usage when moved), that call
    has no body, and the page says why."""
    path = run / "calls.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    calls = [json.loads(x) for x in lines]
    judgement = json.loads((run / "judgements.jsonl").read_text().splitlines()[0])
    conversation, judge = judgement["conversation_id"], judgement["id"]
    assert len(conversation) == len(judge)
    i = next(k for k, c in enumerate(calls) if c["job_id"] == conversation and c["role"] == "user_agent")
    lines[i] = lines[i].replace(conversation.encode(), judge.encode(), 1)
    path.write_bytes(b"".join(lines))
    page = _page(run, tmp_path / "bundle", conversation)
    numbers = _page_numbers(run, conversation)
    n = numbers[(judge, calls[i]["at"])]
    assert f'id="call-{n}"' not in page  # no body shown under the edited call
    others = [m for m in numbers.values() if m != n]
    assert all(f'id="call-{m}"' in page for m in others)  # every other call keeps its own
    note = page.split('id="calls-no-body">', 1)[1].split("</p>", 1)[0]
    assert note.startswith(f"No request or response is shown for call(s) {n}:")
    assert "calls.jsonl was changed after the run wrote it" in note


def test_the_viewer_keeps_each_body_with_its_call_when_a_line_is_added(run, tmp_path) -> None:
    """A line added before a conversation's calls moves every line after it: each body
    is still shown under its own call (paired by what it holds of its call, confirmed by
    the ones after it), not read from the place its line had."""
    path = run / "calls.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    calls = [json.loads(x) for x in lines]
    conversation = json.loads((run / "judgements.jsonl").read_text().splitlines()[-1])["conversation_id"]
    mine = [k for k, c in enumerate(calls) if c["job_id"] == conversation]
    foreign = next(k for k, c in enumerate(calls) if c["job_id"] != conversation)
    before = _page(run, tmp_path / "before", conversation)
    lines.insert(mine[2], lines[foreign])  # a stray copy of another job's call
    path.write_bytes(b"".join(lines))
    after = _page(run, tmp_path / "after", conversation)
    assert 'id="calls-no-body"' not in after
    bodies = before.split('<section id="call-bodies"', 1)[1].split("</section>", 1)[0]
    assert bodies in after  # every body, under the same call, byte for byte


def _as_killed(run: Path) -> bytes:
    """The bodies' file as a run killed before closing would leave it: no index, no
    trailer (every turn record whole)."""
    path = run / VLOG
    with open(path, "rb") as f:
        closed = _read_index(f, os.fstat(f.fileno()).st_size)
    assert closed is not None
    data = path.read_bytes()[: closed[1]]
    path.write_bytes(data)
    return data


def test_a_killed_runs_file_damaged_in_the_middle_costs_only_that_records_bodies(run, tmp_path) -> None:
    """No index (a kill): the readers rebuild it by reading the records, and read on past
    a damaged one to the next whole record, instead of hiding every body after it."""
    whole, _ = _export(run, tmp_path / "whole.jsonl")
    lost = _lost_offsets(run, 2)
    killed = _as_killed(run)
    positions = _scan_positions(killed)
    damaged = bytearray(killed)
    damaged[positions[2] + 9 + 40] ^= 0xFF
    (run / VLOG).write_bytes(bytes(damaged))
    calls, stderr = _export(run, tmp_path / "damaged.jsonl", "--skip-corrupt")
    assert len(calls) == len(whole)
    assert 0 < len(lost) < len(calls)
    assert any(o > max(lost) for o in _offsets(run))  # whole records after the damage
    kept = 0
    for offset, before, after in zip(_offsets(run), whole, calls, strict=True):
        if offset in lost:
            assert after["request"] is None and after["call"] == before["call"]
            assert "call_bodies.vlog is damaged at record 2" in after["no_body"]
        else:
            assert after == before  # byte for byte, the calls after the damage too
            kept += 1
    assert kept == len(calls) - len(lost)
    assert f"(record 2): {len(lost)} call(s) left without" in stderr
    assert (run / VLOG).read_bytes() == bytes(damaged)  # a reader changes nothing


def test_a_torn_tail_is_still_where_a_killed_runs_file_ends(run) -> None:
    from vera.store._bodylog import LogReader, Row

    killed = _as_killed(run)
    positions = _scan_positions(killed)
    (run / VLOG).write_bytes(killed[: positions[-1] + 20])  # the last record cut short
    reader = LogReader(run)
    try:
        rows = list(reader.rows(skip=True))
        assert reader._index.damaged == [] and len(reader._index.turns) == len(positions) - 1
    finally:
        reader.close()
    assert all(isinstance(r, Row) for r in rows)  # no gap: nothing read as damaged
    assert len(rows) == sum(len(_turn(killed[p + 9 : q])[2]) for p, q in itertools.pairwise(positions))


def test_bytes_inside_a_damaged_payload_are_not_taken_for_the_next_record() -> None:
    """A whole record inside a damaged record's payload (an old copy, or chance) whose
    first text id does not continue the numbering is not where reading resumes."""
    import zlib

    import msgspec
    import zstandard

    from vera.store._bodylog import _HEAD, _TURN, _TURN_HEAD, MAGIC, _Builder, _record

    def turn(first: int, texts: list[bytes], offset: int) -> bytes:
        row = [offset, 10, "c", None, "job", [first << 2 | 1], {}, 0, False, None]
        payload = zstandard.ZstdCompressor().compress(msgspec.msgpack.encode((texts, [row])))
        return _record(_TURN, _TURN_HEAD.pack(first, len(texts)) + payload)

    one = turn(1, [b"a", b"b"], 0)
    stale = turn(1, [b"x"], 11)  # whole, CRC right, but numbering from 1 again
    body = _TURN_HEAD.pack(3, 2) + b"\x00" * 5 + stale + b"\x00" * 5
    bad = _HEAD.pack(_TURN, len(body), zlib.crc32(body) ^ 1) + body
    three = turn(5, [b"e"], 33)
    data = MAGIC + one + bad + three
    b = _Builder()
    end = b.read(data[len(MAGIC) :], len(MAGIC))
    assert end == len(data)
    ix = b.index
    assert ix.turns == [len(MAGIC), len(MAGIC) + len(one), len(MAGIC) + len(one) + len(bad)]
    assert ix.first_ids == [1, 3, 5] and ix.damaged == [1] and ix.next_id == 6
    assert ix.conversations == {"c": [0, 2]}


def test_a_damaged_cut_still_keeps_the_rows_it_cut_from_being_calls() -> None:
    """A cut (written by a resume: rows before it at or past its size are not calls)
    damaged in the middle: its size is lost, but lines are written in order, so no call
    before the first row after the damage has its line at or past that row's: the rows
    there are not calls (else the call asked again on resume, at the same place, could
    be given the body of the one the kill lost)."""
    import struct
    import zlib

    import msgspec
    import zstandard

    from vera.store._bodylog import _CUT, _HEAD, _TURN, _TURN_HEAD, MAGIC, _Builder, _record

    def turn(first: int, offsets: list[int]) -> bytes:
        rows: list[list[object]] = [
            [o, 9, "c", None, "job", [first << 2 | 1], {}, 0, False, None] for o in offsets
        ]
        payload = zstandard.ZstdCompressor().compress(msgspec.msgpack.encode(([b"t"], rows)))
        return _record(_TURN, _TURN_HEAD.pack(first, 1) + payload)

    cut = struct.pack("<Q", 10)
    bad = _HEAD.pack(_CUT, len(cut), zlib.crc32(cut) ^ 1) + cut
    data = MAGIC + turn(1, [0, 10, 20]) + bad + turn(2, [10, 20])
    b = _Builder()
    assert b.read(data[len(MAGIC) :], len(MAGIC)) == len(data)
    assert b.index.damaged == [1]
    assert b.index.cuts == [(2, 10)]  # turns before 2: rows at or past 10 are not calls
    assert b.index.calls_end == 30


def test_a_resume_keeps_the_records_after_a_damaged_one(run, tmp_path) -> None:
    """A writer opening a killed run's file damaged in the middle cuts only a torn tail:
    the damaged record's bytes stay as they are and every whole record after it."""
    from vera.store._bodylog import BodyLog

    killed = _as_killed(run)
    calls_size = (run / "calls.jsonl").stat().st_size
    positions = _scan_positions(killed)
    assert len(positions) >= 3
    damaged = bytearray(killed)
    damaged[positions[1] + 9 + 40] ^= 0xFF
    (run / VLOG).write_bytes(bytes(damaged) + killed[positions[-1] : positions[-1] + 20])  # and torn
    log = BodyLog(run / VLOG, calls_size=calls_size)
    _, last_texts, _ = _turn(killed[positions[-1] + 9 :])
    first_last = int.from_bytes(killed[positions[-1] + 9 : positions[-1] + 13], "little")
    assert log._next == first_last + len(last_texts)  # the numbering goes on
    log.close()
    assert (run / VLOG).read_bytes().startswith(bytes(damaged))  # only the torn tail cut


def _scan_positions(data: bytes) -> list[int]:
    from vera.store._bodylog import MAGIC, _scan

    return [len(MAGIC) + pos for _, pos, _ in _scan(data[len(MAGIC) :], 0)]


def _held(data: bytes) -> list[tuple[int, list[bytes], list[list]]]:
    """What each turn record of a bodies' file holds, in order (read by scanning)."""
    from vera.store._bodylog import _TURN, MAGIC, _scan

    return [_turn(p) for kind, _, p in _scan(data[len(MAGIC) :], 0) if kind == _TURN]


def _needing(held: list[tuple[int, list[bytes], list[list]]], number: int) -> set[int]:
    """The calls (by their line's offset) whose body is held in turn `number` or names a
    text only it defines."""
    first, texts, _ = held[number]
    inside = range(first, first + len(texts))
    lost = set()
    for n, (_, _, rows) in enumerate(held):
        for row in rows:
            _, _, _, _, _, messages, _, schema, _, reply = row
            ids = [m >> 2 for m in messages] + [schema] + ([reply[0]] if reply else [])
            if n == number or any(i in inside for i in ids if i):
                lost.add(row[0])
    return lost


@pytest.mark.slow
def test_a_killed_run_damaged_in_the_middle_resumes_and_loses_only_that_records_bodies(tmp_path) -> None:
    """A real run killed (SIGKILL, so its bodies' file has no index), a byte flipped in a
    record in the middle, resumed: the resume keeps every whole record after the damage
    and the damaged bytes as they are; export --skip-corrupt and the viewer then show every
    call's exact body but those the damaged record held or defined, which say why."""
    import signal
    import subprocess
    import sys
    import time

    from vera.store._bodylog import MAGIC, _scan

    from .fakes.sweep import KEY, Faults, SweepServer, write_sweep_config

    env = {**os.environ, "SWEEP_TEST_KEY": KEY}
    out = tmp_path / "run"
    with SweepServer(faults=Faults(latency=0.02)) as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=4, max_concurrency=4)
        vera = [sys.executable, "-m", "vera", "run", "--config", str(cfg), "--quiet"]
        proc = subprocess.Popen([*vera, "--out", str(out)], env=env, stdout=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and proc.poll() is None:
                calls = out / "calls.jsonl"
                if calls.exists() and calls.read_bytes().count(b"\n") >= 60:
                    break
                time.sleep(0.02)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        assert proc.returncode == -signal.SIGKILL, "the run ended before it was killed"
        killed = (out / VLOG).read_bytes()
        assert not killed.endswith(b"VBINDEX\n")  # no index: the readers rebuild it
        whole = [(k, p, len(x)) for k, p, x in _scan(killed[len(MAGIC) :], 0)]
        held = _held(killed)
        assert len(held) >= 6
        number = len(held) // 2
        pos = len(MAGIC) + whole[number][1]
        lost = _needing(held, number)
        before, _ = _export(out, tmp_path / "before.jsonl")
        written = (out / "calls.jsonl").read_bytes()
        written = written[: written.rfind(b"\n") + 1]  # the lines the kill left whole
        by_offset = dict(zip(_offsets(out), before, strict=False))

        damaged = bytearray(killed)
        damaged[pos + 9 + 30] ^= 0xFF
        (out / VLOG).write_bytes(bytes(damaged))
        done = subprocess.run(
            [*vera, "--resume", str(out)], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
    # Said once, as a warning: the run went on after the damage.
    said = [x for x in done.stderr.splitlines() if "call_bodies.vlog" in x]
    assert len(said) == 1 and said[0].startswith("warning: ")
    assert f"record {number} is damaged; the run goes on after it" in said[0]
    assert f"vera export --calls {out} --skip-corrupt" in said[0]

    end = len(MAGIC) + whole[-1][1] + 9 + whole[-1][2]  # the last whole record's end
    assert (out / VLOG).read_bytes()[:end] == bytes(damaged[:end])  # kept, damaged bytes too
    assert (out / "calls.jsonl").read_bytes().startswith(written)
    calls, stderr = _export(out, tmp_path / "after.jsonl", "--skip-corrupt")
    offsets = _offsets(out)
    assert len(calls) == len(offsets)
    old = [o for o in offsets if o < len(written)]
    assert 0 < len(lost) < len(old)
    assert any(o > max(lost) and o not in lost for o in old)  # bodies after the damage
    for offset, call in zip(offsets, calls, strict=True):
        if offset in lost:
            assert call["request"] is None and call["call"] == by_offset[offset]["call"]
            assert f"call_bodies.vlog is damaged at record {number}" in call["no_body"]
        elif offset in by_offset:
            assert call == by_offset[offset]  # byte for byte
        else:
            assert call["request"] is not None  # made by the resume
    assert f"(record {number}): {len(lost)} call(s) left without" in stderr

    bundle = tmp_path / "bundle"
    result = invoke(["view", str(out), "--bundle", str(bundle)])
    assert result.exit_code == 0, result.output
    pages = [p.read_text() for p in (bundle / "runs" / "0" / "conversations").glob("*.html")]
    assert sum(p.count('class="call-body"') for p in pages) == len(calls) - len(lost)
    said = [p for p in pages if f"call_bodies.vlog is damaged (record {number})" in p]
    assert said and all('id="calls-no-body"' in p for p in said)
