"""The floor of `vera bench`'s fake server: the same waves of requests from a bare aiohttp
client that does nothing else (no vera, no limits, no cache, no store), to show how much
of the gap to the ideal call rate is the fake server and the machine, not vera.

    .venv/bin/python benchmarks/bench_floor.py                  # 100 × 20 at 200 ms, 3 runs
    .venv/bin/python benchmarks/bench_floor.py --conversations 100 --turns 20 --runs 5

Each of `--conversations` tasks sends `--turns` requests one after another to the fake
server (`benchmarks/fake_server.py`, in its own process, as `vera bench` runs it), each
with a fixed chat body. Prints the wall time, the efficiency against the ideal rate
(conversations / latency) and the client's CPU per call.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

import aiohttp
import orjson
import uvloop

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import KEY, fake_server  # noqa: E402

# About the size of a rendered user-agent prompt (persona and style instructions), so
# the `same_wire` requests carry what vera's carry.
SYSTEM_CHARS = 3_000


async def one_run(
    base_url: str, conversations: int, turns: int, *, same_wire: bool = False
) -> tuple[float, float]:
    """One round: (wall seconds, CPU seconds of this process). With `same_wire`, each
    conversation sends its growing history (a persona-sized system prompt, then every
    reply it got and a line of its own), encoded and decoded with orjson, as vera's
    requests grow over a conversation; without, one fixed small body."""
    body = orjson.dumps({"model": "floor", "messages": [{"role": "user", "content": "hello " * 50}]})
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    url = f"{base_url}/chat/completions"
    system = {"role": "system", "content": ("You are a person talking to a chatbot. " * 100)[:SYSTEM_CHARS]}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def conversation() -> None:
            messages: list[dict[str, str]] = [system]
            for turn in range(turns):
                data = body
                if same_wire:
                    messages.append({"role": "user", "content": f"a line of turn {turn}, said plainly"})
                    data = orjson.dumps({"model": "floor", "messages": messages, "temperature": 0.7})
                async with session.post(url, data=data, headers=headers) as response:
                    response.raise_for_status()
                    raw = await response.read()
                if same_wire:
                    reply = orjson.loads(raw)["choices"][0]["message"]["content"]
                    messages.append({"role": "assistant", "content": reply})

        wall, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(conversation() for _ in range(conversations)))
        return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--same-wire", action="store_true", help="send growing conversations, as vera does (see one_run)"
    )
    args = parser.parse_args()
    calls = args.conversations * args.turns
    ideal = args.conversations / (args.latency_ms / 1000)
    with fake_server(args.latency_ms, None) as server:
        for i in range(1, args.runs + 1):
            wall, cpu = uvloop.run(
                one_run(server.base_url, args.conversations, args.turns, same_wire=args.same_wire)
            )
            print(
                f"run {i}: {calls:,} calls · wall {wall:.2f} s · efficiency {calls / wall / ideal:.1%}"
                f" · client CPU {cpu / calls * 1000:.3f} ms/call"
            )


if __name__ == "__main__":
    main()
