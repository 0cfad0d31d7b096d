"""One turn numbering: a judge's "chatbot message N" links to the transcript's turn."""

from __future__ import annotations

from vera.records import Turn
from vera.report.shared._turn_refs import turn_number, turn_refs_html

TURNS = [Turn("user", "a"), Turn("chatbot", "b"), Turn("user", "c"), Turn("chatbot", "d <e>")]


def test_by_speaker_counts_map_to_the_transcripts_numbers():
    assert turn_number(TURNS, "chatbot", 2) == 4
    assert turn_number(TURNS, "user", 2) == 3
    assert turn_number(TURNS, "chatbot", 3) is None
    html = turn_refs_html(
        "In chatbot message 2 and the user's second message <b>x</b>; Assistant reply #1.", TURNS
    )
    assert html == (
        'In chatbot message 2 (<a class="turn-ref" href="#turn-4">turn 4</a>) and the user&#x27;s second message'
        ' (<a class="turn-ref" href="#turn-3">turn 3</a>) &lt;b&gt;x&lt;/b&gt;; Assistant reply #1'
        ' (<a class="turn-ref" href="#turn-2">turn 2</a>).'
    )
    # A count past the transcript links nowhere; text without references is only escaped.
    assert turn_refs_html("chatbot message 9", TURNS) == "chatbot message 9"
    assert turn_refs_html("<script>", TURNS) == "&lt;script&gt;"
