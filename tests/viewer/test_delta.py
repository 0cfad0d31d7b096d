"""vera.viewer.delta: the bundle's call bodies written as copies of the bodies before them
and their new text, read back exactly: here by a reader that slices UTF-16 code units as
the page's JavaScript does; by the page's own (static/bodies.js) in
test_bundle_bodies_browser."""

from __future__ import annotations

import json
import random

import msgspec

from vera.viewer.delta import SharedText

# Bodies that share nothing, nothing at all, characters outside ASCII and outside the
# BMP (two UTF-16 units in the page's JavaScript), a body that is not JSON, markup.
AWKWARD = [
    "",
    "x",
    "not json at all {",
    '{"messages": [{"role": "user", "content": "hi"}]}',
    "naïve café — 東京 " * 8,
    "😀" * 70,
    "a😀" * 70,
    "😀x" * 70 + "é",
    "&lt;/template&gt;<script>alert(1)</script>" * 5,
    "\u2028\u2029\x00\x1f\ud7ff\ue000" * 12,
    "",
    "a completely different text that shares no prefix with anything above it at all",
]


def conversation(turns: int, seed: int = 0) -> list[str]:
    """What a conversation's call bodies look like: each request the history so far as
    JSON, then each message again as text, then the reply; replies with non-ASCII."""
    rng = random.Random(seed)
    words = ["well", "I", "feel", "tired", "😀", "東京", "naïve", '"quoted"', "line\nbreak", "ok"]
    history: list[dict[str, str]] = [{"role": "system", "content": "You are a helpful assistant. " * 20}]
    out = []
    for turn in range(turns):
        reply = " ".join(rng.choice(words) for _ in range(rng.randint(0, 80)))
        request = json.dumps({"messages": history, "model": "m"}, indent=2, ensure_ascii=False)
        shown = "".join(f"<pre>{m['content']}</pre>" for m in history)
        out.append(f"<h4>call {turn}</h4>{request}{shown}<pre>{reply}</pre>")
        history.append({"role": "user" if turn % 2 else "assistant", "content": reply})
    return out


def decoded(encoded: list[list[str | int]]) -> list[str]:
    """The texts back as static/bodies.js reads them: places in UTF-16 code units; k the
    text's own number copies from its part already written."""
    texts: list[bytes] = []
    for ops in encoded:
        done = b""
        i = 0
        while i < len(ops):
            op = ops[i]
            if isinstance(op, str):
                done += op.encode("utf-16-le")
                i += 1
                continue
            at, length = int(ops[i + 1]), int(ops[i + 2])
            source = done if op == len(texts) else texts[op]
            done += source[2 * at : 2 * (at + length)]
            i += 3
        texts.append(done)
    return [t.decode("utf-16-le") for t in texts]


def encode(texts: list[str]) -> list[list[str | int]]:
    shared = SharedText()
    for n, text in enumerate(texts):
        assert shared.add(text) == n
    # As the bundle writes them: JSON, then read back as the page would.
    return msgspec.json.decode(msgspec.json.encode(shared.encoded))


def test_awkward_bodies_come_back_exactly():
    texts = AWKWARD + list(reversed(AWKWARD))
    assert decoded(encode(texts)) == texts


def test_a_long_conversations_bodies_come_back_exactly_and_are_written_once():
    texts = conversation(60)
    encoded = encode(texts)
    assert decoded(encoded) == texts
    written = sum(len(op) for ops in encoded for op in ops if isinstance(op, str))
    copies = sum(isinstance(op, int) for ops in encoded for op in ops) // 3
    whole = sum(map(len, texts))
    # Each reply is new text once (in its call) and copied after; the rest is copies.
    new = sum(len(t.rsplit("<pre>", 1)[1]) for t in texts)
    assert whole > 20 * new  # the control: written out, the bodies are the square
    assert written < 2 * new + 2_000
    assert copies < 12 * len(texts)  # a few copies per body, not one per turn


def test_no_op_splits_a_character_and_every_copy_is_in_range():
    texts = conversation(30, seed=3) + AWKWARD
    encoded = encode(texts)
    lengths = [len(t.encode("utf-16-le")) // 2 for t in texts]  # UTF-16 units, as in the page
    for k, ops in enumerate(encoded):
        i = 0
        while i < len(ops):
            op = ops[i]
            if isinstance(op, str):
                op.encode("utf-8")  # no lone surrogate: a whole string of characters
                i += 1
                continue
            at, length = ops[i + 1], ops[i + 2]
            assert isinstance(at, int) and isinstance(length, int)
            assert 0 <= op <= k and length > 0 and at >= 0 and at + length <= lengths[op]
            i += 3


def test_a_pages_bodies_copy_from_a_base_pages_and_come_back_after_them():
    """The bundle's runs/0/bodies.js: one page's texts, which every later page may copy
    from, numbered before the page's own (its judge's prompt and questions are the same)."""
    base = SharedText()
    first = conversation(12, seed=1)
    for text in first:
        base.add(text)
    page = SharedText(base)
    texts = [t.replace("call", "appel") for t in first] + AWKWARD
    for n, text in enumerate(texts):
        assert page.add(text) == len(first) + n
    assert page.first == len(first) and len(page.encoded) == len(texts)
    encoded = msgspec.json.decode(msgspec.json.encode(base.encoded + page.encoded))
    assert decoded(encoded)[len(first) :] == texts
    # The base's texts are copied, not written again: the page's own are a few ops each.
    written = sum(len(op) for ops in page.encoded for op in ops if isinstance(op, str))
    assert written < sum(map(len, AWKWARD)) + 100 * len(first)
