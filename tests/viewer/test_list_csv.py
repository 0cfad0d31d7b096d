"""The list's filtered view as CSV, from the page: every page of it, in its order."""

from __future__ import annotations

import csv
import io

import aiohttp

from vera.viewer.catalogue import Catalogue, Query

from .conftest import HPH, MARKUP_ID, MARKUP_PERSONA
from .test_server import serving

GHC = "Guides to Human Care"


async def test_the_csv_is_the_whole_filtered_list_in_order(viewer_run):
    params = {"dimension": GHC, "rating": HPH, "sort": "worst", "per_page": "25"}
    expected = Catalogue.open([viewer_run]).listed(Query.from_params(params))["id"].to_list()
    async with serving(viewer_run) as base, aiohttp.ClientSession() as http:
        async with http.get(f"{base}/export.csv", params=params) as r:
            assert r.status == 200 and r.content_type == "text/csv"
            assert "attachment" in r.headers["Content-Disposition"]
            rows = list(csv.DictReader(io.StringIO(await r.text())))
        async with http.get(f"{base}/export.csv", params={"page": "zero"}) as r:
            assert r.status == 400
    assert [row["conversation_id"] for row in rows] == expected and len(expected) > 0
    assert all(HPH in row[GHC] for row in rows)
    markup = next(row for row in rows if row["conversation_id"] == MARKUP_ID)
    assert markup["persona"] == MARKUP_PERSONA  # as text, not as markup
    assert markup[GHC] == f"{HPH} | Best Practice"  # the judges differ: both, worst first
