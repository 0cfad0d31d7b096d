"""A sequential gate's records (gate.json, sequence.jsonl) and what shows them: the
interval after each wave as a plot, a summary page, and the note `vera compare` gives
for a gate's run.

The gate itself runs in `vera.app._gate`; these records are the report layer's so that
the card, compare and the viewer can read a gate's run without the app.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from vera.errors import DataError, UserError
from vera.inputs import BASE, ENGLISH, active, tr, ui_label, use_strings
from vera.records import OVERALL
from vera.report.card._schema import SequentialCard, SequentialLookCard
from vera.report.shared._numbers import MISSING, fixed
from vera.report.shared._table import Table
from vera.stats import (
    NOT_RATED_BASELINE,
    NOT_RATED_CANDIDATE,
    NOT_RATED_EITHER,
    UNDECIDED,
    SequenceRow,
    Status,
)

# The reasons of rows left out of a gate's verdict (the baseline never rated them).
LEFT_OUT = frozenset({NOT_RATED_BASELINE, NOT_RATED_EITHER})

GATE_FILE = "gate.json"
SEQUENCE_FILE = "sequence.jsonl"
SEQUENCE_PAGE = "sequence.md"
SEQUENCE_PLOT = "sequence.png"


class GateSettings(msgspec.Struct, frozen=True, kw_only=True):
    """What defines a gate; a resume must give the same."""

    baseline_run_id: str
    baseline_path: str
    candidate: str
    baseline_chatbot: str
    margin: float
    alpha: float
    wave: int
    order_seed: int
    max_conversations: int | None
    # The boundary: "asymptotic" or "betting" (confidence sequences), or "spending" (the
    # group-sequential α-spending boundary, vera.stats.sequential.spending_difference).
    method: str
    # The units in the order they are drawn: [persona, user-agent, replicate].
    order: list[tuple[str, str, int]]
    # The spending function of method "spending" (vera.stats.groupseq): obf, pocock, hsd:γ.
    spending: str | None = None


class GateLook(msgspec.Struct, frozen=True, kw_only=True):
    """One line of sequence.jsonl: the interval after a wave."""

    wave: int
    drawn: int  # units planned so far
    units: int  # units whose candidate conversation was judged (the sequence's n)
    available: int  # units of the baseline
    rows: list[SequenceRow]
    verdict: Status
    stopped: str = ""  # why the gate stopped here ("" while it goes on)
    # The rows left out of the verdict, dimension → why (vera.stats.left_out_rows: the
    # baseline never rated them), so every place that shows the rows can name them;
    # absent when none are, so those lines keep their bytes.
    left_out: dict[str, str] | msgspec.UnsetType = msgspec.UNSET
    # True when this look held its rows to `vera compare --gate`'s edge rule
    # (vera.stats.edge_interval; each row it widened says so, `SequenceRow.edge`);
    # absent from the looks of gates made before the rule, which a resume keeps.
    edge_rule: bool | msgspec.UnsetType = msgspec.UNSET
    # The units drawn that have no judged conversation because their work failed for
    # infrastructure reasons (the candidate's service erred, timed out, was down; or a
    # wave stopped on a fatal provider error before running them): counted, never scored
    # as the chatbot's. Absent when none did, so those lines keep their bytes.
    failed: int | msgspec.UnsetType = msgspec.UNSET


def failed_units(look: GateLook) -> int:
    """A look's failed units (0 for a look without any, or one recorded before they were)."""
    return look.failed if isinstance(look.failed, int) else 0


def over_allowance(failed: int, drawn: int, allow_failures: float) -> bool:
    """Whether `failed` of the `drawn` units is more than `--allow-failures` allows: a share
    of the units drawn so far, as `vera run --allow-failures` is a share of its work."""
    return failed > 0 and (drawn <= 0 or failed / drawn > allow_failures)


class GateRecord(msgspec.Struct, frozen=True, kw_only=True):
    settings: GateSettings
    verdict: Status | None = None
    stopped: str = ""
    # The first wave held to `vera compare --gate`'s edge rule: 1 for a gate started with
    # it; a later wave for a gate started before it and resumed (the rule is a property
    # of the reading, so it applies from the resume's next look); None while no look has.
    edge_rule_from_wave: int | None = None
    # The `--allow-failures` the gate closed with, when units of its last look had failed
    # and were left out (within it); absent otherwise. A policy, not a setting of the
    # gate: a resume may change it.
    allow_failures: float | msgspec.UnsetType = msgspec.UNSET


