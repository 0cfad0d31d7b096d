"""`vera agreement`: among human raters, and between their consensus and a run's judges,
per dimension and overall."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import cast

import polars as pl
import pytest
from click.testing import CliRunner

from vera.cli._main import main
from vera.records import HIGH_POTENTIAL_FOR_HARM as HPH
from vera.records import SUBOPTIMAL as SUB
from vera.records import Conversation, DimensionRating, Judgement, Rating, Turn
from vera.report.calibration._agreement import human_item_id
from vera.stats import combine_raters, consensus, read_human_ratings
from vera.store._writer import RunStore

from ..conftest import REFERENCE
from ..helpers import widest_line

CLINICIANS = REFERENCE / "human_validation" / "clinician_ratings.csv"
DIMENSIONS = (
    "Detects Potential Risk",
    "Confirms Risk",
    "Guides to Human Care",
    "Supportive Conversation",
    "Follows AI Boundaries",
)
REQUIRED = {"krippendorff_alpha", "gwet_ac1", "percent_agreement", "n_items"}
needs_reference = pytest.mark.skipif(not CLINICIANS.exists(), reason="reference data not present")


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def conversation(cid: str, source: str | None) -> Conversation:
    # The persona as an import takes it from a reference file name, "<id>_<Persona>_...".
    parts = Path(source).name.split("_") if source else []
    return Conversation(
        id=cid,
        chatbot="imported/chatbot",
        user_agent="imported/user",
        persona=parts[1] if len(parts) > 2 else "Imported",
        risk="High",
        seed=0,
        turns=[Turn("user", "hello"), Turn("chatbot", "hi")],
        ended_by="imported",
        source=source,
    )


def judged_run(tmp_path: Path, offline_run: Path, judged: dict[str | None, dict[str, str]]) -> Path:
    """A run directory of imported conversations: `judged` maps a transcript file path
    (None = a simulated conversation) to the judge's rating per dimension."""
    run = tmp_path / "judged"
    run.mkdir()
    shutil.copy(offline_run / "manifest.json", run / "manifest.json")
    store = RunStore(run)
    for i, (source, ratings) in enumerate(judged.items()):
        cid = f"conv{i:03d}"
        store.add_conversation(conversation(cid, source))
        store.add_judgement(
            Judgement(
                id=f"j{i:03d}",
                conversation_id=cid,
                judge="offline/lexical-judge",
                instance=1,
                status="complete",
                answers=[],
                ratings=[DimensionRating(dimension=d, rating=cast(Rating, r)) for d, r in ratings.items()],
            )
        )
    store.close()
    return run


def test_conversations_map_to_human_items_by_their_transcript_prefix():
    assert human_item_id(conversation("c1", "/data/run 'x'/0E6474_Lena_gpt-4o_run1.txt")) == "0e6474"
    assert human_item_id(conversation("c1", "conversations/076b9e_Maya_gemini_run1.txt")) == "076b9e"
    assert human_item_id(conversation("c1", "transcripts/session-17.txt")) == "session-17"
    assert human_item_id(conversation("c1", "transcripts/0e6474abc.txt")) == "0e6474abc"
    assert human_item_id(conversation("c1", None)) == "c1"
    assert human_item_id(conversation("c-17", "logs/0e6474.jsonl:12")) == "c-17"


@needs_reference
def test_agreement_among_the_reference_clinicians_per_dimension_and_overall():
    result = invoke("agreement", str(CLINICIANS))
    assert result.exit_code == 0, result.output
    out = result.output
    assert "6 raters (3 per item) on 90 items" in out
    for name in (*DIMENSIONS, "Overall"):
        assert any(line.startswith(name) for line in out.splitlines()), name
    overall = next(line for line in out.splitlines() if line.startswith("Overall")).split()
    # alpha, AC1, percent agreement as in docs/statistics.md.
    assert overall[1:4] == ["0.765", "0.777", "0.830"]


@needs_reference
@pytest.mark.parametrize(("nr", "alpha", "items"), [("category", 0.765, 450), ("exclude", 0.820, 386)])
def test_json_is_one_object_with_every_block(nr, alpha, items):
    result = CliRunner().invoke(main, ["agreement", str(CLINICIANS), "--json", "--nr", nr])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["nr"] == nr and set(data["dimensions"]) == set(DIMENSIONS)
    for block in [data["overall"], *data["dimensions"].values()]:
        assert set(block) >= REQUIRED
    assert data["overall"]["krippendorff_alpha"] == pytest.approx(alpha, abs=0.0005)
    assert data["overall"]["n_items"] == items


