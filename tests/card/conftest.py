"""Run directories for the card tests: real offline runs made through the CLI, and one
enriched by hand with what offline runs cannot produce (a second judge model that
sometimes disagrees, failed work, reasoning with markup in it)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Final

import msgspec
import polars as pl
import pytest
from click.testing import CliRunner

from vera import records as rec
from vera.cli._main import main
from vera.records import Conversation, DimensionRating, HumanRating, Judgement, ModelSpec, Rating, RunManifest
from vera.report.card._score import score_run
from vera.store import HUMAN_RATINGS
from vera.store._writer import RunStore

from ..conftest import ROOT

BP: Final = rec.BEST_PRACTICE
SUB: Final = rec.SUBOPTIMAL
HPH: Final = rec.HIGH_POTENTIAL_FOR_HARM
SECOND_JUDGE = "offline/second-judge"
MARKUP_REASONING = 'Quoted "<script>alert(1)</script>" & <b>bold</b> back to the user'


def run_vera(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def offline_config(folder: Path, *, instances: int = 1) -> Path:
    """The built-in offline config with its paths made absolute, and `instances` judge
    instances."""
    text = (ROOT / "configs" / "offline.toml").read_text()
    for name in ("personas/vera-personas.tsv", "rubrics/vera-si.tsv", "personas/prompts", "rubrics/prompts"):
        text = text.replace(f'"../{name}"', f'"{ROOT / name}"')
    text = text.replace('"../providers"', f'"{ROOT / "providers"}"').replace('"../runs"', f'"{folder}"')
    text = text.replace("instances = 1", f"instances = {instances}")
    path = folder / f"offline-{instances}.toml"
    path.write_text(text)
    return path


@pytest.fixture(scope="session")
def offline_run(tmp_path_factory) -> Path:
    """Both offline chatbots, 40 personas, one seed, one judge."""
    out = tmp_path_factory.mktemp("card") / "offline"
    run_vera("run", "--out", str(out), "--seed", "1", "--limit-personas", "40", "--quiet")
    return out


@pytest.fixture
def unrated_run(tmp_path, offline_run) -> Path:
    """A copy of `offline_run` without its human ratings, for a test to add its own."""
    out = tmp_path / "run"
    shutil.copytree(offline_run, out, ignore=shutil.ignore_patterns(HUMAN_RATINGS))
    return out


@pytest.fixture(scope="session")
def multi_run(tmp_path_factory) -> Path:
    """Both offline chatbots, 16 personas, two seeds, one judge model with two instances."""
    folder = tmp_path_factory.mktemp("multi")
    out = folder / "multi"
    cfg = offline_config(folder, instances=2)
    run_vera(
        "run", "--config", str(cfg), "--out", str(out), "--seeds", "2", "--limit-personas", "16", "--quiet"
    )
    return out


@pytest.fixture(scope="session")
def rich_run(multi_run, tmp_path_factory) -> Path:
    """`multi_run` plus a second judge model (instance 1) that rates every third
    judgement's first Best Practice as Suboptimal, a failed conversation and judgement,
    and a harmful rating whose reasoning contains markup."""
    out = tmp_path_factory.mktemp("rich") / "rich"
    shutil.copytree(multi_run, out)
    store = RunStore(out)
    manifest = store.read_manifest()
    assert manifest is not None
    manifest.judges = [
        *manifest.judges,
        ModelSpec(ref=SECOND_JUDGE, provider="offline", protocol="offline", model="second"),
    ]
    store.write_manifest(manifest)
    originals = sorted(
        (j for j in (store.read_judgement(jid) for jid in store.judgements) if j.instance == 1),
        key=lambda j: j.id,
    )
    for k, j in enumerate(originals):
        ratings = list(j.ratings)
        if k % 3 == 0:
            first_bp = next((i for i, r in enumerate(ratings) if r.rating == BP), None)
            if first_bp is not None:
                ratings[first_bp] = DimensionRating(dimension=ratings[first_bp].dimension, rating=SUB)
        if k == 1:
            ratings[0] = DimensionRating(
                dimension=ratings[0].dimension, rating=HPH, question_id="Q-markup", reasoning=MARKUP_REASONING
            )
        store.add_judgement(
            msgspec.structs.replace(j, id=f"{j.id}-second", judge=SECOND_JUDGE, ratings=ratings)
        )
    any_conv = store.read_conversation(next(iter(store.conversations)))
    store.add_conversation(
        Conversation(
            id="failed-conversation",
            chatbot=any_conv.chatbot,
            user_agent=any_conv.user_agent,
            persona=any_conv.persona,
            risk=any_conv.risk,
            seed=0,
            turns=[],
            status="failed",
            ended_by="error",
            error="ServerError: HTTP 503 after 3 attempts",
        )
    )
    store.add_judgement(
        Judgement(
            id="failed-judgement",
            conversation_id=any_conv.id,
            judge=SECOND_JUDGE,
            instance=2,
            status="failed",
            answers=[],
            ratings=[],
            error="BadResponseError: no JSON",
        )
    )
    store.close()
    score_run(out, resamples=400)
    return out


def manifest_of(run_dir: Path) -> RunManifest:
    return msgspec.json.decode((run_dir / "manifest.json").read_bytes(), type=RunManifest)


def judged(run_dir: Path) -> pl.DataFrame:
    """The run's judge ratings, one row per (conversation, judge, instance, dimension)."""
    return pl.read_parquet(run_dir / "ratings.parquet")


def conversation_ids(frame: pl.DataFrame) -> list[str]:
    """The conversations `frame` rates, sorted (a stable order to pick every k-th from)."""
    ids: list[str] = frame.get_column("conversation_id").unique().sort().to_list()
    return ids


def as_judged(
    frame: pl.DataFrame, ids: list[str], *, rater: str = "ann", rating: Rating | None = None
) -> list[HumanRating]:
    """A human rating of each conversation in `ids`, of every dimension the judge rated
    in it: the judge's own rating (a human who agrees with the judge), or `rating`
    throughout."""
    return [
        HumanRating(
            conversation_id=cid,
            rater=rater,
            ratings={
                r["dimension"]: r["rating"] if rating is None else rating
                for r in frame.filter(pl.col("conversation_id") == cid).to_dicts()
            },
        )
        for cid in ids
    ]


def all_rated(
    ids: list[str], dimensions: list[str], rating: Rating, *, raters: tuple[str, ...] = ("ann",)
) -> list[HumanRating]:
    """Each rater's rating of each conversation in `ids`: `rating` on every one of
    `dimensions`, whatever the judge said."""
    return [
        HumanRating(conversation_id=cid, rater=rater, ratings=dict.fromkeys(dimensions, rating))
        for cid in ids
        for rater in raters
    ]
