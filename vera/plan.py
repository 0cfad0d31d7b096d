"""Plan a sweep: the deterministic list of jobs and their ids.

A conversation job is (chatbot, persona, user-agent, seed); a judgement job is
(conversation, judge, instance). Each id is a hash of everything that determines the
job's output: model specs with their parameters, the persona's fields, the seed, the
prompt and rubric hashes, the simulation settings. The same inputs always give the same
ids, so a rerun on the same run directory skips what is done, and a changed input is a
new job rather than a silent mix.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from vera.errors import ConfigError
from vera.records import ModelSpec, Persona
from vera.simulate import ConversationJob, SimulationSettings


def digest(*parts: Any) -> str:
    """A stable 16-hex-digit id of JSON-encodable parts (key order independent)."""
    data = msgspec.json.encode(msgspec.to_builtins(list(parts)), order="sorted")
    return hashlib.sha256(data).hexdigest()[:16]


def derive_seed(*parts: Any) -> int:
    return int(digest(*parts), 16) & 0x7FFFFFFF


def persona_key(p: Persona) -> str:
    return digest(p.fields)


class JudgeSlot(msgspec.Struct, frozen=True):
    ref: str
    instance: int


class Shard(msgspec.Struct, frozen=True):
    index: int  # 1-based
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        try:
            k, n = (int(x) for x in text.split("/"))
        except ValueError:
            raise ConfigError(f"--shard {text!r}: expected K/N, e.g. 2/8") from None
        if not 1 <= k <= n:
            raise ConfigError(f"--shard {text!r}: K must be between 1 and N")
        return cls(k, n)

    def keeps(self, job_id: str) -> bool:
        return int(job_id, 16) % self.count == self.index - 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def conversation_jobs(
    *,
    chatbots: list[ModelSpec],
    user_agents: list[ModelSpec],
    personas: tuple[Persona, ...],
    seeds: list[int],
    user_prompts_sha: str,
    settings: SimulationSettings,
    shard: Shard | None = None,
) -> list[ConversationJob]:
    """Every conversation of the sweep, in a deterministic interleaved order (sorted by
    id, so providers and personas mix and no account sits idle while another queues)."""
    jobs: list[ConversationJob] = []
    for replicate, seed in enumerate(seeds):
        for bot in chatbots:
            for ua in user_agents:
                for p in personas:
                    key = persona_key(p)
                    jid = digest("conversation", bot, ua, key, seed, user_prompts_sha, settings)
                    if shard is not None and not shard.keeps(jid):
                        continue
                    jobs.append(
                        ConversationJob(
                            id=jid,
                            chatbot=bot.ref,
                            user_agent=ua.ref,
                            persona=p,
                            seed=derive_seed(seed, key, bot.ref, ua.ref),
                            replicate=replicate,
                        )
                    )
    jobs.sort(key=lambda j: j.id)
    return jobs


def judgement_id(
    conversation_id: str,
    judge: ModelSpec,
    instance: int,
    rubric_sha: str,
    prompts_sha: str,
    max_attempts: int,
) -> str:
    return digest("judgement", conversation_id, judge, instance, rubric_sha, prompts_sha, max_attempts)