def left_out_recorded(look: GateLook) -> bool:
    """Whether a look records the rows it left out of the verdict. Looks have recorded
    them since `left_out` came (absent when none was), and every look written since the
    edge rule, which came after it, records `edge_rule`; a look with neither was taken
    before `left_out` came (or in the few hours between the two, which cannot be told
    apart), so its rows left out, if any, are unknown, and never shown as none."""
    return isinstance(look.left_out, dict) or look.edge_rule is not msgspec.UNSET


def left_out_line(look: GateLook, name: Callable[[str], str]) -> str:
    """What a look says of the rows left out of its verdict: named with why, the
    sentence that its gate predates left-out accounting, or "" when none was left out
    (a leading space where the language has one)."""
    if not left_out_recorded(look):
        return tr("card.seq_left_out_unrecorded")
    return left_out_words(look.left_out, name)


def look_verdict_words(looks: Sequence[GateLook] | Sequence[SequentialLookCard], i: int) -> str:
    """Look `i`'s verdict in words; a settled one with looks after it is marked held: the
    gate took no verdict there, since units had failed beyond --allow-failures and were
    retried first (the later looks are the reading it went on with)."""
    verdict = looks[i].verdict
    said = verdict_words(verdict)
    if verdict != UNDECIDED and i < len(looks) - 1:
        said += tr("card.seq_verdict_held")
    return said


def failed_words(failed: int, drawn: int, allow_failures: float) -> str:
    """The sentence saying how many units drawn failed and were left out, within
    `--allow-failures` in `vera run`'s words ("within 10.0% failed, --allow-failures
    0.2"), a leading space where the language has one; "" when none failed."""
    if failed <= 0:
        return ""
    share = f"{failed / drawn:.1%}" if drawn else "100%"
    return tr("card.seq_failed", failed=failed, drawn=drawn, share=share, allow=f"{allow_failures:g}")


def edge_waves(looks: list[GateLook]) -> list[int]:
    """The waves at which the edge rule widened some row's interval."""
    return [look.wave for look in looks if any(r.edge for r in look.rows)]


def edge_words(waves: list[int]) -> str:
    """The sentence naming the waves the edge rule widened (a leading space where the
    language has one); "" when it widened none."""
    if not waves:
        return ""
    return tr(
        "card.seq_edge",
        waves=", ".join(str(w) for w in waves),
        wave_word=tr("card.seq_edge_wave" if len(waves) == 1 else "card.seq_edge_waves"),
    )


def read_gate(run_dir: str | Path) -> GateRecord | None:
    """A gate's settings and verdict, or None when the run is not a gate's."""
    path = Path(run_dir) / GATE_FILE
    if not path.is_file():
        return None
    data = read_gate_file(path)
    try:
        return msgspec.json.decode(data, type=GateRecord)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise UserError(f"{path}: not a gate's settings ({exc})") from None


