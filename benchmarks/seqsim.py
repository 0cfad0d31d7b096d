"""A seeded generator of paired gate data for `bench_sequential.py` and the tests.

Each persona has its own rating probabilities per dimension (a Dirichlet draw around
the population's of synthetic_labels.py, as in bench_calibration.py); a unit is one
persona × seed. The baseline and the candidate rate a unit from common random numbers
(the same simulated user and seed make their conversations alike): with probability
`coupling` a dimension's uniform draw is shared, else the candidate draws its own. A
candidate worse by `shift` moves that share of every persona's Best Practice mass to
High Potential for Harm.
"""

from __future__ import annotations

import numpy as np

from benchmarks.synthetic_labels import BASE, CONCENTRATION, DIMENSIONS
from vera.stats.bootstrap import score_from_percentages

LABELS = (*DIMENSIONS, "Overall")


def worsen(p: np.ndarray, shift: float) -> np.ndarray:
    """Move `shift` of the Best Practice mass to High Potential for Harm (negative: the
    other way, of the harm mass to Best Practice)."""
    q = p.copy()
    if shift >= 0:
        moved = p[..., 0] * shift
        q[..., 0] -= moved
        q[..., 2] += moved
    else:
        moved = p[..., 2] * -shift
        q[..., 2] -= moved
        q[..., 0] += moved
    return q


def true_scores(shift: float) -> np.ndarray:
    """The population's score difference candidate − baseline per row (dimensions,
    Overall): what the gate is about when the personas are a sample of many."""
    out = []
    for probs in (BASE, worsen(BASE, shift)):
        rated = 1.0 - probs[:, 3]
        per_dim = score_from_percentages(100 * probs[:, 0] / rated, 100 * probs[:, 2] / rated)
        overall = score_from_percentages(
            100 * probs[:, 0].sum() / rated.sum(), 100 * probs[:, 2].sum() / rated.sum()
        )
        out.append(np.append(per_dim, overall))
    return out[1] - out[0]


def shift_for(diff: float) -> float:
    """The shift whose true Overall difference is `diff` (bisection)."""
    if diff == 0:
        return 0.0
    lo, hi = (0.0, 0.99) if diff < 0 else (-0.99, 0.0)
    for _ in range(60):
        mid = (lo + hi) / 2
        # A larger shift is a worse candidate: too good → shift more, else less.
        if true_scores(mid)[-1] > diff:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def draw(rng: np.random.Generator, reps: int, personas: int, seeds: int, shift: float, coupling: float = 0.5):
    """(baseline, candidate) counts (reps, N, rows, 3): BP, HPH, rated per unit and row
    (dimensions, then Overall), one judge; and the persona of each unit (N,)."""
    d = len(DIMENSIONS)
    probs = np.stack(
        [rng.dirichlet(CONCENTRATION * BASE[k], size=(reps, personas)) for k in range(d)], axis=2
    )
    cand_probs = worsen(probs, shift)
    n = personas * seeds
    persona_of = np.repeat(np.arange(personas), seeds)
    u = rng.random((reps, n, d))
    own = rng.random((reps, n, d))
    u_c = np.where(rng.random((reps, n, d)) < coupling, u, own)
    out = []
    for p, uu in ((probs, u), (cand_probs, u_c)):
        cdf = np.cumsum(p[:, persona_of], axis=-1)  # (reps, n, d, 4)
        rating = (uu[..., None] > cdf).sum(axis=-1)  # 0 BP, 1 SUB, 2 HPH, 3 NR
        counts = np.stack([rating == 0, rating == 2, rating != 3], axis=-1).astype(np.float64)
        out.append(np.concatenate([counts, counts.sum(axis=2, keepdims=True)], axis=2))
    return out[0], out[1], persona_of
