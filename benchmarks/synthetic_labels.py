"""Seeded synthetic judge and human ratings for the coverage simulations
(bench_calibration.py, bench_rare_harm.py and, through bench_calibration,
bench_ratings_plan.py), and the five-dimension population seqsim.py draws its
paired runs around.

Each persona has its own rating probabilities (a Dirichlet draw around the
population's), so harm clusters in some personas as it does in real runs. A
conversation's true rating (what clinicians would say) is drawn from its persona's
probabilities; a judge sees it through a known confusion matrix. Ratings are codes
0 BP, 1 SUB, 2 HPH, 3 NR. One generator, so that every simulation's judges and
personas are the same ones and a change to them is made once.
"""

from __future__ import annotations

import numpy as np

DIMENSIONS = ("Detects", "Confirms", "Guides", "Supportive", "Boundaries")
# The population's rating probabilities per dimension (BP, SUB, HPH, NR), for the
# five-dimension simulations (bench_calibration.py, seqsim.py).
BASE = np.array(
    [
        [0.55, 0.20, 0.15, 0.10],
        [0.40, 0.25, 0.25, 0.10],
        [0.45, 0.25, 0.20, 0.10],
        [0.60, 0.25, 0.10, 0.05],
        [0.70, 0.15, 0.10, 0.05],
    ]
)
CONCENTRATION = 20.0  # of the personas' Dirichlet: lower → personas differ more
# rows: true rating, columns: the judge's rating (BP, SUB, HPH, NR)
JUDGES: dict[str, np.ndarray] = {
    # misses 40 % of the harmful ratings (HPH read as SUB 30 %, as BP 10 %) and calls
    # 10 % of Suboptimal Best Practice
    "lenient": np.array(
        [
            [0.97, 0.02, 0.00, 0.01],
            [0.10, 0.88, 0.01, 0.01],
            [0.10, 0.30, 0.60, 0.00],
            [0.02, 0.01, 0.00, 0.97],
        ]
    ),
    # right 75 % of the time, otherwise any other rating at random
    "noisy": np.full((4, 4), 0.25 / 3) + np.eye(4) * (0.75 - 0.25 / 3),
}
# The columns `vera.stats.ppi` works on: the shares BP, HPH, NR of (BP, SUB, HPH, NR).
SHARE_CODES = [0, 2, 3]


def persona_probabilities(
    rng: np.random.Generator, base: np.ndarray, personas: int, concentration: float = CONCENTRATION
) -> np.ndarray:
    """Each persona's (BP, SUB, HPH, NR) probabilities around the population's `base`
    (personas × 4). A zero in `base` is floored so the Dirichlet stays defined."""
    alpha = np.maximum(concentration * base, 1e-9)
    out: np.ndarray = rng.dirichlet(alpha, size=personas)
    return out


def draw_ratings(
    rng: np.random.Generator, probs: np.ndarray, judge: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(true, judge's) rating codes of one conversation per row of `probs`: the truth
    from the row's probabilities, the judge's rating through the confusion matrix."""
    truth = (rng.random((len(probs), 1)) > probs.cumsum(axis=1)).sum(axis=1).clip(0, 3)
    said = (rng.random((len(truth), 1)) > judge[truth].cumsum(axis=1)).sum(axis=1).clip(0, 3)
    return truth, said


def shares(codes: np.ndarray) -> np.ndarray:
    """The 0/1 indicators BP, HPH, NR of each rating code (rows × 3)."""
    out: np.ndarray = np.eye(4)[codes][:, SHARE_CODES]
    return out


def random_mask(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """A boolean mask over `n` items with `k` of them, chosen at random, set."""
    mask = np.zeros(n, dtype=bool)
    mask[rng.choice(n, size=k, replace=False)] = True
    return mask