def test_generic_long_format_against_a_run_matches_a_hand_computed_case(tmp_path, offline_run):
    ratings = tmp_path / "ratings.csv"
    ratings.write_text(
        "item_id,rater,dimension,rating\n"
        "aaaaaa,ann,Confirms Risk,BP\n"
        "aaaaaa,bob,Confirms Risk,Best Practice\n"
        "bbbbbb,ann,Confirms Risk,HPH\n"
        "bbbbbb,bob,Confirms Risk,hph\n"
        "cccccc,ann,Confirms Risk,SUB\n"
        "cccccc,bob,Confirms Risk,SUB\n"
    )
    run = judged_run(
        tmp_path,
        offline_run,
        {
            "t/aaaaaa_P_m_run1.txt": {"Confirms Risk": "Best Practice"},
            "t/bbbbbb_P_m_run1.txt": {"Confirms Risk": "High Potential for Harm"},
            "t/cccccc_P_m_run1.txt": {"Confirms Risk": "Best Practice"},
            None: {"Confirms Risk": "Best Practice"},
        },
    )
    result = CliRunner().invoke(
        main, ["agreement", str(ratings), "--against", str(run), "--json", "--resamples", "200"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    o = data["overall"]
    # Consensus (BP, HPH, SUB) vs judge (BP, HPH, BP): agreement 2/3; kappa (2/3 − 1/3)/(1 − 1/3).
    assert o["percent_agreement"] == pytest.approx(2 / 3)
    assert o["cohen_kappa"] == pytest.approx(0.5)
    assert o["n_items"] == 3 and set(o) >= REQUIRED and set(data["dimensions"]) == {"Confirms Risk"}
    assert data["n_conversations_unmatched"] == 1 and data["n_ties"] == 0
    assert data["humans"]["overall"]["percent_agreement"] == 1.0

    # The terminal wraps prose at its width: read it as words.
    text = " ".join(
        invoke("agreement", str(ratings), "--against", str(run), "--resamples", "200").output.split()
    )
    assert "Consensus vs judges (all judges pooled)" in text and "Among the human raters" in text
    assert "1 judged conversations without human ratings" in text

    # Judge (rows) × consensus (columns), counted by hand from the fixture above:
    # aaaaaa BP/BP, bbbbbb HPH/HPH, cccccc judged BP where the raters said SUB.
    conf = data["confusion"]
    assert conf["categories"] == ["Best Practice", SUB, HPH, "Not Relevant"]
    expected = [[1, 1, 0, 0], [0, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0]]
    assert conf["dimensions"] == {"Confirms Risk": expected} and conf["overall"] == expected


def test_the_confusion_matrix_is_printed_and_written_as_csv(tmp_path, offline_run):
    ratings = tmp_path / "ratings.csv"
    ratings.write_text(
        "item_id,rater,dimension,rating\n"
        "aaaaaa,ann,Confirms Risk,SUB\naaaaaa,bob,Confirms Risk,SUB\n"
        "bbbbbb,ann,Confirms Risk,HPH\nbbbbbb,bob,Confirms Risk,HPH\n"
        "aaaaaa,ann,Guides to Human Care,BP\naaaaaa,bob,Guides to Human Care,BP\n"
    )
    run = judged_run(
        tmp_path,
        offline_run,
        {
            "t/aaaaaa_P_m_run1.txt": {
                "Confirms Risk": "Best Practice",
                "Guides to Human Care": "Best Practice",
            },
            "t/bbbbbb_P_m_run1.txt": {"Confirms Risk": SUB},
        },
    )
    csv_path = tmp_path / "confusion.csv"
    result = invoke(
        "agreement",
        str(ratings),
        "--against",
        str(run),
        "--resamples",
        "50",
        "--confusion-csv",
        str(csv_path),
    )
    assert result.exit_code == 0, result.output
    with csv_path.open() as f:
        rows = list(csv.DictReader(f))
    counts = {(r["dimension"], r["judge_rating"], r["consensus_rating"]): int(r["count"]) for r in rows}
    assert len(rows) == 3 * 16  # two dimensions and the pooled matrix, 4 × 4 cells each
    assert counts[("Confirms Risk", "Best Practice", SUB)] == 1
    assert counts[("Confirms Risk", SUB, HPH)] == 1
    assert counts[("Guides to Human Care", "Best Practice", "Best Practice")] == 1
    assert counts[("Overall", "Best Practice", SUB)] == 1 and counts[("Overall", SUB, HPH)] == 1
    assert sum(counts.values()) == 2 * 3  # three units, counted per dimension and pooled
    out = result.stdout
    assert "Confirms Risk: units rated by a judge (rows)" in " ".join(out.split())
    # The Confirms Risk matrix: judge BP row has one unit under the consensus SUB column.
    block = out[out.index("Confirms Risk: units") :]
    bp_row = next(line for line in block.splitlines() if line.startswith("BP "))
    assert bp_row.split() == ["BP", "0", "1", "0", "0", "1"]


def test_confusion_csv_needs_a_run(tmp_path):
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("item_id,rater,dimension,rating\naaaaaa,ann,Confirms Risk,SUB\n")
    result = invoke("agreement", str(ratings), "--confusion-csv", str(tmp_path / "c.csv"))
    assert result.exit_code == 1 and result.output.startswith("error: ") and "--against" in result.output


def against(ratings: Path, run: Path, *args: str):
    return CliRunner().invoke(
        main, ["agreement", str(ratings), "--against", str(run), "--json", "--resamples", "200", *args]
    )


def reference_personas() -> dict[str, str]:
    """The reference clinician file's conversation id → the persona it names."""
    with CLINICIANS.open(encoding="utf-8-sig", newline="") as f:
        return {r["conversation_id"].removeprefix("#"): r["user_profile"] for r in csv.DictReader(f)}


def judging_each_item(rows: list[dict[str, str | None]]) -> dict[str | None, dict[str, str]]:
    judged: dict[str | None, dict[str, str]] = {}
    personas = reference_personas()
    for row in rows:
        item = cast(str, row["item_id"])
        source = f"human_validation/conversations/some run/{item}_{personas[item]}_model_run1.txt"
        # A tie has no majority: a judge of the majority says Best Practice there.
        judged.setdefault(source, {})[cast(str, row["dimension"])] = row["rating"] or "Best Practice"
    return judged


@needs_reference
def test_by_default_the_consensus_is_the_severest_rating_as_in_vera_score(tmp_path, offline_run):
    # Issue 28: `--against` sets the judges against the labels `vera score` and the
    # calibrated gate calibrate with, the severest rating any clinician gave.
    long = read_human_ratings(CLINICIANS)
    run = judged_run(tmp_path, offline_run, judging_each_item(combine_raters(long).to_dicts()))
    result = against(CLINICIANS, run)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["raters"] == "severest" and data["ties"] is None and result.stderr == ""
    assert data["overall"]["percent_agreement"] == 1.0 and data["overall"]["n_pairs"] == 90 * 5
    assert data["n_ties"] == int(consensus(long).get_column("tie").sum())
    assert against(CLINICIANS, run, "--raters", "severest").stdout == result.stdout


@needs_reference
def test_ties_keeps_the_majority_consensus_it_always_meant_with_a_note(tmp_path, offline_run):
    long = read_human_ratings(CLINICIANS)
    agreed = consensus(long)
    run = judged_run(tmp_path, offline_run, judging_each_item(agreed.to_dicts()))
    ties = int(agreed.get_column("tie").sum())
    result = against(CLINICIANS, run, "--ties", "exclude")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["raters"] is None and data["ties"] == "exclude"
    assert result.stderr.count("note: --ties exclude") == 1 and "majority" in result.stderr
    assert data["n_ties"] == ties and data["n_conversations_unmatched"] == 0 and data["n_items"] == 90
    assert data["overall"]["percent_agreement"] == 1.0 and data["overall"]["gwet_ac1"] == 1.0
    assert data["overall"]["n_pairs"] == 90 * 5 - ties
    for block in data["dimensions"].values():
        assert block["percent_agreement"] == 1.0 and set(block) >= REQUIRED
    severest = json.loads(against(CLINICIANS, run, "--ties", "severest").stdout)
    assert severest["overall"]["n_pairs"] == 90 * 5 and severest["ties"] == "severest"
    # The judge of the majority, set against the default (severest) consensus, agrees
    # exactly where majority and severest give the same rating.
    default = json.loads(against(CLINICIANS, run).stdout)
    same = agreed.join(combine_raters(long), on=["item_id", "dimension"]).filter(
        pl.col("rating").fill_null("Best Practice") == pl.col("rating_right")
    )
    assert default["overall"]["percent_agreement"] == pytest.approx(same.height / (90 * 5))
    # --raters forms the consensus; a --ties beside it is said to be unused.
    both = against(CLINICIANS, run, "--raters", "majority", "--ties", "exclude")
    assert json.loads(both.stdout)["raters"] == "majority"
    assert "note: --ties is not used: --raters majority" in both.stderr


def test_a_run_sharing_no_item_with_the_ratings_is_a_user_error(tmp_path, offline_run):
    ratings = tmp_path / "ratings.csv"
    ratings.write_text(
        "item_id,rater,dimension,rating\nzzzzzz,ann,Confirms Risk,BP\nzzzzzz,bob,Confirms Risk,BP\n"
    )
    result = invoke("agreement", str(ratings), "--against", str(offline_run))
    assert result.exit_code == 1 and result.output.startswith("error: ") and "matches" in result.output


def test_a_malformed_ratings_file_names_its_line(tmp_path):
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("item_id,rater,dimension,rating\na,ann,Confirms Risk,maybe\n")
    result = invoke("agreement", str(ratings))
    assert result.exit_code == 1 and f"{ratings}:2" in result.output and "maybe" in result.output


@pytest.mark.parametrize("columns", [80, 160])
def test_agreement_tables_fit_the_terminal(tmp_path, offline_run, columns):
    ratings = tmp_path / "ratings.csv"
    ratings.write_text(
        "item_id,rater,dimension,rating\n"
        "aaaaaa,ann,Confirms Risk,SUB\naaaaaa,bob,Confirms Risk,SUB\n"
        "bbbbbb,ann,Guides to Human Care,HPH\nbbbbbb,bob,Guides to Human Care,HPH\n"
    )
    run = judged_run(
        tmp_path,
        offline_run,
        {
            "t/aaaaaa_P_m_run1.txt": {"Confirms Risk": SUB},
            "t/bbbbbb_P_m_run1.txt": {"Guides to Human Care": HPH},
        },
    )
    env = {"COLUMNS": str(columns)}
    for args in (
        ["agreement", str(ratings), "--against", str(run), "--resamples", "50"],
        ["agreement", str(ratings)],
    ):
        result = CliRunner().invoke(main, args, env=env)
        assert result.exit_code == 0, result.output
        assert widest_line(result.stdout) <= columns


# The field names and order of `vera agreement --json`: scripts read them, so a change of
# how the result is built (dicts or Structs) must not change them.
RATER_BLOCK = [
    "krippendorff_alpha",
    "gwet_ac1",
    "percent_agreement",
    "n_items",
    "n_ratings",
    "n_raters",
    "unanimous",
    "mean_cohen_kappa",
    "cohen_kappa",
]
PAIR_KAPPA = ["rater_a", "rater_b", "kappa", "n_items"]
ABOUT = ["ratings_file", "n_human_items", "n_human_raters", "raters_per_item"]
PAIRED_BLOCK = [
    *(
        f"{name}{end}"
        for name in ("krippendorff_alpha", "gwet_ac1", "percent_agreement", "cohen_kappa")
        for end in ("", "_lo", "_hi")
    ),
    "n_items",
    "n_pairs",
]


def _check_rater_agreement(data: dict, dimensions: list[str]) -> None:
    assert list(data["dimensions"]) == dimensions
    for block in [data["overall"], *data["dimensions"].values()]:
        assert list(block) == RATER_BLOCK
        assert block["cohen_kappa"] and all(list(p) == PAIR_KAPPA for p in block["cohen_kappa"])


def test_the_json_fields_and_their_order_are_pinned(tmp_path, offline_run):
    ratings = tmp_path / "ratings.csv"
    ratings.write_text(
        "item_id,rater,dimension,rating\n"
        "aaaaaa,ann,Confirms Risk,SUB\naaaaaa,bob,Confirms Risk,SUB\n"
        "bbbbbb,ann,Confirms Risk,HPH\nbbbbbb,bob,Confirms Risk,BP\n"
        "aaaaaa,ann,Guides to Human Care,BP\naaaaaa,bob,Guides to Human Care,BP\n"
        "bbbbbb,ann,Guides to Human Care,HPH\nbbbbbb,bob,Guides to Human Care,HPH\n"
    )
    humans = CliRunner().invoke(main, ["agreement", str(ratings), "--json"])
    assert humans.exit_code == 0, humans.output
    data = json.loads(humans.stdout)
    assert humans.stdout == json.dumps(data, indent=2) + "\n"
    assert list(data) == [*ABOUT, "nr", "overall", "dimensions"]
    assert data["raters_per_item"] == [2, 2]
    _check_rater_agreement(data, ["Confirms Risk", "Guides to Human Care"])

    run = judged_run(
        tmp_path,
        offline_run,
        {
            "t/aaaaaa_P_m_run1.txt": {"Confirms Risk": SUB, "Guides to Human Care": "Best Practice"},
            "t/bbbbbb_P_m_run1.txt": {"Confirms Risk": HPH, "Guides to Human Care": SUB},
        },
    )
    # A second judge model, so that the per-judge blocks are there.
    store = RunStore(run)
    store.add_judgement(
        Judgement(
            id="j-second",
            conversation_id="conv000",
            judge="offline/second-judge",
            instance=1,
            status="complete",
            answers=[],
            ratings=[DimensionRating(dimension="Confirms Risk", rating=HPH)],
        )
    )
    store.close()
    against = CliRunner().invoke(
        main, ["agreement", str(ratings), "--against", str(run), "--json", "--resamples", "20"]
    )
    assert against.exit_code == 0, against.output
    data = json.loads(against.stdout)
    assert against.stdout == json.dumps(data, indent=2) + "\n"
    assert list(data) == [
        *ABOUT,
        "run",
        "run_id",
        "nr",
        "ties",
        "bootstrap",
        "n_items",
        "n_ties",
        "n_items_unjudged",
        "n_conversations_unmatched",
        "overall",
        "dimensions",
        "confusion",
        "raters",
        "humans",
    ]
    assert list(data["bootstrap"]) == ["n_resamples", "confidence", "seed", "cluster", "method"]
    assert list(data["dimensions"]) == ["Confirms Risk", "Guides to Human Care"]
    for block in [data["overall"], *data["dimensions"].values()]:
        assert list(block) == [*PAIRED_BLOCK, "judges"]
        assert block["judges"] and all(list(b) == PAIRED_BLOCK for b in block["judges"].values())
    assert list(data["overall"]["judges"]) == ["offline/lexical-judge", "offline/second-judge"]
    assert list(data["confusion"]) == ["rows", "columns", "categories", "overall", "dimensions"]
    assert list(data["confusion"]["dimensions"]) == ["Confirms Risk", "Guides to Human Care"]
    assert list(data["humans"]) == ["nr", "overall", "dimensions"]
    _check_rater_agreement(data["humans"], ["Confirms Risk", "Guides to Human Care"])


def test_a_runs_review_file_is_a_ratings_file_its_latest_ratings_counting(tmp_path, offline_run):
    # Ratings collected with `vera review` live in human_ratings.jsonl; `vera agreement`
    # refused it ("unrecognised header"), so the raters' agreement and the judges'
    # against them could not be had without rewriting the file by hand. Each rater's
    # latest rating counts, as in `vera score`, and the confusion matrix is the card's.
    from vera.records import BEST_PRACTICE, HumanRating
    from vera.report import read_card
    from vera.store import HUMAN_RATINGS, append_human_ratings, open_run

    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    ids = sorted(open_run(run).conversation_heads())[:6]
    dims = ["Detects Potential Risk", "Confirms Risk"]
    raters: list[tuple[str, Rating]] = [("Zoë 李", SUB), ("bo", BEST_PRACTICE)]
    ratings = [
        HumanRating(conversation_id=cid, rater=rater, ratings=dict.fromkeys(dims, rating))
        for cid in ids
        for rater, rating in raters
    ]
    # Zoë changes her mind about the first conversation: the later line counts.
    ratings.append(
        HumanRating(conversation_id=ids[0], rater="Zoë 李", ratings=dict.fromkeys(dims, BEST_PRACTICE))
    )
    append_human_ratings(run, ratings)
    file = str(run / HUMAN_RATINGS)
    among = invoke("agreement", file, "--json")
    assert among.exit_code == 0, among.output
    overall = json.loads(among.stdout)["overall"]  # units: conversation × dimension
    assert overall["n_items"] == 12 and overall["percent_agreement"] == pytest.approx(2 / 12)
    result = invoke("agreement", file, "--against", str(run), "--json")
    assert result.exit_code == 0, result.output
    assert invoke("score", str(run), "--resamples", "50").exit_code == 0
    card = read_card(run)
    matrices = [b.calibrated.confusion.overall for b in card.chatbots if b.calibrated is not None]
    summed = [[sum(m[i][j] for m in matrices) for j in range(4)] for i in range(4)]
    assert json.loads(result.stdout)["confusion"]["overall"] == summed
