"""`vera agreement` in words: the tables of agreement among human raters, of the judges
against their consensus, and the confusion matrices (as tables and as CSV). The numbers
come from `agreement_report` (vera.report.calibration._agreement)."""

from __future__ import annotations

import csv
import io

from vera.inputs import tr, ui_short
from vera.records import OVERALL, RATING_CODES
from vera.report.calibration._agreement import HumanAgreementReport, JudgeConsensusReport, RatingsFile
from vera.report.shared._numbers import coefficient, coefficient_ci, percent_level
from vera.report.shared._table import Table, agreement_headers
from vera.report.shared._terminal import render, rich_table
from vera.stats import ConfusionMatrices, NRTreatment, PairedAgreement, RaterAgreement


def confusion_csv_text(confusion: ConfusionMatrices) -> str:
    """One row per (dimension, judge rating, consensus rating) with its count, pooled
    over dimensions as "Overall": a long table any spreadsheet can pivot."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["dimension", "judge_rating", "consensus_rating", "count"])
    cats = confusion.categories
    for name, m in [*confusion.dimensions.items(), (OVERALL, confusion.overall)]:
        for i, judge in enumerate(cats):
            for j, human in enumerate(cats):
                w.writerow([name, judge, human, m[i][j]])
    return out.getvalue()


def confusion_tables(confusion: ConfusionMatrices) -> list[Table]:
    """Each dimension's matrix (and the pooled one) as a small table: judge ratings down,
    the clinicians' consensus across, totals at the edges; the diagonal is agreement."""
    short = [RATING_CODES.get(c, c) for c in confusion.categories]
    tables = []
    for name, m in [*confusion.dimensions.items(), (tr("cli.agreement_overall_pooled"), confusion.overall)]:
        t = Table(
            [tr("cli.agreement_confusion_corner"), *short, "Total"],
            caption=tr("cli.agreement_confusion", name=ui_short(name)),
        )
        for label, row in zip(short, m, strict=True):
            t.rows.append([label, *(str(x) for x in row), str(sum(row))])
        t.rows.append(["Total", *(str(sum(col)) for col in zip(*m, strict=True)), str(sum(map(sum, m)))])
        t.emphasise.add(len(t.rows) - 1)
        tables.append(t)
    return tables


def agreement_humans_text(report: HumanAgreementReport) -> str:
    """`vera agreement RATINGS_FILE`: the raters' agreement with one another."""
    ratings = report.ratings
    header = tr(
        "cli.agreement_humans",
        raters=ratings.n_raters,
        per_item=_per_item(ratings),
        items=ratings.n_items,
        path=ratings.path,
        nr=_nr_label(report.humans.nr),
    )
    return render([header, rich_table(_human_table(report.humans))])


def agreement_against_text(report: JudgeConsensusReport) -> str:
    """`vera agreement RATINGS_FILE --against RUN_DIR`: the judges against the raters'
    consensus, per judge when there are several, the confusion matrices and the raters'
    own agreement."""
    ratings, result = report.ratings, report.judges
    b = result.bootstrap
    how = (
        tr("cli.agreement_majority")
        if result.raters is None
        else tr("cli.agreement_rule", rule=result.raters)
    )
    settled = (
        tr("cli.agreement_combined", rule=result.raters)
        if result.raters is not None
        else tr("cli.agreement_ties_out")
        if result.ties == "exclude"
        else tr("cli.agreement_ties_severest")
    )
    lines = [
        tr(
            "cli.agreement_judges",
            run=report.run_id,
            how=how,
            raters=ratings.n_raters,
            per_item=_per_item(ratings),
            path=ratings.path,
            nr=_nr_label(result.nr),
        ),
        tr(
            "cli.agreement_counts",
            items=result.n_items,
            ties=result.n_ties,
            settled=settled,
            unjudged=result.n_items_unjudged,
            unmatched=result.n_conversations_unmatched,
        ),
        tr(
            "cli.agreement_intervals",
            level=percent_level(b.confidence),
            resamples=b.n_resamples,
            seed=b.seed,
        ),
    ]
    headers = ["Dimension", "Krippendorff's alpha", "Gwet's AC1", "Percent agreement", "Cohen's kappa"]

    def table(caption: str, judge: str | None) -> Table:
        t = Table([*headers, "Items", tr("cli.agreement_pairs")], caption=caption)
        for name, pooled in [*result.dimensions.items(), (OVERALL, result.overall)]:
            block: PairedAgreement | None = pooled if judge is None else pooled.judges.get(judge)
            if block is None:
                continue
            t.rows.append(
                [
                    name,
                    coefficient_ci(
                        block.krippendorff_alpha, block.krippendorff_alpha_lo, block.krippendorff_alpha_hi
                    ),
                    coefficient_ci(block.gwet_ac1, block.gwet_ac1_lo, block.gwet_ac1_hi),
                    coefficient_ci(
                        block.percent_agreement, block.percent_agreement_lo, block.percent_agreement_hi
                    ),
                    coefficient_ci(block.cohen_kappa, block.cohen_kappa_lo, block.cohen_kappa_hi),
                    str(block.n_items),
                    str(block.n_pairs),
                ]
            )
        return t

    tables = [table(tr("cli.agreement_pooled"), None)]
    judges = sorted(result.overall.judges)
    if len(judges) > 1:
        tables += [table(tr("cli.agreement_vs", judge=j), j) for j in judges]
    tables += confusion_tables(result.confusion)
    tables.append(_human_table(report.humans, caption=tr("cli.agreement_humans_caption")))
    legend = tr("cli.agreement_legend")
    return render(["\n".join([*lines, legend]), *(rich_table(t) for t in tables)])


def _human_table(result: RaterAgreement, caption: str | None = None) -> Table:
    t = Table(
        agreement_headers("Raters"),
        caption=caption,
    )
    for name, b in [*result.dimensions.items(), ("Overall", result.overall)]:
        t.rows.append(
            [
                name,
                coefficient(b.krippendorff_alpha),
                coefficient(b.gwet_ac1),
                coefficient(b.percent_agreement),
                coefficient(b.mean_cohen_kappa),
                coefficient(b.unanimous),
                str(b.n_items),
                str(b.n_ratings),
                str(b.n_raters),
            ]
        )
    return t


def _per_item(ratings: RatingsFile) -> str:
    low, high = ratings.raters_per_item
    return str(low) if low == high else f"{low}–{high}"


def _nr_label(nr: NRTreatment) -> str:
    return tr("cli.nr_category") if nr == "category" else tr("cli.nr_exclude")