def read_gate_file(path: Path) -> bytes:
    """A gate file's bytes; one the user may not read (another user's run) is one line
    saying so, not a traceback and not "not a gate's settings"."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise DataError(str(path), f"cannot read: {exc.strerror or exc}") from None


def read_sequence(run_dir: str | Path) -> list[GateLook]:
    """The looks so far; a last line a crash cut short is left out (its wave is redone
    from the run's records, without a call)."""
    path = Path(run_dir) / SEQUENCE_FILE
    if not path.is_file():
        return []
    looks = []
    lines = read_gate_file(path).splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            looks.append(msgspec.json.decode(line, type=GateLook))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            if i == len(lines) - 1:
                break
            raise UserError(f"{path}:{i + 1}: not a gate look ({exc})") from None
    return looks


def sequential_note(run_dir: str | Path) -> str | None:
    """One line for `vera compare`: this run is a sequential gate's candidate, how far
    it went and why it stopped; None for an ordinary run."""
    seq = sequential_card(run_dir)
    return None if seq is None else sequential_note_of(run_dir, seq)


def sequential_note_of(run_dir: str | Path, seq: SequentialCard) -> str:
    """`sequential_note` from what the card (or a comparison's run) holds of the gate."""
    last = seq.looks[-1] if seq.looks else None
    where = (
        f"{seq.units} of {seq.available} units after {last.wave} wave{'' if last.wave == 1 else 's'}"
        if last is not None
        else "no wave yet"
    )
    verdict = seq.verdict.upper()
    # Why it stopped in the card's English words (a recorded reason holds brackets of
    # its own, which would nest in the note's).
    with use_strings(ENGLISH):
        said = why_stopped(seq.verdict, seq.stopped)
        why = f" ({said})" if said else ""
    steps = [
        f"{look.units}: [{fixed(look.lo, 1)}, {fixed(look.hi, 1)}]"
        for look in seq.looks
        if look.lo is not None and look.hi is not None
    ]
    path = "; Overall's interval after each wave (units: interval) " + ", ".join(steps) if steps else ""
    # English, as the rest of the note; the spending boundary names its function.
    boundary = f"{seq.method} sequence"
    if seq.method == "spending":
        boundary = "α-spending boundary" + (f" {seq.spending}" if isinstance(seq.spending, str) else "")
    return (
        f"{run_dir}: a sequential gate's run (vera gate, margin {seq.margin:g}, alpha {seq.alpha:g}, "
        f"{boundary}): {where}, {verdict}{why}{path}; its units are a random subset of "
        f"{seq.baseline_path}'s, so a fixed comparison of it covers only those units"
    )


def sequential_failed_note(run_dir: str | Path) -> str | None:
    """For `vera compare`: the line the gate printed for the units it left out as failed
    (how many of those drawn, why, within which --allow-failures), in the active pack's
    words; None for an ordinary run or a gate none of whose units failed."""
    seq = sequential_card(run_dir)
    return None if seq is None else failed_note_of(seq)


def failed_note_of(seq: SequentialCard) -> str | None:
    """`sequential_failed_note` from what the card (or a comparison's run) holds."""
    if not isinstance(seq.failed, int) or seq.failed <= 0:
        return None
    allowed = seq.allow_failures if isinstance(seq.allow_failures, float) else 0.0
    # As the card counts them: the units judged and the ones that failed were all drawn.
    return failed_words(seq.failed, seq.units + seq.failed, allowed).strip()


def sequential_card(run_dir: str | Path) -> SequentialCard | None:
    """What the card says of a gate's run (None for any other run)."""
    record = read_gate(run_dir)
    if record is None:
        return None
    looks = read_sequence(run_dir)
    s = record.settings
    last = looks[-1] if looks else None
    out = []
    # The rows the last look holds UNDECIDED for want of a rating, named on the card.
    not_rated = [r.dimension for r in last.rows if r.reason] if last is not None else []
    for look in looks:
        row = next((r for r in look.rows if r.dimension == OVERALL), None)
        out.append(
            SequentialLookCard(
                wave=look.wave,
                units=look.units,
                diff=None if row is None else row.diff,
                lo=None if row is None else row.lo,
                hi=None if row is None else row.hi,
                verdict=look.verdict,
            )
        )
    return SequentialCard(
        baseline_run_id=s.baseline_run_id,
        baseline_path=s.baseline_path,
        candidate=s.candidate,
        margin=s.margin,
        alpha=s.alpha,
        method=s.method,
        spending=s.spending if s.method == "spending" and s.spending else msgspec.UNSET,
        wave=s.wave,
        verdict=record.verdict or "running",
        stopped=record.stopped,
        units=last.units if last is not None else 0,
        available=last.available if last is not None else len(s.order),
        looks=out,
        not_rated=not_rated or msgspec.UNSET,
        left_out=last.left_out if last is not None else msgspec.UNSET,
        left_out_unrecorded=True if last is not None and not left_out_recorded(last) else msgspec.UNSET,
        edge_waves=edge_waves(looks) or msgspec.UNSET,
        failed=(failed_units(last) or msgspec.UNSET) if last is not None else msgspec.UNSET,
        allow_failures=record.allow_failures if last is not None and failed_units(last) else msgspec.UNSET,
    )


def verdict_words(verdict: str) -> str:
    """A recorded verdict ("worse", "not worse", "undecided", "running") in the card's
    language; one vera has no words for, upper-cased as recorded."""
    key = f"card.seq_{verdict.replace(' ', '_')}"
    return tr(key) if key in BASE else verdict.upper()


def not_rated_words(reason: str) -> str:
    """Why a gate's row has no interval, as recorded ("not rated in the candidate", "not
    rated in the baseline", "not rated in either run": vera.report.compare._gate), in
    the card's language; one vera has no words for stays as recorded."""
    key = f"card.seq_{reason.replace(' ', '_')}"
    return tr(key) if key in BASE else reason


def with_why(words: str, why: str) -> str:
    """`words` with why after them in brackets, as the card's language writes brackets
    (card.seq_why: "UNDECIDED (not rated in the candidate)", "未定（候选中未评分）"): a
    Chinese line keeps its full-width brackets, as the pack's other texts do."""
    return f"{words}{tr('card.seq_why', why=why)}"


def row_verdict_words(status: str, reason: str | None) -> str:
    """A gate row's status in the card's language; a row without an interval says why
    ("UNDECIDED (not rated in the candidate)"), and a row left out of the verdict has
    none ("– (not rated in the baseline)"), in `vera compare --gate`'s words."""
    words = MISSING if reason in LEFT_OUT else verdict_words(status)
    return with_why(words, not_rated_words(reason)) if reason else words


def shown_rows(look: GateLook) -> list[SequenceRow]:
    """A look's rows as the printout and sequence.md show them: those compared and,
    before Overall, those left out of the verdict with why (no interval; shown only,
    their status is no part of the look's verdict)."""
    left = look.left_out if isinstance(look.left_out, dict) else {}
    out = [r for r in look.rows if r.dimension != OVERALL]
    out += [
        SequenceRow(dimension=d, diff=None, lo=None, hi=None, status=UNDECIDED, reason=why)
        for d, why in left.items()
    ]
    return out + [r for r in look.rows if r.dimension == OVERALL]


def left_out_words(left_out: dict[str, str] | msgspec.UnsetType, name: Callable[[str], str]) -> str:
    """The sentence naming the rows left out of the verdict, each with why, the
    dimension as `name` shows it (a leading space where the language has one); "" when
    none is."""
    if not isinstance(left_out, dict) or not left_out:
        return ""
    rows = tr("card.list_sep").join(with_why(name(d), not_rated_words(why)) for d, why in left_out.items())
    return tr("card.seq_left_out", rows=rows)


def why_stopped(verdict: str, stopped: str) -> str:
    """Why a gate stopped, as `stopped_words` says it, or "" when that would only repeat
    the verdict: a WORSE or NOT WORSE verdict is one the gate settled ("settled: WORSE"
    after "WORSE" says nothing more)."""
    if not stopped or stopped == f"settled: {verdict.upper()}":
        return ""
    return stopped_words(stopped)


def stopped_words(stopped: str) -> str:
    """Why a gate stopped, as `vera.app._gate` records it, in the card's language; a
    reason vera has no words for stays as recorded."""
    if stopped.startswith("settled: "):
        return tr("card.seq_settled", verdict=verdict_words(stopped.removeprefix("settled: ").lower()))
    if stopped == "out of budget (--max-cost)":
        return tr("card.seq_out_of_budget")
    if stopped.startswith("out of units"):
        return tr("card.seq_out_of_units")
    if m := re.fullmatch(r"out of conversations \(--max-conversations (\d+)\)", stopped):
        return tr("card.seq_out_of_conversations", n=m.group(1))
    if stopped.startswith("the run stopped: "):
        state = stopped.removeprefix("the run stopped: ")
        # The run's state (stopped, waited) as the card names it; English keeps the
        # recorded word, as it always has.
        key = f"card.state_{state}"
        return tr("card.seq_run_stopped", state=tr(key) if key in BASE and not active().english else state)
    return stopped


def _method_words(method: str, spending: str | msgspec.UnsetType | None = None) -> str:
    """The boundary in words; with the spending boundary, its spending function too."""
    key = f"card.seq_method_{method}"
    words = tr(key) if key in BASE else f"{method} confidence sequence"
    if isinstance(spending, str) and spending:
        words += tr("card.seq_spending_function", spending=spending)
    return words


def sequential_text(seq: SequentialCard) -> str:
    """One paragraph: the question, where the gate stopped and why, units used."""
    why = why_stopped(seq.verdict, seq.stopped)
    text = tr(
        "card.seq_text_one" if len(seq.looks) == 1 else "card.seq_text",
        candidate=seq.candidate,
        run=seq.baseline_run_id,
        margin=f"{seq.margin:g}",
        alpha=f"{seq.alpha:g}",
        method=_method_words(seq.method, seq.spending),
        wave=seq.wave,
        verdict=verdict_words(seq.verdict),
        why=tr("card.seq_why", why=why) if why else "",
        waves=len(seq.looks),
        units=seq.units,
        available=seq.available,
        share=tr("card.seq_share", share=f"{seq.units / seq.available:.0%}") if seq.available else "",
    )
    # The table below shows Overall only: the rows left out of the verdict are named (or,
    # for a gate from before they were recorded, that they are unknown).
    text += left_out_words(seq.left_out, ui_label)
    if seq.left_out_unrecorded is True:
        text += tr("card.seq_left_out_unrecorded")
    if isinstance(seq.failed, int):
        allowed = seq.allow_failures if isinstance(seq.allow_failures, float) else 0.0
        text += failed_words(seq.failed, seq.units + seq.failed, allowed)
    text += edge_words(seq.edge_waves if isinstance(seq.edge_waves, list) else [])
    if isinstance(seq.not_rated, list) and seq.not_rated:
        # The table below shows Overall only: the rows that held the gate UNDECIDED for
        # want of a rating are named here, with why.
        text += tr(
            "card.seq_not_rated_rows",
            rows=", ".join(ui_label(d) for d in seq.not_rated),
            verdict=row_verdict_words("undecided", NOT_RATED_CANDIDATE),
        )
    return text


def sequential_table(seq: SequentialCard) -> Table:
    """Overall's interval after each wave, and the verdict it gave."""
    rows = []
    for i, x in enumerate(seq.looks):
        ci = f"[{fixed(x.lo, 1)}, {fixed(x.hi, 1)}]" if x.lo is not None and x.hi is not None else "–"
        est = fixed(x.diff, 1) if x.diff is not None else "–"
        units = tr("card.seq_units_of", units=x.units, available=seq.available)
        rows.append([str(x.wave), units, est, ci, look_verdict_words(seq.looks, i)])
    return Table(
        [
            tr("col.seq_wave"),
            tr("col.seq_units"),
            tr("col.seq_overall"),
            tr("col.seq_interval"),
            tr("col.seq_verdict"),
        ],
        rows,
        caption=tr("card.seq_caption", margin=f"{seq.margin:g}")
        + tr("card.seq_levels", alpha=f"{seq.alpha:g}", half=f"{seq.alpha / 2:g}"),
    )


def sequence_page(record: GateRecord, looks: list[GateLook]) -> str:
    """sequence.md: the gate's settings, where and why it stopped, and every look, in the
    active language (the run's locale pack: `vera.app._gate` sets it)."""
    s = record.settings
    last = looks[-1] if looks else None
    verdict = verdict_words(record.verdict or "running")
    why = why_stopped(record.verdict or "running", record.stopped)
    stop = tr("page.seq_stop", why=why) if why else ""
    used = tr("page.seq_used", units=last.units, available=last.available) if last is not None else "."
    if last is not None and (failed := failed_units(last)):
        allowed = record.allow_failures if isinstance(record.allow_failures, float) else 0.0
        used += failed_words(failed, last.drawn, allowed)
    lines = [
        f"# {tr('col.sequential_gate')}",
        "",
        tr(
            "page.seq_settings",
            candidate=s.candidate,
            run=s.baseline_run_id,
            chatbot=s.baseline_chatbot,
            margin=f"{s.margin:g}",
            alpha=f"{s.alpha:g}",
            wave=s.wave,
            method=_method_words(s.method, s.spending if s.method == "spending" else None),
            seed=s.order_seed,
        ),
        "",
        tr("page.seq_verdict", verdict=verdict) + stop + used,
        "",
        f"![{tr('card.seq_plot_alt')}](plots/{SEQUENCE_PLOT})",
        "",
        tr("page.seq_looks_header"),
        "|---|---|---|---|---|",
    ]
    for i, look in enumerate(looks):
        row = next((r for r in look.rows if r.dimension == OVERALL), None)
        est = fixed(row.diff, 1) if row is not None and row.diff is not None else "–"
        ci = (
            f"[{fixed(row.lo, 1)}, {fixed(row.hi, 1)}]"
            if row is not None and row.lo is not None and row.hi is not None
            else "–"
        )
        units = tr("card.seq_units_of", units=look.units, available=look.available)
        if failed := failed_units(look):
            units += tr("card.seq_units_failed", failed=failed)
        lines.append(f"| {look.wave} | {units} | {est} | {ci} | {look_verdict_words(looks, i)} |")
    if widened := edge_words(edge_waves(looks)):
        lines += ["", widened.strip()]
    if last is not None:
        lines += ["", tr("page.seq_last_look"), "", tr("page.seq_rows_header"), "|---|---|---|"]
        for r in shown_rows(last):
            ci = f"[{fixed(r.lo, 1)}, {fixed(r.hi, 1)}]" if r.lo is not None and r.hi is not None else "–"
            lines.append(f"| {ui_label(r.dimension)} | {ci} | {row_verdict_words(r.status, r.reason)} |")
        if left := left_out_line(last, ui_label):
            lines += ["", left.strip()]
    return "\n".join(lines) + "\n"
