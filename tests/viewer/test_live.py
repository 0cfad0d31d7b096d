"""The viewer follows a run that is still going: new records appear without a restart."""

from __future__ import annotations

import shutil

from vera.records import Conversation, Turn
from vera.store._writer import RunStore
from vera.viewer.catalogue import Catalogue, Query

NEW_ID = "0000live00000000"


def add_conversation(run_dir, cid: str = NEW_ID, text: str = "a brand new line 7c2e") -> None:
    store = RunStore(run_dir)
    template = store.read_conversation(next(iter(store.conversations)))
    store.add_conversation(
        Conversation(
            id=cid,
            chatbot=template.chatbot,
            user_agent=template.user_agent,
            persona=template.persona,
            risk=template.risk,
            seed=3,
            turns=[Turn("user", text), Turn("chatbot", "ok")],
            status="complete",
            ended_by="max_turns",
        )
    )
    store.close()


def test_refresh_reads_the_runs_again_only_when_they_grew(offline_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    catalogue = Catalogue.open([run])
    before = catalogue.conversations.height
    assert catalogue.query(Query.from_params({"q": "brand new line 7c2e"}))["total"] == 0
    assert catalogue.refresh() is False and catalogue.version == 0

    add_conversation(run)
    assert catalogue.refresh() is True
    assert catalogue.version == 1 and catalogue.conversations.height == before + 1
    found = catalogue.query(Query.from_params({"q": "brand new line 7c2e"}))
    assert [r["id"] for r in found["rows"]] == [NEW_ID]
    assert found["rows"][0]["status"] == "complete" and found["rows"][0]["judgements"] == 0
    assert catalogue.refresh() is False and catalogue.version == 1
