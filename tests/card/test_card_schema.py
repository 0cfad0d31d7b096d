"""card.json is written from the typed `Card` and read back into it: nothing is lost or
reordered on the way, older cards still read, and a file that is not a card is one
clear line."""

from __future__ import annotations

import json
import shutil

import msgspec
import pytest
from click.testing import CliRunner

from vera.cli._main import main
from vera.report.card._schema import CARD_SCHEMA_VERSION, Card, ChatbotCard, decode_card, encode_card


@pytest.mark.parametrize("run", ["offline_run", "multi_run", "rich_run"])
def test_card_json_round_trips_through_the_struct_byte_for_byte(run, request):
    # offline: one judge; multi: two chatbots, two seeds, two judge instances (by_judge,
    # judge_agreement, by_seed, comparisons); rich: failed work and a second judge.
    path = request.getfixturevalue(run) / "card.json"
    data = path.read_bytes()
    card = decode_card(data, source=path)
    assert isinstance(card, Card) and all(isinstance(b, ChatbotCard) for b in card.chatbots)
    assert encode_card(card) == data


def test_every_optional_section_is_present_in_the_fixtures(multi_run, rich_run):
    # The round trip above covers every field only if the fixtures hold every section.
    keys = set()
    for run in (multi_run, rich_run):
        card = json.loads((run / "card.json").read_text())
        keys |= {k for bot in card["chatbots"] for k in bot}
        assert card["comparisons"]
    assert {"by_risk", "by_judge", "judge_agreement", "by_seed", "harmful"} <= keys
    assert json.loads((rich_run / "card.json").read_text())["failures"]


def test_a_chatbot_with_nothing_rated_has_no_score_fields():
    bot = ChatbotCard(
        chatbot="a",
        model="m",
        protocol="offline",
        conversations_complete=0,
        conversations_failed=2,
        harmful=[],
    )
    assert list(msgspec.to_builtins(bot)) == [
        "chatbot",
        "model",
        "protocol",
        "conversations_complete",
        "conversations_failed",
        "harmful",
    ]
    assert bot.section() is None


def _schema_2(card: dict) -> dict:
    """A card as vera wrote it before schema 3: no status, source, imported, reference."""
    old = {k: v for k, v in card.items() if k not in ("status", "source", "imported", "reference")}
    return old | {"schema_version": 2}


def test_a_schema_2_card_is_still_printed(offline_run, tmp_path):
    run = tmp_path / "old"
    shutil.copytree(offline_run, run)
    card = json.loads((run / "card.json").read_text())
    (run / "card.json").write_text(json.dumps(_schema_2(card), indent=2))
    result = CliRunner().invoke(main, ["card", str(run)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "not recorded (card made before vera recorded run status)" in result.stdout
    assert card["chatbots"][0]["chatbot"] in result.stdout


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"{not json", "not valid JSON"),
        (b'{"run_id": "x"}', "not a vera score card"),
        (b'{"schema_version": 3, "run_id": 7}', "not a vera score card"),
        (json.dumps({"schema_version": CARD_SCHEMA_VERSION + 1}).encode(), "is newer than this vera reads"),
    ],
)
def test_a_file_that_is_not_a_card_is_one_error_line(offline_run, tmp_path, content, expected):
    run = tmp_path / "bad"
    shutil.copytree(offline_run, run)
    (run / "card.json").write_bytes(content)
    result = CliRunner().invoke(main, ["card", str(run)])
    assert result.exit_code != 0
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], result.output
    assert "card.json" in lines[0] and "Traceback" not in result.output
