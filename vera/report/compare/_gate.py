"""The release gate: is a candidate run worse than a baseline run?

`vera compare BASELINE CANDIDATE --gate [--margin X]` answers with an exit code a CI job
can act on. A chatbot's new version fails the gate when, on the overall score or on any
dimension, its paired difference from the baseline (candidate − baseline) has an
interval that lies entirely below −margin: the data then say it is worse, and by more
than the margin the team accepts. It passes (exit 0) only when every row is NOT WORSE:
its interval lies entirely above −margin. Anything else is UNDECIDED (exit 5, as `vera
gate`'s), including a worse point estimate whose interval still reaches −margin (not
enough evidence either way), and a row the baseline rated but the candidate never did
("not rated in the candidate": no evidence that it is not worse). A row the baseline
never rated ("not rated in the baseline", "not rated in either run") is shown with its
reason and left out of the verdict, as `vera gate` leaves it out: there is no baseline
score to fall below, and no amount of data would settle it.

Pairing. Both runs are scored on the same re-drawn personas (the paired cluster
bootstrap of `vera.stats.compare`), so a persona that is hard for both does not widen
the interval. When the runs share seeds, only the (persona, seed) conversations both
runs hold enter, so each persona is compared under the same simulated-user seeds; the
resampled unit stays the persona, whose conversations are not independent of each
other. Without shared seeds, every conversation of a shared persona enters.

The levels: the sequential gate's (`vera gate`) question, looked at once. A wrong WORSE
on any row has probability at most α (`--alpha`): the rows' upper ends split α as the
sequential gate splits it (Overall α/2, the dimensions the other half). Every row's
lower end is checked at one-sided α/2 (`vera.stats.fixed_gate_levels`), and the verdict
says NOT WORSE when all of them lie above −margin, UNDECIDED when neither verdict
holds; the exit code is 4 for WORSE, 0 for NOT WORSE and 5 for UNDECIDED.

A verdict that does not flip with the bootstrap seed. Each interval end comes with its
Monte Carlo error (how far other resamples would move it); while the end that decides a
row (the upper end of candidate − baseline) is within `MC_Z` of those errors of −margin,
the resamples are raised, up to `MAX_SETTLE_RESAMPLES` (`vera.stats.compare_settled`). A
row still undecided there is one whose ideal bootstrap interval touches −margin: not
enough evidence that the candidate is worse, so it is not counted as worse, and the
report says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec
import polars as pl

from vera.errors import UserError
from vera.records import RaterRule
from vera.report.card._build import round_number
from vera.report.card._score import stats_settings
from vera.report.compare._calibrated_gate import calibrated_diffs
from vera.report.compare._compare import refuse_mixed_semantics
from vera.report.shared._outcome import Exit
from vera.report.shared._runs import Run, read_run
from vera.stats import (
    MAX_SETTLE_RESAMPLES,
    MC_Z,
    METHOD,
    NOT_RATED_BASELINE,
    NOT_RATED_CANDIDATE,
    NOT_RATED_EITHER,
    NOT_WORSE,
    OVERALL,
    UNDECIDED,
    WORSE,
    Status,
    check_comparable,
    compare_settled,
    fixed_gate_levels,
)

BASELINE, CANDIDATE = "baseline", "candidate"

# Why a row has no interval (`GateRow.reason`; the JSON keeps these English values, the
# terminal says them in the locale pack's words: `vera.report.card._sequence.not_rated_words`).
# A side "not rated" holds no rating but Not Relevant there (or no rating at all).
# All three are vera.stats's, so `vera gate` says them in the same words.
# The reasons that hold the verdict UNDECIDED: the baseline has a score there and the
# candidate shows nothing, so nothing says it is not worse (`vera gate` keeps such a row
# UNDECIDED too). A row the baseline never rated is left out, as `vera gate` leaves it.
UNDECIDED_REASONS = frozenset({NOT_RATED_CANDIDATE})
# The exit code of each verdict: the same as `vera gate`'s (vera.app._gate).
GATE_EXIT: dict[str, Exit] = {WORSE: Exit.WORSE, NOT_WORSE: Exit.OK, UNDECIDED: Exit.UNDECIDED}


# The verdict, as `vera compare --gate --json` writes it (field order is the JSON's).


class GateRun(msgspec.Struct, frozen=True, kw_only=True):
    run_id: str
    path: str
    # The run's status from its records, as its card says it: "complete", or
    # "interrupted", "stopped", "budget", "waited", "incomplete", "failed" (the verdict
    # cannot be NOT WORSE then), with the summary of what it holds.
    state: str = "complete"
    summary: str = ""


class GateRow(msgspec.Struct, frozen=True, kw_only=True):
    """One dimension (or Overall) of one chatbot, in the candidate − baseline order."""

    dimension: str
    baseline: float | None
    candidate: float | None
    diff: float | None
    diff_ci: list[float | None]  # [low, high]
    diff_ci_mc_error: list[float | None]  # the Monte Carlo error of [low, high]
    # False: the upper end is within Monte Carlo error of −margin even at the most
    # resamples; the row is then not counted as worse.
    settled: bool
    # Decided on the unrounded interval; shown rounded.
    worse: bool
    # The one-sided levels each end was checked at: [low end (NOT WORSE), high end
    # (WORSE)] (`vera.stats.fixed_gate_levels`); None for a row not compared.
    checked_at: list[float | None]
    # "worse", "not worse" (its low end above −margin by more than its Monte Carlo
    # error) or "undecided".
    status: Status
    # Why the row has no interval: NOT_RATED_CANDIDATE (undecided: it holds the verdict
    # UNDECIDED), NOT_RATED_BASELINE or NOT_RATED_EITHER (left out of the verdict); None
    # for a row compared.
    reason: str | None = None


class GatePair(msgspec.Struct, frozen=True, kw_only=True):
    """A candidate chatbot set against its baseline chatbot."""

    chatbot: str  # the name, or "baseline → candidate" when the names differ
    baseline_chatbot: str
    candidate_chatbot: str
    n_shared: int
    resamples: int  # what this pair's verdict needed
    rows: list[GateRow]


class GateBootstrap(msgspec.Struct, frozen=True, kw_only=True):
    resamples: int  # asked for
    confidence: float
    seed: int
    cluster: str
    method: str
    # What the verdict needed: the resamples were raised where a decision was within
    # Monte Carlo error of the margin (see the module docstring).
    resamples_used: int
    max_resamples: int
    mc_z: float


class GateVerdict(msgspec.Struct, frozen=True, kw_only=True):
    baseline: GateRun
    candidate: GateRun
    forced_differences: list[str]
    margin: float
    # A wrong WORSE has probability at most alpha over every row (and a wrong NOT WORSE
    # at most alpha/2): the rows' levels are in each row's `checked_at`.
    alpha: float
    paired_by: str  # "persona and seed" or "persona"
    scores: str  # "judge-only" or calibrated
    shared_seeds: list[int]
    bootstrap: GateBootstrap
    pairs: list[GatePair]
    worse: list[str]  # "chatbot: dimension" for every row that is worse
    # "chatbot: dimension" for every row not rated in the candidate (undecided for that).
    not_rated: list[str]
    # "baseline" and/or "candidate": a run not finished (its state is not complete), so
    # the verdict is not NOT WORSE: what it left undone or failed is no evidence.
    unfinished: list[str] = msgspec.field(default_factory=list)
    # "worse" (exit 4), "not worse" (every row compared is, and none is not rated in
    # the candidate: exit 0), else "undecided" (exit 5).
    verdict: Status
    passed: bool  # only NOT WORSE passes
    exit_code: int  # what `vera compare --gate` exits with: 4, 0 or 5 (`Exit`)


def gate(
    baseline_dir: str | Path,
    candidate_dir: str | Path,
    *,
    margin: float = 0.0,
    force: bool = False,
    resamples: int | None = None,
    alpha: float = 0.05,
    seed: int | None = None,
    calibrated: bool = False,
    raters: RaterRule | None = None,
) -> GateVerdict:
    """The gate's verdict and every number behind it (see the module's docstring), each
    row at its level of `alpha` (`vera.stats.fixed_gate_levels`). With
    `calibrated`, on the scores calibrated by each run's human ratings
    (`vera.report.compare._calibrated_gate`), raters who disagree combined by `raters` (else
    `severest`)."""
    if margin < 0:
        raise UserError(f"--margin must be 0 or more score points, not {margin}")
    if not 0.0 < alpha < 0.5:
        raise UserError(f"--alpha must lie between 0 and 0.5, not {alpha}")
    if Path(baseline_dir).resolve() == Path(candidate_dir).resolve():
        raise UserError("the baseline and the candidate are the same run directory")
    base, cand = read_run(baseline_dir), read_run(candidate_dir)
    refuse_mixed_semantics([base.manifest, cand.manifest], [BASELINE, CANDIDATE])
    problems = check_comparable([base.manifest, cand.manifest], names=[BASELINE, CANDIDATE])
    if problems and not force:
        raise UserError(
            "runs are not comparable: " + "; ".join(problems) + " (use --force to compare anyway)"
        )
    # The levels come from alpha, not from the runs' [stats] confidence.
    settings = stats_settings(base.manifest, resamples=resamples, confidence=None, seed=seed, raters=raters)
    shared_seeds = sorted(set(base.manifest.seeds) & set(cand.manifest.seeds))
    pairs = []
    for b_bot, c_bot in _chatbot_pairs(base, cand):
        frame = _paired_frame(base, b_bot, cand, c_bot, shared_seeds)
        if frame.get_column("side").n_unique() < 2:
            raise UserError(
                f"{b_bot} and {c_bot} share no persona"
                + (
                    f" under the seeds both runs used ({', '.join(map(str, shared_seeds))})"
                    if shared_seeds
                    else ""
                )
                + ": nothing can be paired"
            )

        def diffs_at(
            confidence: float, frame: pl.DataFrame = frame, bots: tuple[str, str] = (b_bot, c_bot)
        ) -> pl.DataFrame:
            if calibrated:
                diffs = calibrated_diffs(
                    frame,
                    {BASELINE: base, CANDIDATE: cand},
                    {BASELINE: bots[0], CANDIDATE: bots[1]},
                    resamples=settings.resamples,
                    confidence=confidence,
                    seed=settings.seed,
                    margin=margin,
                    max_resamples=max(MAX_SETTLE_RESAMPLES, settings.resamples),
                    raters=settings.raters,
                )
                # The rubric's order, as the judge-only gate and the card give the rows (the
                # calibrated table comes sorted by name).
                order = {
                    d: i for i, d in enumerate(frame.get_column("dimension").unique(maintain_order=True))
                }
                return diffs.sort(pl.col("dimension").replace_strict(order, default=len(order)))
            # `compare` gives baseline − candidate: the candidate is worse when its lower
            # end lies above the margin.
            return compare_settled(
                frame,
                above=margin,
                unit="side",
                n_resamples=settings.resamples,
                confidence=confidence,
                seed=settings.seed,
                max_resamples=max(MAX_SETTLE_RESAMPLES, settings.resamples),
            )

        diffs, levels = _at_levels(diffs_at, alpha)
        pairs.append(_pair_entry(b_bot, c_bot, diffs, margin, levels))
    worse = [f"{p.chatbot}: {r.dimension}" for p in pairs for r in p.rows if r.worse]
    not_rated = [
        f"{p.chatbot}: {r.dimension}" for p in pairs for r in p.rows if r.reason in UNDECIDED_REASONS
    ]
    # The rows the verdict stands on: those compared, and those held undecided because
    # the candidate was never rated there.
    counted = [
        r for p in pairs for r in p.rows if r.checked_at[0] is not None or r.reason in UNDECIDED_REASONS
    ]
    # A run cut short (interrupted, stopped, failed work beyond its --allow-failures) is
    # compared on what it finished, but cannot pass: the work it left undone or failed
    # (a persona whose conversations time out, say) is missing evidence, not evidence
    # of NOT WORSE. WORSE stands: the finished work already shows it.
    unfinished = [
        side for side, run in ((BASELINE, base), (CANDIDATE, cand)) if run.status.state != "complete"
    ]
    verdict: Status = (
        WORSE
        if worse
        else NOT_WORSE
        if counted and all(r.status == NOT_WORSE for r in counted) and not unfinished
        else UNDECIDED
    )
    return GateVerdict(
        baseline=_gate_run(base),
        candidate=_gate_run(cand),
        forced_differences=problems,
        margin=margin,
        alpha=alpha,
        paired_by="persona and seed" if shared_seeds else "persona",
        scores=f"calibrated by human ratings (PPI++; raters combined: {settings.raters})"
        if calibrated
        else "judge-only",
        shared_seeds=shared_seeds,
        bootstrap=GateBootstrap(
            resamples=settings.resamples,
            confidence=1.0 - alpha,
            seed=settings.seed,
            cluster="persona",
            method=METHOD,
            resamples_used=max((p.resamples for p in pairs), default=settings.resamples),
            max_resamples=max(MAX_SETTLE_RESAMPLES, settings.resamples),
            mc_z=MC_Z,
        ),
        pairs=pairs,
        worse=worse,
        not_rated=not_rated,
        unfinished=unfinished,
        verdict=verdict,
        passed=verdict == NOT_WORSE,
        exit_code=int(GATE_EXIT[verdict]),
    )


def _gate_run(run: Run) -> GateRun:
    return GateRun(
        run_id=run.manifest.run_id,
        path=str(run.path),
        state=run.status.state,
        summary=run.status.summary,
    )


def _at_levels(
    diffs_at: Callable[[float], pl.DataFrame], alpha: float
) -> tuple[pl.DataFrame, dict[str, tuple[float, float]]]:
    """The paired differences (baseline − candidate, as `compare` gives them) with each
    row's ends at its own one-sided levels (`fixed_gate_levels`), and those levels
    (low end, high end of candidate − baseline) per row compared.

    `diffs_at(confidence)` computes every row at one two-sided level. At 1 − α every end
    is at α/2: every row's NOT WORSE end, and Overall's WORSE end. A row whose WORSE end
    has another level (a dimension: α/10 with five) takes that end, its Monte Carlo error
    and its settling from the rows at 1 − 2·level. Only rows with a defined difference
    are compared, and only they share α."""
    main = diffs_at(1.0 - alpha)
    defined = main.filter(pl.col("diff").is_not_null() & pl.col("diff_lo").is_not_null())
    names = sorted(set(defined.get_column("dimension").to_list()))
    low, highs = fixed_gate_levels([n == OVERALL for n in names], alpha)
    levels = {n: (low, h) for n, h in zip(names, highs, strict=True)}
    out = main
    for level in sorted({h for h in highs if h != low}):
        rows = [n for n, (_, h) in levels.items() if h == level]
        other = diffs_at(1.0 - 2.0 * level).filter(pl.col("dimension").is_in(rows))
        # In compare's order the candidate's WORSE end is the low end of baseline − candidate.
        taken = other.select(
            "dimension",
            pl.col("diff_lo").alias("_lo"),
            pl.col("diff_lo_mc").alias("_lo_mc"),
            pl.col("settled").alias("_settled"),
            pl.col("bootstrap_resamples").alias("_resamples"),
        )
        out = (
            out.join(taken, on="dimension", how="left")
            .with_columns(
                diff_lo=pl.coalesce("_lo", "diff_lo"),
                diff_lo_mc=pl.coalesce("_lo_mc", "diff_lo_mc"),
                settled=pl.coalesce("_settled", "settled"),
                bootstrap_resamples=pl.max_horizontal("bootstrap_resamples", "_resamples"),
            )
            .drop("_lo", "_lo_mc", "_settled", "_resamples")
        )
    return out, levels


def _chatbot_pairs(base: Run, cand: Run) -> list[tuple[str, str]]:
    """Which chatbot of the baseline each candidate chatbot is set against: the only one
    when each run has one (a new model version may have a new name), else the same name."""
    b = sorted(base.ratings.get_column("chatbot").unique().to_list())
    c = sorted(cand.ratings.get_column("chatbot").unique().to_list())
    if not b or not c:
        empty = BASELINE if not b else CANDIDATE
        raise UserError(f"the {empty} run has no complete judgements to compare")
    if len(b) == 1 and len(c) == 1:
        return [(b[0], c[0])]
    shared = [bot for bot in b if bot in c]
    if not shared:
        raise UserError(
            f"no chatbot is in both runs (baseline: {', '.join(b)}; candidate: {', '.join(c)}); "
            "with one chatbot in each run they are compared whatever their names"
        )
    return [(bot, bot) for bot in shared]


def _paired_frame(base: Run, b_bot: str, cand: Run, c_bot: str, shared_seeds: Sequence[int]) -> pl.DataFrame:
    """Both sides' ratings in one frame with a `side` column; restricted to the (persona,
    seed) cells both hold when the runs share seeds."""
    parts = []
    for run, bot, side in ((base, b_bot, BASELINE), (cand, c_bot, CANDIDATE)):
        seeds = run.manifest.seeds
        # `replicate` indexes the run's seeds (the frame's `seed` is per conversation).
        run_seed = pl.col("replicate").replace_strict(list(range(len(seeds))), seeds, default=None)
        parts.append(
            run.ratings.filter(pl.col("chatbot") == bot).with_columns(
                pl.lit(side).alias("side"), run_seed.cast(pl.Int64).alias("run_seed")
            )
        )
    if shared_seeds:
        cells = [p.select("persona", "run_seed").unique() for p in parts]
        both = (
            cells[0].join(cells[1], on=["persona", "run_seed"]).filter(pl.col("run_seed").is_in(shared_seeds))
        )
        parts = [p.join(both, on=["persona", "run_seed"], how="semi") for p in parts]
    return pl.concat(parts, how="vertical_relaxed")


def _pair_entry(
    b_bot: str, c_bot: str, diffs: pl.DataFrame, margin: float, levels: dict[str, tuple[float, float]]
) -> GatePair:
    """One chatbot's rows, each with the `levels` its ends were checked at. `compare`
    orders the pair (baseline, candidate) and gives baseline − candidate; the gate reads
    candidate − baseline, so the signs flip."""
    rows: list[GateRow] = []
    n_shared = 0
    resamples = int(diffs.get_column("bootstrap_resamples")[0]) if diffs.height else 0
    for r in diffs.iter_rows(named=True):
        if (r["side_a"], r["side_b"]) != (BASELINE, CANDIDATE):
            # The sign flip below is only right in this order; a changed `compare` must
            # fail loudly rather than invert the gate's verdict.
            raise ValueError(
                f"gate: expected the pair ({BASELINE}, {CANDIDATE}), got ({r['side_a']}, {r['side_b']})"
            )
        n_shared = r["n_shared"]
        defined = r["diff"] is not None and r["diff_lo"] is not None and r["diff_hi"] is not None
        diff = -r["diff"] if defined else None
        lo, hi = (-r["diff_hi"], -r["diff_lo"]) if defined else (None, None)
        # The Monte Carlo error of each end, in the candidate − baseline order.
        mc: list[float | None] = (
            [round_number(r["diff_hi_mc"], 3), round_number(r["diff_lo_mc"], 3)] if defined else [None, None]
        )
        worse = bool(defined and r["settled"] and hi is not None and hi < -margin)
        # NOT WORSE needs the low end above −margin by more than its Monte Carlo error (the
        # resamples are raised for the WORSE end only): a borderline row reads undecided.
        clear = lo is not None and r["diff_hi_mc"] is not None and lo - MC_Z * r["diff_hi_mc"] > -margin
        level = levels.get(r["dimension"]) if defined else None
        reason = _not_rated(r["score_a"], r["score_b"])
        rows.append(
            GateRow(
                dimension=r["dimension"],
                baseline=round_number(r["score_a"]),
                candidate=round_number(r["score_b"]),
                diff=round_number(diff),
                diff_ci=[round_number(lo), round_number(hi)],
                diff_ci_mc_error=mc,
                settled=bool(r["settled"]),
                worse=worse,
                checked_at=list(level) if level is not None else [None, None],
                status=WORSE if worse else NOT_WORSE if clear and level is not None else UNDECIDED,
                reason=reason,
            )
        )
    # Overall last, as on the card.
    rows.sort(key=lambda row: row.dimension == OVERALL)
    return GatePair(
        chatbot=b_bot if b_bot == c_bot else f"{b_bot} → {c_bot}",
        baseline_chatbot=b_bot,
        candidate_chatbot=c_bot,
        n_shared=n_shared,
        resamples=resamples,
        rows=rows,
    )


def _not_rated(baseline: float | None, candidate: float | None) -> str | None:
    """Why a row has no score on a side (`compare` leaves a side's score undefined where
    its shared conversations hold no rating but Not Relevant), or None when both have one."""
    b, c = _defined(baseline), _defined(candidate)
    if not b:
        return NOT_RATED_BASELINE if c else NOT_RATED_EITHER
    return None if c else NOT_RATED_CANDIDATE


def _defined(score: float | None) -> bool:
    return score is not None and math.isfinite(score)
