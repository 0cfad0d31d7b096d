"""`vera agreement --users RUN_DIR`: how far the simulated-user checks agree with the
clinicians who rated the simulated users' realism in `vera review` (docs/realism.md).

A rated conversation is *unrealistic* to the clinicians when the mean of its raters'
latest realism ratings (1–5) is at most `unrealistic_at` (2 by default: "not at all" or
"hardly"). Each checker is then set against them over the rated conversations it
checked: the model check where the run made one, and the offline heuristic on every
rated conversation. Agreement is the share of conversations both call the same way,
with Cohen's kappa (chance-corrected) and the two-by-two table, so a reader sees
whether the check misses what clinicians see or flags what they do not.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path

import msgspec

from vera.errors import UserError
from vera.inputs import ENGLISH, HEURISTIC, USER_CHECK_COLUMNS, heuristic_check, tr, ui_strings, use_strings
from vera.records import LocaleInfo, UserCheck
from vera.report.shared._diagnostics import persona_columns
from vera.report.shared._realism import model_checks
from vera.report.shared._table import Table
from vera.stats import cohen_kappa
from vera.store import (
    HUMAN_RATINGS,
    check_transcripts,
    latest_human_ratings,
    open_run,
    read_human_ratings_numbered,
)

UNREALISTIC_AT = 2


class CheckerAgreement(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One checker against the clinicians: the two-by-two counts over the conversations
    both judged, the share they agree on (0–1) and Cohen's kappa."""

    checker: str  # "model" or "heuristic"
    n: int
    both_flagged: int  # flagged, and unrealistic to the clinicians
    check_only: int  # flagged, realistic to the clinicians
    clinicians_only: int  # not flagged, unrealistic to the clinicians
    neither: int
    percent_agreement: float | None
    cohen_kappa: float | None
    mean_realism_flagged: float | None  # the clinicians' mean rating of flagged ones
    mean_realism_not_flagged: float | None


class UserCheckAgreement(msgspec.Struct, frozen=True, kw_only=True):
    run_id: str
    unrealistic_at: int
    n_rated: int  # conversations with at least one realism rating
    n_raters: int
    n_unrealistic: int
    checkers: list[CheckerAgreement]
    # The run's locale pack, for the words of its table (as its card's); not in the JSON,
    # which keeps the figures and the records' values.
    pack: LocaleInfo | None = None

    def to_builtins(self) -> object:
        out = msgspec.to_builtins(self)
        del out["pack"]
        return out


def user_check_agreement(run_dir: str | Path, *, unrealistic_at: int = UNREALISTIC_AT) -> UserCheckAgreement:
    root = Path(run_dir)
    records = open_run(root)
    numbered = read_human_ratings_numbered(root)
    check_transcripts(root / HUMAN_RATINGS, numbered, records)
    rated = [h for h in latest_human_ratings([h for _, h in numbered]) if h.realism is not None]
    if not rated:
        raise UserError(
            f"{root / HUMAN_RATINGS}: no realism rating of a simulated user "
            f"(rate them with `vera review {run_dir} --rater NAME`)"
        )
    scores: dict[str, list[int]] = defaultdict(list)
    for h in rated:
        if h.conversation_id in records.conversations and h.realism is not None:
            scores[h.conversation_id].append(h.realism)
    if not scores:
        raise UserError(f"{root / HUMAN_RATINGS}: no rated conversation is in this run")
    mean = {cid: statistics.fmean(v) for cid, v in scores.items()}
    unrealistic = {cid: m <= unrealistic_at for cid, m in mean.items()}
    models = {
        cid: c
        for cid, c in model_checks(records.judgement_heads().values()).items()
        if c.status == "complete"
    }
    values, _ = persona_columns(records.manifest, USER_CHECK_COLUMNS)
    heuristic: dict[str, UserCheck] = {}
    for cid in sorted(scores):
        conv = records.read_conversation(cid)
        fields = dict(values.get(conv.persona, {})) | (conv.annotations or {})
        heuristic[cid] = heuristic_check(conv.turns, fields)
    checkers = []
    if any(cid in models for cid in scores):
        checkers.append(_against("model", {c: models[c] for c in scores if c in models}, unrealistic, mean))
    checkers.append(_against(HEURISTIC, heuristic, unrealistic, mean))
    return UserCheckAgreement(
        run_id=records.manifest.run_id,
        unrealistic_at=unrealistic_at,
        n_rated=len(scores),
        n_raters=len({h.rater for h in rated if h.conversation_id in scores}),
        n_unrealistic=sum(unrealistic.values()),
        checkers=checkers,
        pack=records.manifest.locale if isinstance(records.manifest.locale, LocaleInfo) else None,
    )


def _against(
    name: str, checks: dict[str, UserCheck], unrealistic: dict[str, bool], mean: dict[str, float]
) -> CheckerAgreement:
    ids = sorted(checks)
    flagged = [checks[c].flagged for c in ids]
    humans = [unrealistic[c] for c in ids]
    pairs = list(zip(flagged, humans, strict=True))
    agree = sum(f == h for f, h in pairs)
    kappa = cohen_kappa(flagged, humans).value if ids else None

    def avg(want: bool) -> float | None:
        got = [mean[c] for c, f in zip(ids, flagged, strict=True) if f == want]
        return round(statistics.fmean(got), 2) if got else None

    return CheckerAgreement(
        checker=name,
        n=len(ids),
        both_flagged=sum(f and h for f, h in pairs),
        check_only=sum(f and not h for f, h in pairs),
        clinicians_only=sum(h and not f for f, h in pairs),
        neither=sum(not f and not h for f, h in pairs),
        percent_agreement=round(agree / len(ids), 3) if ids else None,
        cohen_kappa=None if kappa is None else round(kappa, 3),
        mean_realism_flagged=avg(True),
        mean_realism_not_flagged=avg(False),
    )


def user_check_agreement_table(report: UserCheckAgreement) -> Table:
    """The report as a table in the words of the run's locale pack (English without
    one), as its card: the words go with the table, as the command that prints it
    sets none of its own."""
    words = ui_strings(report.pack.tag, report.pack.path) if report.pack else ENGLISH
    with use_strings(words):
        table = _table(report)
    table.words = words  # its "(continued)" too, when the terminal splits it
    return table


def _table(report: UserCheckAgreement) -> Table:
    def n(x: float | None) -> str:
        return "–" if x is None else f"{x:g}"

    checker = {HEURISTIC: tr("col.checker_heuristic"), "model": tr("cli.users_model")}
    t = Table(
        [
            tr("col.checker"),
            tr("col.conversations"),
            tr("cli.users_flagged_unrealistic"),
            tr("cli.users_flagged_realistic"),
            tr("cli.users_unflagged_unrealistic"),
            tr("cli.users_unflagged_realistic"),
            tr("cli.users_agreement"),
            tr("col.kappa"),
            tr("cli.users_mean_realism"),
        ],
        caption=tr(
            "cli.users_caption",
            run=report.run_id,
            rated=report.n_rated,
            raters=report.n_raters,
            unrealistic=report.n_unrealistic,
            at=report.unrealistic_at,
        ),
    )
    for c in report.checkers:
        t.rows.append(
            [
                checker.get(c.checker, c.checker),
                str(c.n),
                str(c.both_flagged),
                str(c.check_only),
                str(c.clinicians_only),
                str(c.neither),
                n(c.percent_agreement),
                n(c.cohen_kappa),
                f"{n(c.mean_realism_flagged)} / {n(c.mean_realism_not_flagged)}",
            ]
        )
    return t
