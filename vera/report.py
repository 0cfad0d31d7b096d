"""Score a run directory: ratings.parquet, card.json and card.md from its records.

Everything here is derived from the append-only records, so `vera score RUN_DIR` can
rebuild the card at any time (after a resume, a merge, or with other CI settings).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from vera.card import build_card, render_markdown
from vera.errors import UserError
from vera.scoring import ratings_frame, summaries, write_ratings
from vera.stats import spec_of
from vera.store import RunStore


def score_run(
    run_dir: str | Path,
    *,
    resamples: int | None = None,
    confidence: float | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    """Rebuild ratings.parquet, card.json and card.md; return the card."""
    root = Path(run_dir)
    if not (root / "manifest.json").exists():
        raise UserError(f"{root}: not a vera run directory (no manifest.json)")
    store = RunStore(root)
    try:
        manifest = store.read_manifest()
        assert manifest is not None
        stats_cfg = manifest.config.get("stats", {})
        resamples = resamples if resamples is not None else int(stats_cfg.get("resamples", 2000))
        confidence = confidence if confidence is not None else float(stats_cfg.get("confidence", 0.95))
        seed = seed if seed is not None else int(stats_cfg.get("seed", 0))
        frame = ratings_frame(store.complete_pairs())
        write_ratings(frame, root / "ratings.parquet")
        by_chatbot, by_risk = summaries(frame, resamples=resamples, confidence=confidence, seed=seed)
        spec = spec_of(by_chatbot) if by_chatbot.height else None
        bootstrap = {
            "resamples": resamples,
            "confidence": confidence,
            "seed": seed,
            "cluster": spec.cluster if spec else "persona",
            "method": spec.method if spec else "percentile cluster bootstrap",
        }
        card = build_card(manifest, store, by_chatbot, by_risk, bootstrap=bootstrap)
        store.write_json("card.json", card)
        store.write_text("card.md", render_markdown(card))
        return card
    finally:
        store.close()


def read_card(run_dir: str | Path) -> dict[str, Any]:
    p = Path(run_dir) / "card.json"
    if not p.exists():
        raise UserError(f"{run_dir}: no card.json (run `vera score {run_dir}` first)")
    return msgspec.json.decode(p.read_bytes())
