"""`vera compare --by-seed`'s summary across seeds (`across_seeds` in its JSON): for each
two chatbots, the spread of their same-seed differences, how many seeds agree in sign,
which do not, and the worst seed. Every number is computed again here from the JSON's
own `units` and `comparisons`, without vera's code."""

from __future__ import annotations

import json
import math
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

from vera.cli._main import main
from vera.report.card._schema import Comparison, Difference, Interval
from vera.report.compare._seeds import across_seeds


def expected(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The summary, from `units` and `comparisons` alone."""
    where = {u["unit"]: (u["unit"].rsplit(" seed ", 1)[0], u["seed"]) for u in data["units"]}
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for c in data["comparisons"]:
        (la, sa), (lb, sb) = where[c["a"]], where[c["b"]]
        if la != lb and sa == sb:
            groups.setdefault((la, lb), []).append({"seed": sa, **c["overall"], "n_shared": c["n_shared"]})
    out = []
    for (a, b), rows in groups.items():
        rows.sort(key=lambda r: r["seed"])
        d = [r["diff"] for r in rows if r["diff"] is not None]
        n = len(d)
        s = sorted(d)
        median = (s[(n - 1) // 2] + s[n // 2]) / 2 if n else None
        mean = sum(d) / n if n else None
        sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1)) if n > 1 and mean is not None else None
        sign = 0 if not median else (1 if median > 0 else -1)
        defined = [r for r in rows if r["diff"] is not None]
        if sign:
            worst = sorted(defined, key=lambda r: (r["diff"] * sign, r["seed"]))[0]["seed"]
        else:
            top = max((abs(x) for x in d), default=0.0)
            worst = next((r["seed"] for r in defined if abs(r["diff"]) == top), None) if top else None
        out.append(
            {
                "a": a,
                "b": b,
                "n_seeds": len(rows),
                "n_defined": n,
                "mean_diff": None if mean is None else round(mean, 1),
                "median_diff": None if median is None else round(median, 1),
                "min_diff": min(d, default=None),
                "max_diff": max(d, default=None),
                "sd_diff": None if sd is None else round(sd, 1),
                "a_higher": sum(x > 0 for x in d),
                "b_higher": sum(x < 0 for x in d),
                "equal": sum(x == 0 for x in d),
                "a_higher_excludes_zero": sum(1 for r in defined if r["excludes_zero"] and r["diff"] > 0),
                "b_higher_excludes_zero": sum(1 for r in defined if r["excludes_zero"] and r["diff"] < 0),
                "direction": {1: "a", -1: "b", 0: "none"}[sign],
                "against": [r["seed"] for r in defined if r["diff"] * sign < 0],
                "worst_seed": worst,
                "seeds": [
                    {
                        k: r[k]
                        for k in (
                            "seed",
                            "score_a",
                            "score_b",
                            "diff",
                            "diff_ci",
                            "excludes_zero",
                            "n_shared",
                        )
                    }
                    for r in rows
                ],
            }
        )
    return out


def approx_all(summary: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Mean and SD are rounded to one place from floats: the last place may differ by
    # the rounding of a sum taken in another order.
    return [
        {
            k: (pytest.approx(v, abs=0.051) if k in ("mean_diff", "sd_diff") and v is not None else v)
            for k, v in s.items()
        }
        for s in summary
    ]


@pytest.fixture(scope="module")
def three_seeds(tmp_path_factory):
    out = tmp_path_factory.mktemp("seeds") / "run"
    run = CliRunner().invoke(
        main, ["run", "--out", str(out), "--seeds", "2,10,3", "--limit-personas", "16", "--quiet"]
    )
    assert run.exit_code == 0, run.output
    return out


def test_the_summary_across_seeds_is_the_same_seed_pairs_summarised(three_seeds):
    result = CliRunner().invoke(
        main, ["compare", str(three_seeds), "--by-seed", "--json", "-", "--resamples", "200"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert len(data["comparisons"]) == 15  # every pair of 6 replicates stays listed
    summary = data["across_seeds"]
    assert [(s["a"], s["b"]) for s in summary] == [("offline/best-practice", "offline/risk-ignoring")]
    assert [s["seed"] for s in summary[0]["seeds"]] == [2, 3, 10]
    assert summary == approx_all(expected(data))
    # The stand-ins differ the same way at every seed.
    assert summary[0]["a_higher"] == 3 and summary[0]["against"] == [] and summary[0]["direction"] == "a"


def test_a_comparison_by_chatbot_has_no_summary_across_seeds(three_seeds):
    result = CliRunner().invoke(main, ["compare", str(three_seeds), "--json", "-", "--resamples", "100"])
    assert result.exit_code == 0, result.output
    assert "across_seeds" not in json.loads(result.stdout)


def _entry(a: str, b: str, diff: float | None, lo: float = -1.0, hi: float = 1.0) -> Comparison:
    d = Difference(score_a=50.0, score_b=None if diff is None else 50.0 - diff, diff=diff,
                   diff_ci=Interval(lo, hi), excludes_zero=None if diff is None else lo > 0 or hi < 0)  # fmt: skip
    return Comparison(a=a, b=b, n_shared=4, n_only_a=0, n_only_b=0, dimensions={}, overall=d)


@pytest.mark.parametrize(
    "diffs",
    [
        # a higher at the median; seeds 4 and 9 against it, seed 9 the worst
        {1: 5.0, 2: 7.5, 4: -1.0, 9: -3.0, 11: 6.0},
        # b higher; one seed undefined; a tie for the worst (the first seed is named)
        {1: -2.0, 2: None, 3: 4.0, 5: 4.0, 6: -7.0, 7: -1.0},
        # no sign at the median: the worst is the largest in size
        {1: 0.0, 2: 3.0, 3: -5.0, 4: 0.0},
        # every difference 0: no worst seed; a single seed: no SD
        {1: 0.0},
        {1: None, 2: None},
    ],
)
def test_agreement_against_and_the_worst_seed(diffs):
    labels = ("x/a", "run:y/b", "z")
    units = {f"{lab} seed {s}": (lab, s) for lab in labels for s in diffs}
    entries = []
    for i, la in enumerate(labels):
        for lb in labels[i + 1 :]:
            for s, d in diffs.items():
                lo, hi = (d - 2.5, d + 2.5) if d is not None else (None, None)
                entries.append(_entry(f"{la} seed {s}", f"{lb} seed {s}", d, lo or 0.0, hi or 0.0))
                # a chatbot against another at another seed, and against itself: not summarised
                entries.append(_entry(f"{la} seed {s}", f"{lb} seed {s + 100}", 99.0))
            first, last = min(diffs), max(diffs) + 100
            entries.append(_entry(f"{la} seed {first}", f"{la} seed {last}", -99.0))
    units |= {f"{lab} seed {s + 100}": (lab, s + 100) for lab in labels for s in diffs}
    got = msgspec.to_builtins(across_seeds(entries, units))
    data = {
        "units": [{"unit": u, "seed": s} for u, (_, s) in units.items()],
        "comparisons": msgspec.to_builtins(entries),
    }
    assert len(got) == 3
    assert got == approx_all(expected(data))
