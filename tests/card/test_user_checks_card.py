"""The simulated-user checks on the card: a run with `[judge] check_users` carries the
judge's check in its judgements (recorded as judge calls), the card counts flagged
conversations per user-agent and links them at the flagged turn, and
`vera score --exclude-flagged` rescores without them and says so."""

from __future__ import annotations

import json
import shutil
from collections import Counter

import pytest
from click.testing import CliRunner

from vera.cli._main import main
from vera.inputs import USER_CHECK_PROMPT
from vera.records import HumanRating
from vera.store import append_human_ratings

from .conftest import offline_config, run_vera


def jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# What a simulated user who falls out of its role says: injected into some conversations
# of the checked run (the scripted stand-in itself stays in role and passes the checks).
INJECTED = {
    0: "As an AI language model I cannot feel tired. ",
    3: "How does that make you feel? ",
    6: "As an AI language model I cannot feel tired. ",
    9: "How does that make you feel? ",
}


@pytest.fixture(scope="module")
def checked_run(tmp_path_factory):
    """A simulated offline run, four of its conversations given a user turn out of role,
    then judged with `[judge] check_users`."""
    folder = tmp_path_factory.mktemp("checked")
    cfg = offline_config(folder)
    cfg.write_text(cfg.read_text().replace("max_attempts = 3", "max_attempts = 3\ncheck_users = true"))
    out = folder / "run"
    run_vera("simulate", "--config", str(cfg), "--out", str(out), "--limit-personas", "12", "--quiet")
    convs = jsonl(out / "conversations.jsonl")
    for k, opening in INJECTED.items():
        first_user = next(t for t in convs[k]["turns"] if t["speaker"] == "user")
        first_user["text"] = opening + first_user["text"]
    (out / "conversations.jsonl").write_text("".join(json.dumps(c) + "\n" for c in convs))
    run_vera("judge", str(out), "--quiet")
    return out


def test_the_checked_run_flags_exactly_the_users_out_of_role(checked_run):
    convs = jsonl(checked_run / "conversations.jsonl")
    judgements = jsonl(checked_run / "judgements.jsonl")
    flagged = {j["conversation_id"] for j in judgements if j["user_check"]["flags"]}
    assert flagged == {convs[k]["id"] for k in INJECTED}


def test_the_judge_checks_each_simulated_user_and_the_calls_are_recorded(checked_run):
    judgements = jsonl(checked_run / "judgements.jsonl")
    assert judgements and all(j["user_check"]["checker"] == "offline/lexical-judge" for j in judgements)
    assert all(j["user_check"]["prompt"] == USER_CHECK_PROMPT for j in judgements)
    # One more judge call per judgement than the questions it asked a model (its walk's,
    # and those asked ahead that the walk did not reach).
    calls = Counter(c["job_id"] for c in jsonl(checked_run / "calls.jsonl") if c["role"] == "judge")
    for j in judgements:
        asked = sum(not a["auto"] for a in j["answers"]) + j["unused_questions"]
        assert calls[j["id"]] == asked + 1, j["id"]
    card = json.loads((checked_run / "card.json").read_text())
    realism = card["realism"]
    assert realism["checkers"] == ["offline/lexical-judge"] and realism["prompt"] == USER_CHECK_PROMPT
    (row,) = realism["by_user_agent"]
    assert row["user_agent"] == "offline/scripted-user"
    assert row["conversations"] == row["by_model"] == len(judgements)
    flagged = {j["conversation_id"] for j in judgements if j["user_check"]["flags"]}
    assert {f["conversation_id"] for f in row["flagged_conversations"]} == flagged
    assert row["flagged"] == len(flagged)


def test_flagged_conversations_link_to_the_flagged_turn(checked_run):
    card = json.loads((checked_run / "card.json").read_text())
    html = (checked_run / "card.html").read_text()
    for f in card["realism"]["by_user_agent"][0]["flagged_conversations"]:
        anchor = f"turn-{f['turn']}" if f["turn"] else "transcript"
        assert f'href="conversations/{f["conversation_id"]}.html#{anchor}"' in html
        page = (checked_run / "conversations" / f"{f['conversation_id']}.html").read_text()
        assert f'id="{anchor}"' in page
    assert "Simulated-user checks" in (checked_run / "card.md").read_text()


