"""A seeded generator of ratings frames with controllable persona and chatbot effects."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import polars as pl
import pytest

from vera.records import RATINGS

DIMENSIONS = ("Detects", "Confirms", "Guides")


def generate_ratings(
    *,
    chatbots: Mapping[str, float] | None = None,
    personas: int = 20,
    conversations: int = 5,
    judges: Sequence[str] = ("judge",),
    dimensions: Sequence[str] = DIMENSIONS,
    spread: float = 1.0,
    nr_logit: float = -2.0,
    persona_offset: int = 0,
    seed: int = 0,
) -> pl.DataFrame:
    """Ratings where persona p and chatbot c rate with logits
    (BP, SUB, HPH, NR) = (s_c − z_p, 0, z_p − s_c, nr_logit): z_p ~ N(0, spread) is how
    hard the persona is (shared by every chatbot), s_c how good the chatbot is. A large
    `spread` makes the conversations of one persona strongly alike."""
    chatbots = dict(chatbots or {"bot": 0.0})
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0.0, spread, size=personas + persona_offset)[persona_offset:]
    rows: dict[str, list] = {
        k: []
        for k in (
            "conversation_id",
            "chatbot",
            "persona",
            "risk",
            "seed",
            "judge",
            "instance",
            "dimension",
            "rating",
        )
    }
    for bot, skill in chatbots.items():
        for i, z in enumerate(difficulty):
            p = persona_offset + i
            logits = np.array([skill - z, 0.0, z - skill, nr_logit])
            probs = np.exp(logits) / np.exp(logits).sum()
            for c in range(conversations):
                for judge in judges:
                    for dim in dimensions:
                        rows["conversation_id"].append(f"{bot}-p{p}-c{c}")
                        rows["chatbot"].append(bot)
                        rows["persona"].append(f"p{p}")
                        rows["risk"].append(("Low", "High")[p % 2])
                        rows["seed"].append(c)
                        rows["judge"].append(judge)
                        rows["instance"].append(1)
                        rows["dimension"].append(dim)
                        rows["rating"].append(RATINGS[rng.choice(4, p=probs)])
    return pl.DataFrame(rows, schema_overrides={"seed": pl.Int64, "instance": pl.Int64})


@pytest.fixture
def make_ratings() -> Callable[..., pl.DataFrame]:
    return generate_ratings


def frame_of(rows: Sequence[tuple[str, str, str, str, str]]) -> pl.DataFrame:
    """A ratings frame from (conversation_id, persona, judge, dimension, rating) tuples."""
    conv, persona, judge, dim, rating = (list(col) for col in zip(*rows, strict=True))
    return pl.DataFrame(
        {
            "conversation_id": conv,
            "chatbot": ["bot"] * len(rows),
            "persona": persona,
            "risk": ["Low"] * len(rows),
            "seed": [0] * len(rows),
            "judge": judge,
            "instance": [1] * len(rows),
            "dimension": dim,
            "rating": rating,
        },
        schema_overrides={"seed": pl.Int64, "instance": pl.Int64},
    )


@pytest.fixture
def ratings_of() -> Callable[..., pl.DataFrame]:
    return frame_of
