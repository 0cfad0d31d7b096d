"""The score card of one run, built from its append-only records: `vera score RUN_DIR`
can rebuild it at any time (after a resume, a merge, or with other interval settings)."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import polars as pl

from vera import __version__
from vera.errors import DataError, UserError, storage_error
from vera.files import CorruptLine, Damage, watching
from vera.records import RaterRule, RunManifest
from vera.report.card._build import build_card
from vera.report.card._html import render_html
from vera.report.card._markdown import render_markdown
from vera.report.card._plots import Plot, card_plots
from vera.report.card._schema import Card, decode_card, encode_card
from vera.report.card._sequence import left_out_recorded, read_sequence
from vera.report.card._text import card_strings
from vera.report.improvements._report import exemplar_conversations
from vera.report.shared._pages import write_card_pages
from vera.report.shared._realism import flagged_ids, model_checks, realism_block, user_checks
from vera.report.shared._scoring import ANSWERS_FILE, RATINGS_FILE, ratings_and_answers, write_parquet
from vera.stats.humans import DEFAULT_RATER_RULE
from vera.store import (
    HUMAN_RATINGS,
    atomic_write,
    check_human_dimensions,
    check_transcripts,
    open_run,
    read_human_ratings_numbered,
    read_manifest,
    unfinished,
)

PLOTS_DIR = "plots"


JUDGEMENT_KEY = ["conversation_id", "judge", "instance"]

# ---------------------------------------------------------------------------------------
# One run: the card
# ---------------------------------------------------------------------------------------


def score_run(
    run_dir: str | Path,
    *,
    resamples: int | None = None,
    confidence: float | None = None,
    seed: int | None = None,
    frames: tuple[pl.DataFrame, pl.DataFrame] | None = None,
    by: Sequence[str] | None = None,
    exclude_flagged: bool = False,
    raters: RaterRule | None = None,
    skipped: Sequence[CorruptLine] = (),
) -> Card:
    """Write ratings.parquet, answers.parquet, card.json, card.md, card.html, plots/*.png
    and conversations/<id>.html for the conversations the card lists; return the card.
    `frames` (ratings, answers) are the frames a run streamed while it went; without
    them they are rebuilt from the run's records. `by`: the persona columns scores are
    broken down by (default: the disclosure style). `exclude_flagged` leaves the
    conversations the simulated-user check flagged out of every score (ratings.parquet
    keeps them: it is the run's, not the card's). `skipped`: corrupt lines left out
    before the run's records were written (a merge's shards), named on the card too."""
    root = Path(run_dir)
    with watching() as damage:  # refuses or counts corrupt lines, as the command says
        for line in skipped:
            damage.lines.setdefault((str(line.path), line.number), line)
        return _score(
            root,
            damage,
            resamples=resamples,
            confidence=confidence,
            seed=seed,
            frames=frames,
            by=by,
            exclude_flagged=exclude_flagged,
            raters=raters,
        )


def _score(
    root: Path,
    damage: Damage,
    *,
    resamples: int | None,
    confidence: float | None,
    seed: int | None,
    frames: tuple[pl.DataFrame, pl.DataFrame] | None,
    by: Sequence[str] | None,
    exclude_flagged: bool,
    raters: RaterRule | None,
) -> Card:
    # A line a crash tore is mended, so the records the card is written from are whole.
    records = open_run(root, repair=True)
    manifest = records.manifest
    settings = stats_settings(manifest, resamples=resamples, confidence=confidence, seed=seed, raters=raters)
    # The frames are built from the records streamed one judgement at a time.
    frame, answers = frames if frames is not None else ratings_and_answers(records.complete_pairs())
    # Judgements are stored in the order they finished, which no seed fixes; sorted by
    # job (keeping the rubric's order within a judgement), the same run gives the same
    # files.
    frame, answers = (f.sort(JUDGEMENT_KEY, maintain_order=True) for f in (frame, answers))
    # Human ratings (vera review, vera ratings import) add calibrated scores to the card.
    # A dimension the run does not have is an error naming its line, before anything is
    # written (a misspelt name would otherwise drop out of the calibration silently).
    numbered = read_human_ratings_numbered(root)
    if frame.height:
        check_human_dimensions(root, numbered, set(frame.get_column("dimension").unique().to_list()))
    # A rating made on another transcript (another run of the same config) is refused.
    check_transcripts(root / HUMAN_RATINGS, numbered, records)
    humans = [h for _, h in numbered]
    write_parquet(frame, root / RATINGS_FILE)
    write_parquet(answers, root / ANSWERS_FILE)
    # Every complete conversation's simulated-user check (docs/realism.md).
    checks = user_checks(
        manifest, records.iter_conversations(), model_checks(records.judgement_heads().values())
    )
    flagged = flagged_ids(checks)
    if exclude_flagged and flagged:
        frame = frame.filter(~pl.col("conversation_id").is_in(sorted(flagged)))
    foreign = sorted({h.conversation_id for h in humans} - records.conversations.keys())
    if foreign:
        # Kept in the file (nothing is lost), left out of the card: say so, once.
        print(
            f"warning: {root / HUMAN_RATINGS}: {len(foreign)} rated conversation(s) are not in this run "
            f"and are left out of the calibration (first: {foreign[0]!r})",
            file=sys.stderr,
            flush=True,
        )
    card = build_card(
        manifest,
        records,
        frame,
        humans=humans,
        answers=answers,  # the run diagnostics cover the whole run
        by=by,
        realism=realism_block([s.ref for s in manifest.user_agents], checks, excluded=exclude_flagged),
        excluded=flagged if exclude_flagged else frozenset(),
        resamples=settings.resamples,
        confidence=settings.confidence,
        seed=settings.seed,
        raters=settings.raters,
    )
    if damage.lines and card.status is not None:  # every record file has been read by now
        card = msgspec.structs.replace(
            card, status=msgspec.structs.replace(card.status, skipped_lines=_skipped(damage, root))
        )
    card = with_unfinished(card, root)
    atomic_write(root / "card.json", encode_card(card))
    render_card_files(card, root)
    # The card's harm list links each conversation to its page beside card.html: only
    # those conversations and their judgements are read whole.
    linked = {h.conversation_id for bot in card.chatbots for h in bot.harmful}
    if card.fix_first is not None:
        linked |= exemplar_conversations(card.fix_first)
    if card.realism is not None:
        linked |= {f.conversation_id for u in card.realism.by_user_agent for f in u.flagged_conversations}
    linked &= records.conversations.keys()
    write_card_pages(
        root,
        linked,
        manifest,
        {cid: records.read_conversation(cid) for cid in sorted(linked)},
        [records.read_judgement(j.id) for cid in sorted(linked) for j in records.judgements_of(cid)],
    )
    return card


def _skipped(damage: Damage, root: Path) -> list[str]:
    """`file:line` of each corrupt line the card leaves out, file by file; a file of
    another run (a merged shard's) by its path, so the card says which run it was."""

    def name(path: Path) -> str:
        return path.name if path.parent == root else str(path)

    lines = sorted((name(line.path), line.number) for line in damage.lines.values())
    return [f"{file}:{number}" for file, number in lines]


class StatsSettings(msgspec.Struct, frozen=True, kw_only=True):
    """The bootstrap settings a card, a comparison or the gate is computed with."""

    resamples: int
    confidence: float
    seed: int
    raters: RaterRule = DEFAULT_RATER_RULE


def stats_settings(
    manifest: RunManifest,
    *,
    resamples: int | None,
    confidence: float | None,
    seed: int | None,
    raters: RaterRule | None = None,
) -> StatsSettings:
    """Bootstrap settings: the ones given, else the run config's [stats], else defaults;
    and the rule combining raters (given, else `severest`). The rule is not a config key:
    a field added to the stored [stats] would change the bytes and fingerprint of every
    earlier run's manifest."""
    cfg = manifest.config.stats
    return StatsSettings(
        resamples=resamples if resamples is not None else cfg.resamples,
        confidence=confidence if confidence is not None else cfg.confidence,
        seed=seed if seed is not None else cfg.seed,
        raters=raters if raters is not None else DEFAULT_RATER_RULE,
    )


def render_card_files(card: Card, run_dir: str | Path) -> Path:
    """Write card.md, plots/*.png and card.html from a card; return card.html's path.
    Each plot is drawn once and used for both the PNG file and the page.

    Files rendered from this same card by this version of vera, and not touched since,
    are left as they are (drawing the plots is most of what `vera card` takes): a note
    in plots/ (`RENDERED`) keeps the card's hash and each file's size and time."""
    root = Path(run_dir)
    html = root / "card.html"
    key = hashlib.sha256(encode_card(card) + b"\0" + __version__.encode() + _words(card)).hexdigest()
    if _rendered(root, key):
        return html
    atomic_write(root / "card.md", render_markdown(card).encode())
    plots = card_plots(card)
    write_plots(plots, root / PLOTS_DIR)
    atomic_write(html, render_html(card, plots).encode())
    files = ["card.md", "card.html", *(f"{PLOTS_DIR}/{p.name}" for p in plots)]
    stamp = {"card": key, "files": {name: _signature(root / name) for name in files}}
    atomic_write(root / RENDERED, msgspec.json.encode(stamp), what="the note of the rendered card")
    return html


def _words(card: Card) -> bytes:
    """What the card's words depend on besides the card: its locale pack's strings,
    rubric glosses and value labels, read now. A pack edited since the files were drawn
    (a translation fixed) draws them again, though card.json is the same. Nothing for a
    card in vera's English, so its note (and the files) stay as they were."""
    s = card_strings(card)
    if not (s.own or s.glosses or s.values):
        return b""
    return b"\0" + msgspec.json.encode([s.lang, s.own, s.glosses, s.values])


# What `render_card_files` last wrote, from which card (see there).
RENDERED = f"{PLOTS_DIR}/.rendered.json"


def _signature(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


def _rendered(root: Path, key: str) -> bool:
    """Whether every file of the card `key` is on disk as `render_card_files` left it."""
    try:
        stamp = msgspec.json.decode((root / RENDERED).read_bytes(), type=dict[str, Any])
        files = stamp["files"]
        return bool(stamp["card"] == key and files) and all(
            _signature(root / name) == list(sig) for name, sig in files.items()
        )
    except (OSError, KeyError, TypeError, msgspec.DecodeError, msgspec.ValidationError):
        return False  # no note, an old one, or a file gone: render


def write_card_html(card: Card, run_dir: str | Path) -> Path:
    """Write only card.html (its plots are inline); return its path."""
    html = Path(run_dir) / "card.html"
    atomic_write(html, render_html(card, card_plots(card)).encode())
    return html


def write_plots(plots: Sequence[Plot], folder: Path) -> None:
    try:
        folder.mkdir(exist_ok=True)
        names = {p.name for p in plots}
        # A plot that no longer applies (one chatbot left after a rescore) must not linger.
        for stale in folder.glob("*.png"):
            if stale.name not in names and stale.name in _PLOT_NAMES:
                stale.unlink()
    except OSError as exc:
        raise storage_error(folder, "the card's plots", exc) from None
    for p in plots:
        atomic_write(folder / p.name, p.png, what="a plot of the card")


_PLOT_NAMES = {"ratings.png", "scores.png", "risk.png", "chatbots.png", "differences.png"}


def read_card(run_dir: str | Path) -> Card:
    """A run's card.json (schema 2 or later) as a `Card`."""
    p = Path(run_dir) / "card.json"
    if not p.exists():
        raise UserError(f"{run_dir}: no card.json (run `vera score {run_dir}` first)")
    try:
        data = p.read_bytes()
    except OSError as exc:  # another user's card (chmod 000): one line, as for the records
        raise DataError(str(p), f"cannot read: {exc.strerror or exc}") from None
    card = decode_card(data, source=p)
    # The card is what the run's records say; a manifest that cannot be read, or that
    # belongs to another run, means the folder is damaged or mixed up, and the card's
    # numbers cannot be vouched for: say so rather than print them.
    manifest = read_manifest(Path(run_dir))
    if manifest.run_id != card.run_id:
        raise UserError(
            f"{p}: belongs to run {card.run_id!r}, but {Path(run_dir) / 'manifest.json'} is run "
            f"{manifest.run_id!r}; rebuild the card with `vera score {run_dir}`"
        )
    return with_unfinished(_left_out_unrecorded(card, Path(run_dir)), Path(run_dir))


def with_unfinished(card: Card, run_dir: Path) -> Card:
    """`card` saying what is true of the run's sessions now: one that did not end (killed,
    or still running) is named at its top, and one that has ended since is not. The card
    of a run whose sessions all ended is returned as it is, to the byte."""
    found = unfinished(run_dir)
    if found is None and card.unfinished_session is msgspec.UNSET:
        return card
    return msgspec.structs.replace(card, unfinished_session=found if found is not None else msgspec.UNSET)


def _left_out_unrecorded(card: Card, run_dir: Path) -> Card:
    """A gate's card written before cards said whether its gate recorded the rows left
    out of the verdict: it names none either way, so the gate's own last look decides,
    and a look from before left-out accounting makes the card say so instead of
    showing none (`left_out_unrecorded`). Any other card is returned as it is."""
    seq = card.sequential
    if seq is msgspec.UNSET or isinstance(seq.left_out, dict) or seq.left_out_unrecorded is True:
        return card
    try:
        looks = read_sequence(run_dir)
    except UserError:
        return card  # a damaged sequence: the card says what card.json says
    if not looks or left_out_recorded(looks[-1]):
        return card
    return msgspec.structs.replace(card, sequential=msgspec.structs.replace(seq, left_out_unrecorded=True))