def test_exclude_flagged_rescores_without_them_and_says_so(offline_run, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(offline_run, out)
    convs = jsonl(out / "conversations.jsonl")
    # Every conversation of one persona: its simulated user speaks as an AI.
    target = next(c for c in convs if c["chatbot"] == "offline/best-practice")["persona"]
    hit = []
    for c in convs:
        if c["persona"] == target:
            first_user = next(t for t in c["turns"] if t["speaker"] == "user")
            first_user["text"] = "As an AI language model I cannot feel tired. " + first_user["text"]
            hit.append(c["id"])
    (out / "conversations.jsonl").write_text("".join(json.dumps(c) + "\n" for c in convs))
    runner = CliRunner()
    assert runner.invoke(main, ["score", str(out)]).exit_code == 0
    before = json.loads((out / "card.json").read_text())
    flagged = {
        f["conversation_id"]: f["kinds"]
        for row in before["realism"]["by_user_agent"]
        for f in row["flagged_conversations"]
    }
    assert all("ai_voice" in flagged[cid] for cid in hit)
    assert before["realism"]["excluded"] is False
    result = runner.invoke(main, ["score", str(out), "--exclude-flagged"])
    assert result.exit_code == 0, result.output
    assert f"left out: {len(flagged)} conversation(s)" in result.output
    after = json.loads((out / "card.json").read_text())
    assert after["realism"]["excluded"] is True and after["realism"]["n_excluded"] == len(flagged)
    # The run diagnostics and the counts still cover the whole run.
    assert after["diagnostics"] == before["diagnostics"] and after["counts"] == before["counts"]
    for b, a in zip(before["chatbots"], after["chatbots"], strict=True):
        mine = sum(1 for c in convs if c["chatbot"] == b["chatbot"] and c["id"] in flagged)
        assert a["n_conversations"] == b["n_conversations"] - mine
        assert all(h["conversation_id"] not in flagged for h in a["harmful"])
    warning = f"Scores exclude {len(flagged)} conversation(s) whose simulated user was flagged"
    assert warning in (out / "card.md").read_text() and warning in (out / "card.html").read_text()
    shown = runner.invoke(main, ["card", str(out)])
    assert warning in " ".join(shown.output.split())
    # Scoring again without the flag puts them back.
    assert runner.invoke(main, ["score", str(out)]).exit_code == 0
    again = json.loads((out / "card.json").read_text())
    assert [b["n_conversations"] for b in again["chatbots"]] == [
        b["n_conversations"] for b in before["chatbots"]
    ]


def test_agreement_sets_the_checks_against_the_clinicians_realism_ratings(checked_run, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(checked_run, out)
    judgements = jsonl(out / "judgements.jsonl")
    flagged = sorted({j["conversation_id"] for j in judgements if j["user_check"]["flags"]})
    clean = sorted({j["conversation_id"] for j in judgements if not j["user_check"]["flags"]})
    assert len(flagged) >= 3 and len(clean) >= 3

    def rating(cid: str, rater: str, realism: int | None) -> HumanRating:
        return HumanRating(conversation_id=cid, rater=rater, ratings={}, realism=realism)

    append_human_ratings(
        out,
        [
            rating(flagged[0], "Ada", 1),
            rating(flagged[1], "Ada", 2),
            rating(flagged[1], "Bo", 2),
            rating(flagged[2], "Ada", 5),  # flagged, yet realistic to the clinician
            rating(clean[0], "Ada", 4),
            rating(clean[1], "Bo", 5),
            rating(clean[2], "Ada", 1),  # missed by the check
            rating(clean[2], "Ada", 2),  # the rater's later word counts
            rating(clean[2], "Bo", None),  # rated the chatbot only: no realism rating
        ],
    )
    result = CliRunner().invoke(main, ["agreement", "--users", str(out), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)  # notes go to stderr
    assert (report["n_rated"], report["n_raters"], report["n_unrealistic"]) == (6, 2, 3)
    model, heuristic = report["checkers"]
    assert model["checker"] == "model" and heuristic["checker"] == "heuristic"
    for c in (model, heuristic):  # the offline judge answers with the heuristic
        assert (c["n"], c["both_flagged"], c["check_only"], c["clinicians_only"], c["neither"]) == (
            6,
            2,
            1,
            1,
            2,
        )
        assert c["percent_agreement"] == round(4 / 6, 3)
        # kappa: observed 4/6, chance (3/6·3/6 + 3/6·3/6) = 1/2
        assert c["cohen_kappa"] == round((4 / 6 - 0.5) / 0.5, 3)
        assert c["mean_realism_flagged"] == round((1 + 2 + 5) / 3, 2)
    table = CliRunner().invoke(main, ["agreement", "--users", str(out)])
    assert table.exit_code == 0 and "Cohen's kappa" in table.output and "heuristic" in table.output


def test_agreement_without_realism_ratings_is_one_clear_line(offline_run, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(offline_run, out)
    result = CliRunner().invoke(main, ["agreement", "--users", str(out)])
    assert result.exit_code == 1
    assert "no realism rating of a simulated user" in result.output and "Traceback" not in result.output
    both = CliRunner().invoke(main, ["agreement", "x.csv", "--users", str(out)])
    assert both.exit_code != 0 and "Traceback" not in both.output
    neither = CliRunner().invoke(main, ["agreement"])
    assert neither.exit_code == 1 and "needs RATINGS_FILE, or --users RUN_DIR" in neither.output
