"""Protocol fakes that answer like a model in any role of a run.

A judge request (one that asks for structured output) gets one of the options its
question lists, in the protocol's own structured-output shape; anything else gets the
strict fake's usual short reply. Every request is still checked against the provider's
documented rules (`protocols.py`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson
from aiohttp import web

from .protocols import TOKENS, Behaviour, FakeAnthropic, FakeGemini, FakeOpenAI, Reply, tokens
from .shared import rubric_answer

# What a reasoning model thinks per call, here: a fixed amount whenever the request asks
# for reasoning (a reasoning_effort, Claude's thinking, a Gemini thinkingConfig).
THINKING_TOKENS = 64


def _thinking(reply: Reply, asked: bool) -> Reply:
    return dataclasses.replace(reply, reasoning_tokens=THINKING_TOKENS) if asked else reply


def message_text(content: Any) -> str:
    """A message's text, whether a string or a list of content blocks / parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


class AnsweringOpenAI(FakeOpenAI):
    def payload(self, request: web.Request, body: dict[str, Any], behaviour: Behaviour, reply: Reply) -> Any:
        if body.get("response_format") is not None:
            messages = [
                {"role": m["role"], "content": message_text(m.get("content"))} for m in body["messages"]
            ]
            reply = Reply(text=orjson.dumps(rubric_answer(messages)).decode())
        reply = _thinking(reply, "reasoning_effort" in body)
        return super().payload(request, body, behaviour, reply)


class AnsweringAnthropic(FakeAnthropic):
    """Also a prompt cache as Anthropic documents it: a `cache_control` mark writes the
    prefix up to it; a later request reads the longest cached prefix found at or before
    its last mark (looking back block by block). Usage reports reads and writes apart.
    A prefix shorter than `min_cache_tokens` is not cached (Anthropic's minimum
    cacheable prompt: 1,024 tokens for Claude Sonnet; 0 here unless a test sets it)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cached: dict[str, int] = {}  # prefix -> its tokens
        self.min_cache_tokens = 0

    def payload(self, request: web.Request, body: dict[str, Any], behaviour: Behaviour, reply: Reply) -> Any:
        read, written = self._cache(body)
        total = max(request[TOKENS], read + written)
        if body.get("tools"):
            messages = [{"role": m["role"], "content": message_text(m["content"])} for m in body["messages"]]
            reply = Reply(parsed=rubric_answer(messages))
        reply = Reply(
            text=reply.text,
            parsed=reply.parsed,
            input_tokens=total,
            cached_tokens=read,
            cache_write_tokens=written,
        )
        reply = _thinking(
            reply, isinstance(body.get("thinking"), dict) and body["thinking"]["type"] != "disabled"
        )
        return super().payload(request, body, behaviour, reply)

    def _cache(self, body: dict[str, Any]) -> tuple[int, int]:
        system = body.get("system")
        blocks = system if isinstance(system, list) else ([{"text": system}] if system else [])
        # The request as a sequence of blocks; (text so far, marked here) at each one.
        prefixes: list[tuple[str, bool]] = []
        text = ""
        for b in blocks:
            text += "S:" + b["text"]
            prefixes.append((text, "cache_control" in b))
        for m in body["messages"]:
            content = m["content"] if isinstance(m["content"], list) else [{"text": m["content"]}]
            for b in content:
                text += f"{m['role'][0]}:" + b["text"]
                prefixes.append((text, "cache_control" in b))
        marks = [i for i, (_, marked) in enumerate(prefixes) if marked]
        if not marks:
            return 0, 0
        read = next((self.cached[p] for p, _ in reversed(prefixes[: marks[-1] + 1]) if p in self.cached), 0)
        longest = tokens(prefixes[marks[-1]][0])
        if longest < self.min_cache_tokens:
            return read, 0  # too short to cache: read as plain input
        for i in marks:
            if tokens(prefixes[i][0]) >= self.min_cache_tokens:
                self.cached.setdefault(prefixes[i][0], tokens(prefixes[i][0]))
        return read, max(0, longest - read)


class AnsweringGemini(FakeGemini):
    def payload(self, request: web.Request, body: dict[str, Any], behaviour: Behaviour, reply: Reply) -> Any:
        config = body.get("generationConfig") or {}
        if config.get("responseMimeType") == "application/json":
            messages = [{"role": c["role"], "content": message_text(c["parts"])} for c in body["contents"]]
            reply = Reply(text=orjson.dumps(rubric_answer(messages)).decode())
        reply = _thinking(reply, "thinkingConfig" in config)
        return super().payload(request, body, behaviour, reply)
