"""A lean OpenAI-compatible fake server for the throughput benchmark.

`vera bench` starts it as a separate process, so the server's CPU time is not charged to
the client being measured:

    python benchmarks/fake_server.py --port 0 --latency-ms 200 --rpm 600

It prints its base URL (`http://127.0.0.1:PORT/v1`) on the first line of stdout, then
serves `POST /v1/chat/completions` until terminated, and `GET /stats` with its counters
and its own CPU time. It keeps counters only (no request log), so it can serve millions
of requests in constant memory. Every answer waits `--latency-ms` on `asyncio.sleep`,
the way a model's latency looks to a client.

`--rpm` enforces a requests-per-minute limit the way providers do: a bucket refilled
continuously, holding `--burst-s` seconds' worth; an empty bucket answers 429 with
Retry-After. Requests with a JSON-schema `response_format` (vera's judge) are answered
with a valid rubric answer: one of the options listed on the `Options: a | b | c` line
of the last user message.

`RateBucket` and `rubric_answer` come from `tests/fakes/shared.py`, which the test
suite's fake servers use too, so tests and benchmark enforce and answer alike.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import resource
import sys
import time
from pathlib import Path

import orjson
from aiohttp import web

# Run as a script (`vera bench` starts it by path), Python puts only benchmarks/ on the
# path; the checkout's root makes the shared pieces importable without installing tests.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes.shared import RateBucket, rubric_answer, serve_until_interrupted

# A listen backlog large enough for thousands of clients connecting at once (the kernel
# caps it at net.core.somaxconn).
BACKLOG = 8192


class BenchServer:
    """Chat Completions with a fixed latency, counters, and an optional rate limit."""

    def __init__(
        self,
        *,
        latency: float = 0.0,
        rpm: float | None = None,
        burst_s: float = 2.0,
        key: str | None = None,
        reply_chars: int = 400,
    ) -> None:
        self.latency = latency
        self.bucket = RateBucket(rpm, burst_s) if rpm else None
        self.auth = f"Bearer {key}" if key else None
        self.requests = 0
        self.ok = 0
        self.http_429 = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.input_tokens = 0
        self.output_tokens = 0
        # A reply about the size of a chatbot's message, so request bodies grow over a
        # conversation the way they do in a real run.
        self._filler = (" I hear you, and I am here to listen." * (reply_chars // 37 + 1))[:reply_chars]
        self.app = web.Application()
        self.app.router.add_post("/v1/chat/completions", self.chat)
        self.app.router.add_get("/stats", self.stats)

    async def chat(self, request: web.Request) -> web.Response:
        raw = await request.read()
        self.requests += 1
        if self.auth is not None and request.headers.get("Authorization") != self.auth:
            return _error(401, "invalid_request_error", "Incorrect API key provided.")
        if self.bucket is not None and (wait := self.bucket.take(time.monotonic())) is not None:
            self.http_429 += 1
            return _error(429, "requests", "Rate limit reached.", {"Retry-After": f"{wait:.3f}"})
        try:
            body = orjson.loads(raw)
            messages = body["messages"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return _error(400, "invalid_request_error", "'messages' is required.")
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.latency:
                await asyncio.sleep(self.latency)
        finally:
            self.in_flight -= 1
        fmt = body.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") in ("json_schema", "json_object"):
            content = orjson.dumps(rubric_answer(messages)).decode()
        else:
            content = f"Fake reply {self.requests}.{self._filler}"
        prompt = max(1, len(raw) // 4)
        completion = max(1, len(content) // 4)
        self.ok += 1
        self.input_tokens += prompt
        self.output_tokens += completion
        payload = {
            "id": f"chatcmpl-{self.requests}",
            "object": "chat.completion",
            "model": body.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
        return web.Response(body=orjson.dumps(payload), content_type="application/json")

    async def stats(self, request: web.Request) -> web.Response:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        payload = {
            "requests": self.requests,
            "ok": self.ok,
            "http_429": self.http_429,
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_rss_mb": usage.ru_maxrss / 1024,
        }
        return web.Response(body=orjson.dumps(payload), content_type="application/json")


def _error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> web.Response:
    payload = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return web.Response(
        body=orjson.dumps(payload), status=status, content_type="application/json", headers=headers
    )


def raise_open_files_limit() -> None:
    """Lift the soft limit on open files to the hard one: every connection is a file."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else 1 << 20  # the kernel's usual nr_open
    if soft == resource.RLIM_INFINITY or soft >= target:
        return
    with contextlib.suppress(ValueError, OSError):  # not allowed here: serve with what we have
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


async def serve(args: argparse.Namespace) -> None:
    server = BenchServer(
        latency=args.latency_ms / 1000,
        rpm=args.rpm,
        burst_s=args.burst_s,
        key=args.key or None,
        reply_chars=args.reply_chars,
    )
    runner = web.AppRunner(server.app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", args.port, backlog=BACKLOG)
    await site.start()
    port = runner.addresses[0][1]
    print(f"http://127.0.0.1:{port}/v1", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A lean OpenAI-compatible fake server.")
    parser.add_argument("--port", type=int, default=0, help="0 = a free port")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--rpm", type=float, default=None, help="requests per minute (429 above)")
    parser.add_argument("--burst-s", type=float, default=2.0, help="seconds of requests the bucket holds")
    parser.add_argument("--key", default="", help="required bearer key (default: accept any)")
    parser.add_argument("--reply-chars", type=int, default=400, help="length of a chat reply")
    args = parser.parse_args(argv)
    raise_open_files_limit()
    # As in vera's client pool: requests live for the whole latency and almost never form
    # cycles, so the default collector thresholds would only rescan them over and over.
    gc.freeze()
    gc.set_threshold(50_000, 10, 10)
    serve_until_interrupted(serve(args))


if __name__ == "__main__":
    main()
