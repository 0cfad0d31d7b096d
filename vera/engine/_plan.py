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
import os
from collections.abc import Mapping
from typing import Any

import msgspec

from vera.engine._simulate import ConversationJob, SimulationSettings
from vera.errors import ConfigError
from vera.records import ModelSpec, Persona


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
        if text.strip().lower() == "auto":
            return cls.from_environment(os.environ)
        try:
            k, n = (int(x) for x in text.split("/"))
        except ValueError:
            raise ConfigError(f"--shard {text!r}: expected K/N, e.g. 2/8") from None
        if not 1 <= k <= n:
            raise ConfigError(f"--shard {text!r}: K must be between 1 and N")
        return cls(k, n)

    @classmethod
    def from_environment(cls, env: Mapping[str, str]) -> Shard:
        """K and N from the scheduler: a Slurm job array (`SLURM_ARRAY_TASK_ID` within
        `SLURM_ARRAY_TASK_MIN`..`_MAX`) or a Kubernetes Indexed Job (`JOB_COMPLETION_INDEX`,
        0-based; Kubernetes does not tell a pod the Job's `completions`, so the pod spec
        sets `VERA_SHARD_COUNT` to it)."""
        try:
            if (task := env.get("SLURM_ARRAY_TASK_ID")) is not None:
                low, high = int(env["SLURM_ARRAY_TASK_MIN"]), int(env["SLURM_ARRAY_TASK_MAX"])
                count = int(env.get("SLURM_ARRAY_TASK_COUNT", high - low + 1))
                if count != high - low + 1:
                    raise ConfigError(
                        f"--shard auto: the Slurm array has {count} tasks between {low} and {high}; "
                        "give it a plain range (--array=1-8, no step or list) or use --shard K/N"
                    )
                return cls.parse(f"{int(task) - low + 1}/{count}")
            if (index := env.get("JOB_COMPLETION_INDEX")) is not None:
                if not env.get("VERA_SHARD_COUNT"):
                    raise ConfigError(
                        "--shard auto: JOB_COMPLETION_INDEX is set but VERA_SHARD_COUNT is not; "
                        "set it to the Job's completions in the pod spec"
                    )
                return cls.parse(f"{int(index) + 1}/{int(env['VERA_SHARD_COUNT'])}")
        except (KeyError, ValueError) as exc:
            raise ConfigError(
                f"--shard auto: the scheduler's variables are incomplete or not numbers ({exc})"
            ) from None
        raise ConfigError(
            "--shard auto: neither SLURM_ARRAY_TASK_ID (a Slurm array) nor JOB_COMPLETION_INDEX "
            "(a Kubernetes Indexed Job) is set; give --shard K/N"
        )

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
