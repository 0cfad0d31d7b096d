"""vera.report.shared._numbers: the one place numbers become text."""

from __future__ import annotations

import math

from vera.report.shared._numbers import (
    MISSING,
    coefficient,
    coefficient_ci,
    fixed,
    interval,
    num,
    percent_level,
    share,
)


def test_card_numbers_are_shown_as_stored_with_thousands_separators() -> None:
    assert [num(7931682), num(71.4), num(0.765), num(100.0)] == ["7,931,682", "71.4", "0.765", "100.0"]
    assert [num(None), num(True), num(False)] == [MISSING, "yes", "no"]
    assert interval(71.4, 69.5, 73.0) == "71.4 [69.5, 73.0]"
    assert interval(1.5, None, 2.0) == f"1.5 [{MISSING}, 2.0]"


def test_coefficients_have_three_places_and_undefined_is_a_dash() -> None:
    assert [coefficient(0.83), coefficient(-0.5), coefficient(1.0)] == ["0.830", "-0.500", "1.000"]
    assert coefficient(None) == coefficient(math.nan) == MISSING
    assert coefficient_ci(0.7654, 0.7, 0.82) == "0.765 [0.700, 0.820]"
    assert coefficient_ci(None, 0.1, 0.2) == MISSING
    assert coefficient_ci(0.5, None, math.nan) == f"0.500 [{MISSING}, {MISSING}]"


def test_levels_shares_and_fixed_places() -> None:
    assert [percent_level(0.95), percent_level(0.975), percent_level(0.9)] == ["95%", "97.5%", "90%"]
    assert [share(12.5), share(100.0), share(None)] == ["12.5%", "100.0%", MISSING]
    assert [fixed(3.14159, 1), fixed(49.5, 0), fixed(2.0, 3)] == ["3.1", "50", "2.000"]
