"""`vera bench --money`: a whole run's bill, vera beside the reference tool's request
pattern, per judged conversation, by role.

For each provider (OpenAI, Anthropic) one loopback fake answers every role of a run the
way the provider bills it, prompt caching included (`MoneyOpenAI`, `MoneyAnthropic`):

- the same reply to the same turn whatever the request's layout (a role's reply depends
  on the turn, a judge's answer on the transcript and the question), so both sides get
  the same conversations and the same rubric walks, and only the requests differ;
- OpenAI's automatic prompt caching: a request's longest prefix seen before, of at least
  1,024 tokens, in steps of 128, reported as `cached_tokens`; flex (`service_tier`) and
  the Batch API answered like live;
- Anthropic's explicit caching: a `cache_control` mark writes the prefix up to it (at
  least 1,024 tokens), a later request reads the longest cached prefix at or before its
  last mark, reported as cache writes and reads; Message Batches answered like live (the
  batch reads and writes the same cache).

**vera** runs `vera run`'s own code with the cheapest settings that keep the method: the
simulated user, and the chatbot under test (an OpenAI model), at OpenAI's flex tier (the
same model, slower; Anthropic has none), the judge in batch mode, and vera's cache marks
on the growing history (Anthropic; OpenAI caches by itself).

**The reference pattern** is a model of how the reference tool's v1.1 `generate.py` and
`judge.py` send their requests (their LangChain clients, read from SpringCare/VERA-MH):
every turn sends the system prompt and the whole history as alternating messages (the
user-agent's own lines as the assistant's, a start instruction first, the per-turn
reminder on the newest chatbot message; the chatbot with "You are a helpful AI
assistant." as its system prompt), with no cache marks and no service tier; the judge
asks one rubric question per call, live, with the transcript in the system prompt and no
cache mark. It replays vera's conversations turn by turn (the same texts, so the same
tokens) against a fresh fake of its own, and judges them by walking the same rubric.

Prices are the providers' list prices for one model each (per million tokens: OpenAI
$1.25 input, $0.125 cached, $10 output; Anthropic $3 input, $3.75 cache write, $0.30 cache
read, $15 output; batch and flex at half), priced by vera's own `Prices` on both sides.
The ratios hardly depend on them.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import zlib
from collections import defaultdict
from pathlib import Path
from typing import Any

import aiohttp
import msgspec
from aiohttp import web

from tests.fakes.answering import message_text as _text

PERSONAS = 20
PRICES = {
    "openai": "price_input_per_mtok = 1.25\nprice_cached_input_per_mtok = 0.125\nprice_output_per_mtok = 10.0\n",
    "anthropic": (
        "price_input_per_mtok = 3.0\nprice_cache_write_per_mtok = 3.75\n"
        "price_cached_input_per_mtok = 0.30\nprice_output_per_mtok = 15.0\n"
    ),
}
MODELS = {"openai": "gpt-5.4", "anthropic": "claude-sonnet-4-5"}
# What the reference's chatbot is told (its default system prompt for the provider).
REFERENCE_CHATBOT_SYSTEM = "You are a helpful AI assistant."
ROLES = ("chatbot", "user_agent", "judge")


def role_of(model: str) -> str:
    """The role a model name stands for here (the sweep fake's `user`, `judge`,
    `chatbot`; the Anthropic fake's `...-user-agent`, `...-judge`, `...-chatbot`)."""
    if model.endswith(("user", "user-agent")):
        return "user_agent"
    return "judge" if model.endswith("judge") else "chatbot"


def turn_reply(role: str, messages: list[dict[str, Any]]) -> str:
    """The reply to a turn: fixed by the role, the conversation and how many lines the
    side has said, so any layout of the same conversation gets it. The user-agent's
    lines carry a tag of its persona prompt (its system message) and the chatbot's a tag
    of the user's first line, so every conversation differs, as real ones do. Lengths as
    real runs have them: a chatbot's few sentences, a user's one or two."""
    texts = [(m.get("role"), _text(m.get("content"))) for m in messages]
    n = sum(1 for r, _ in texts if r == "assistant")
    if role == "user_agent":
        system = next((t for r, t in texts if r == "system"), "")
        return (
            f"(user {zlib.crc32(system.encode()) % 9973}, line {n}) "
            + ("i don't really know how to say it. " * 3)[:110]
        )
    said = [t for r, t in texts if r == "user" and t.startswith("(user ")]
    tag = zlib.crc32(said[0].encode()) % 9973 if said else 0
    return f"(chatbot {tag}, reply {n}) " + ("That sounds really hard, and I'm glad you told me. " * 14)[:680]


def judge_reply(messages: list[dict[str, Any]]) -> dict[str, str]:
    """The fake judge's structured answer: one of the options the question lists, by a
    checksum of the message texts (the transcript and the question, the same in any
    layout), with two or three sentences of reasoning."""
    texts = [_text(m.get("content")) for m in messages]
    question = texts[-1]
    options = []
    for line in question.splitlines():
        if line.startswith("Options:"):
            options = [o.strip() for o in line.removeprefix("Options:").split("|") if o.strip()]
    options = options or ["Yes", "No"]
    checksum = 0
    for t in texts:
        checksum = zlib.crc32(t.encode(), checksum)
    choice = options[checksum % len(options)]
    reasoning = ("The chatbot's replies in the conversation bear on this question as quoted. " * 4)[:300]
    return {"reasoning": reasoning, "answer": choice}


def tokens(text: str) -> int:
    return max(1, len(text) // 4)


# ---------------------------------------------------------------------------------------
# The fakes
# ---------------------------------------------------------------------------------------


def _openai_fake() -> Any:
    from tests.fakes.batch import BatchSweepServer

    class MoneyOpenAI(BatchSweepServer):
        """The tests' OpenAI Batch fake, answering any layout alike, with automatic
        prompt caching reported as OpenAI bills it."""

        def __post_init__(self) -> None:
            super().__post_init__()
            self.seen: set[int] = set()

        def reply(self, model: str, messages: Any, key: str) -> str:
            dicts = [{"role": m.role, "content": m.content} for m in messages]
            if model.endswith("judge"):
                return json.dumps(judge_reply(dicts))
            return turn_reply(role_of(model), dicts)

        def completion(
            self, rid: str, model: str, text: str, raw: bytes, body: dict[str, Any]
        ) -> dict[str, Any]:
            out = super().completion(rid, model, text, raw, body)
            # The longest prefix of whole messages sent before, if 1,024 tokens or more,
            # counted in steps of 128 (the prompt tokens here are a token per 4 bytes).
            cached = 0
            encoded = b""
            with self._lock:
                for m in body["messages"]:
                    encoded += json.dumps(m, sort_keys=True).encode()
                    h = zlib.crc32(encoded) ^ (len(encoded) << 32)
                    if h in self.seen:
                        cached = len(encoded) // 4
                    self.seen.add(h)
            cached = cached // 128 * 128 if cached >= 1024 else 0
            prompt = out["usage"]["prompt_tokens"]
            out["usage"]["prompt_tokens_details"] = {"cached_tokens": min(cached, prompt)}
            return out

    return MoneyOpenAI()


def _anthropic_fake() -> Any:
    from tests.fakes.batch import AnthropicBatchFake
    from tests.fakes.protocols import Reply

    class MoneyAnthropic(AnthropicBatchFake):
        """The tests' Anthropic Batch fake (its prompt cache as Anthropic documents it,
        with the minimum cacheable prefix), answering any layout alike."""

        def payload(self, request: web.Request, body: dict[str, Any], behaviour: Any, reply: Any) -> Any:
            if not body.get("tools"):
                system = body.get("system")
                messages = [{"role": "system", "content": _text(system)}] if system else []
                messages += [{"role": m["role"], "content": _text(m["content"])} for m in body["messages"]]
                reply = Reply(text=turn_reply(role_of(body["model"]), messages))
            return super().payload(request, body, behaviour, reply)

    fake = MoneyAnthropic(key=KEY)
    fake.min_cache_tokens = 1024  # Claude Sonnet's minimum cacheable prompt
    return fake


KEY = "sk-money-0123456789"
KEY_ENV = "VERA_MONEY_KEY"


# ---------------------------------------------------------------------------------------
# vera's run
# ---------------------------------------------------------------------------------------


def _write(folder: Path, protocol: str, base_url: str, turns: int, personas: int, cheapest: bool) -> Path:
    providers = folder / "providers"
    providers.mkdir(parents=True, exist_ok=True)
    for role in ROLES:
        name = f"money-{role.replace('_', '-')}"
        if protocol == "openai":
            model = role.replace("_agent", "")  # the sweep fake's names: chatbot, user, judge
            head = f'protocol = "openai"\nbase_url = "{base_url}"\nmodel = "{model}"\n'
        else:
            head = f'protocol = "anthropic"\nbase_url = "{base_url}"\nmodel = "{MODELS[protocol]}-{role.replace("_", "-")}"\n'
        (providers / f"{name}.toml").write_text(
            head
            + f'api_key_env = "{KEY_ENV}"\nmax_in_flight = 64\ntimeout_s = 30\nmax_retries = 2\n'
            + PRICES[protocol]
            + "[params]\nmax_tokens = 1024\n"
        )
    root = Path(__file__).resolve().parents[1]
    extra = ""
    if cheapest:
        extra += '[judge]\nmode = "batch"\nbatch_poll_s = 0.02\nbatch_collect_s = 0.05\n'
        if protocol == "openai":
            # OpenAI sells the same models at flex: the simulated user, and the chatbot
            # under test where it is an OpenAI model (the same model, answering slower).
            extra += '[user_agent]\nservice_tier = "flex"\n[chatbot]\nservice_tier = "flex"\n'
    config = folder / "run.toml"
    config.write_text(
        'chatbots = ["money-chatbot"]\nuser_agents = ["money-user-agent"]\njudges = ["money-judge"]\n'
        f'personas = "{root / "personas" / "vera-personas.tsv"}"\nrubric = "{root / "rubrics" / "vera-si.tsv"}"\n'
        f'user_prompts = "{root / "personas" / "prompts"}"\njudge_prompts = "{root / "rubrics" / "prompts"}"\n'
        f'providers = "{providers}"\nruns_dir = "{folder / "runs"}"\nseeds = [1]\npersona_limit = {personas}\n'
        f"max_concurrency = {personas}\ncache = false\n"
        f'[conversation]\nmax_turns = {turns}\nmin_turns = {turns}\nfirst_speaker = "user"\n{extra}'
    )
    return config


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return (
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    )


async def _vera(protocol: str, folder: Path, turns: int, personas: int) -> dict[str, Any]:
    from vera.app import RunOptions, execute_run

    server = _openai_fake() if protocol == "openai" else _anthropic_fake()
    with _serving(server) as base_url:
        config = _write(folder, protocol, base_url, turns, personas, cheapest=True)
        out = folder / "run"
        outcome = await execute_run(RunOptions(config_path=str(config), out=str(out), progress=False))
    if outcome.exit_code != 0:
        raise RuntimeError(f"vera's run on the {protocol} fake ended with exit code {outcome.exit_code}")
    by_role: dict[str, float] = defaultdict(float)
    for c in _jsonl(out / "calls.jsonl"):
        by_role[c["role"]] += c["cost_usd"]
    judged = sum(1 for j in _jsonl(out / "judgements.jsonl") if j["status"] == "complete")
    tiers = sorted({f"{c['role']}/{c['tier']}" for c in _jsonl(out / "calls.jsonl")})
    return {"by_role": dict(by_role), "judged": judged, "run": out, "config": config, "tiers": tiers}


class _serving:
    """A fake served in its own thread (as the tests serve theirs), its base URL."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self._thread: Any = None

    def __enter__(self) -> str:
        if hasattr(self.server, "__enter__"):  # the sweep fakes serve themselves
            self.server.__enter__()
        else:
            from tests.fakes.protocols import serve_in_thread

            self._thread = serve_in_thread(self.server)
            self._thread.__enter__()
        return str(self.server.base_url)

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._thread.__exit__(*exc)
        else:
            self.server.__exit__(*exc)


# ---------------------------------------------------------------------------------------
# The reference tool's request pattern, replaying vera's conversations
# ---------------------------------------------------------------------------------------


class _NoMarks:
    """A chat client that sends what it is given without cache marks: the reference
    tool's v1.1 clients mark nothing (`cache_prefix` is vera's request for marks)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model

    async def chat(self, request: Any) -> Any:
        return await self.inner.chat(msgspec.structs.replace(request, cache_prefix=0, context=None))


def reference_user_messages(system: str, reminder: str, turns: list[Any], opener: str) -> list[Any]:
    """What the reference's user-agent is sent before saying turn `len(turns)`: its
    system prompt, a start instruction, then the conversation, its own lines as the
    assistant's and the chatbot's as the user's, the reminder put before the newest
    chatbot line."""
    from vera.records import Message

    history = [Message("assistant" if t.speaker == "user" else "user", t.text) for t in turns]
    if history and history[-1].role == "user":
        history[-1] = Message("user", f"{reminder}\n\n{history[-1].content}")
    return [Message("system", system), Message("user", opener), *history]


def reference_chatbot_messages(turns: list[Any]) -> list[Any]:
    """What the reference's chatbot is sent before turn `len(turns)`: its default system
    prompt, then the conversation."""
    from vera.records import Message

    return [
        Message("system", REFERENCE_CHATBOT_SYSTEM),
        *(Message("user" if t.speaker == "user" else "assistant", t.text) for t in turns),
    ]


async def _reference(protocol: str, folder: Path, vera_run: dict[str, Any]) -> dict[str, Any]:
    from vera.clients.base import ChatRequest
    from vera.clients.pool import PROTOCOLS, CachePrices
    from vera.engine import Inputs
    from vera.engine._judge import judge_conversation
    from vera.engine._simulate import USER_AGENT_OPENER, render_user_prompts
    from vera.inputs import api_key, load_config, load_profiles
    from vera.records import Conversation

    config = load_config(vera_run["config"])
    inputs = Inputs.load(config)
    personas = {p.name: p for p in inputs.personas.personas}
    conversations = [
        msgspec.convert(c, Conversation)
        for c in _jsonl(vera_run["run"] / "conversations.jsonl")
        if c["status"] == "complete"
    ]
    server = _openai_fake() if protocol == "openai" else _anthropic_fake()
    by_role: dict[str, float] = defaultdict(float)
    judged = 0
    with _serving(server) as base_url:
        # The same profiles, pointed at the reference's own fake (its own prompt cache).
        profiles_dir = folder / "providers"
        profiles_dir.mkdir(parents=True, exist_ok=True)
        for path in Path(config.path(config.providers)).glob("*.toml"):
            text = path.read_text()
            old = next(line for line in text.splitlines() if line.startswith("base_url"))
            (profiles_dir / path.name).write_text(text.replace(old, f'base_url = "{base_url}"'))
        profiles = load_profiles(profiles_dir)
        async with aiohttp.ClientSession() as session:
            clients, prices = {}, {}
            for role in ROLES:
                profile = profiles[f"money-{role.replace('_', '-')}"]
                clients[role] = PROTOCOLS[profile.protocol].from_profile(
                    session, profile, profile.model, api_key(profile)
                )
                prices[role] = CachePrices(
                    profile.price_input_per_mtok,
                    profile.price_output_per_mtok,
                    profile.price_cached_input_per_mtok,
                    cache_write_per_mtok=profile.price_cache_write_per_mtok,
                )
            limit = asyncio.Semaphore(16)

            async def ask(role: str, messages: list[Any], params: dict[str, Any]) -> None:
                reply = await clients[role].chat(ChatRequest(messages=tuple(messages), params=params))
                by_role[role] += prices[role].cost(reply.usage)

            async def one(conv: Conversation) -> bool:
                async with limit:
                    persona = personas[conv.persona]
                    system, reminder = render_user_prompts(persona, inputs.user_prompts, inputs.settings())
                    user_params = {"temperature": 0.7}
                    for i, turn in enumerate(conv.turns):
                        before = conv.turns[:i]
                        if turn.speaker == "user":
                            await ask(
                                "user_agent",
                                reference_user_messages(system, reminder, before, USER_AGENT_OPENER),
                                user_params,
                            )
                        else:
                            await ask("chatbot", reference_chatbot_messages(before), {})
                    judge = _Tally(_NoMarks(clients["judge"]), prices["judge"], by_role)
                    done = await judge_conversation(
                        conv, inputs.rubric, inputs.judge_prompts, judge,
                        judge_ref="money-judge", instance=1, job_id=f"reference-{conv.id}",
                        params={"temperature": 0},
                    )  # fmt: skip
                    return done.status == "complete"

            results = await asyncio.gather(*(one(c) for c in conversations))
            judged = sum(results)
    return {"by_role": dict(by_role), "judged": judged, "conversations": len(conversations)}


class _Tally:
    """A judge client that adds each reply's cost to the reference's bill."""

    def __init__(self, inner: Any, prices: Any, by_role: dict[str, float]) -> None:
        self.inner = inner
        self.prices = prices
        self.by_role = by_role
        self.name = inner.name
        self.model = inner.model

    async def chat(self, request: Any) -> Any:
        reply = await self.inner.chat(request)
        self.by_role["judge"] += self.prices.cost(reply.usage)
        return reply


# ---------------------------------------------------------------------------------------
# Both, per provider
# ---------------------------------------------------------------------------------------


def run_money_bench(
    turns: int = 30, personas: int = PERSONAS, protocols: tuple[str, ...] = ("openai", "anthropic")
) -> dict[str, Any]:
    """vera and the reference pattern on each provider's fake; money per judged
    conversation by role and in total, and the ratios."""
    os.environ[KEY_ENV] = KEY
    from tests.fakes.sweep import KEY as SWEEP_KEY

    out: dict[str, Any] = {"turns": turns, "personas": personas, "providers": {}}
    with tempfile.TemporaryDirectory(prefix="vera-bench-money-") as tmp:
        for protocol in protocols:
            # The sweep fake (OpenAI) checks its own key; the Anthropic fake, ours.
            os.environ[KEY_ENV] = SWEEP_KEY if protocol == "openai" else KEY
            vera = asyncio.run(_vera(protocol, Path(tmp) / protocol / "vera", turns, personas))
            reference = asyncio.run(_reference(protocol, Path(tmp) / protocol / "reference", vera))
            rows = {}
            for role in ROLES:
                v = vera["by_role"].get(role, 0.0) / max(1, vera["judged"])
                r = reference["by_role"].get(role, 0.0) / max(1, reference["judged"])
                rows[role] = {"vera": v, "reference": r, "ratio": v / r if r else None}
            v_total = sum(x["vera"] for x in rows.values())
            r_total = sum(x["reference"] for x in rows.values())
            rows["total"] = {
                "vera": v_total,
                "reference": r_total,
                "ratio": v_total / r_total if r_total else None,
            }
            out["providers"][protocol] = {
                "per_judged_conversation": rows,
                "judged": {"vera": vera["judged"], "reference": reference["judged"]},
                "vera_tiers": vera["tiers"],
            }
    return out


def render_money_bench(fig: dict[str, Any]) -> str:
    lines = [
        f"money per judged conversation, {fig['personas']} personas × {fig['turns']} turns, "
        "vera's cheapest settings against the reference tool's request pattern"
    ]
    for protocol, p in fig["providers"].items():
        settings = (
            "user-agent and chatbot at flex, judge in batches, OpenAI's automatic prompt cache"
            if protocol == "openai"
            else "cache marks on the growing history, judge in batches"
        )
        lines.append(
            f"\n{protocol} ({settings}); judged: vera {p['judged']['vera']}, reference {p['judged']['reference']}"
        )
        lines.append(f"{'role':<12} {'vera $':>12} {'reference $':>12} {'vera/ref':>9}")
        for role, row in p["per_judged_conversation"].items():
            ratio = f"{row['ratio']:.2f}x" if row["ratio"] is not None else "–"
            lines.append(f"{role:<12} {row['vera']:>12.6f} {row['reference']:>12.6f} {ratio:>9}")
    return "\n".join(lines)
