"""Judge one conversation: walk the rubric, one question per call, structured answers.

The judge's context is built for prompt caching: the system message (instructions +
the whole transcript) is identical for every question about one conversation, and the
question comes last. Each answer must be a JSON object ``{"reasoning", "answer"}`` (or,
for prompt sets whose answer format is "labelled", such as VERA-MH's own templates,
``ANSWER: ...`` / ``REASONING: ...`` lines) whose answer is one of the question's
options; an invalid answer is re-asked (bounded) with a short correction, then recorded
as an error. It is never guessed.
"""

from __future__ import annotations

import re
import time
from typing import Any

import msgspec

from vera.clients.base import CallContext, ChatClient, ChatRequest
from vera.clients.meter import asking, tallying
from vera.clients.structured import extract_json
from vera.errors import TransientError
from vera.inputs import AnswerFormat, JudgePrompts
from vera.records import Conversation, JudgeAnswer, Judgement, Message, Turn, Usage
from vera.rubric import Answer, AskAhead, Question, Rubric, TerminalSemantics, walk_rubric_concurrent

JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string", "description": "Two to four sentences, citing the conversation."},
        "answer": {"type": "string", "description": "Exactly one of the listed options."},
    },
    "required": ["reasoning", "answer"],
    "additionalProperties": False,
}


class JudgeReply(msgspec.Struct):
    answer: str
    reasoning: str = ""


class InvalidAnswerError(Exception):
    """The judge gave no valid answer within the allowed attempts."""


def render_transcript(turns: list[Turn] | tuple[Turn, ...]) -> str:
    """The transcript format shared with VERA-MH: `user:` / `chatbot:` blocks."""
    return "\n\n".join(f"{t.speaker}: {t.text}" for t in turns)


def parse_reply(parsed: Any, text: str, answer_format: AnswerFormat = "json") -> JudgeReply | None:
    """The structured reply, from the client's parsed object or leniently from text
    (a JSON object somewhere in it, e.g. inside a code fence); with the "labelled"
    answer format also from "ANSWER: ..." / "REASONING: ..." lines."""
    candidates = [c for c in (parsed, extract_json(text or "")) if isinstance(c, dict)]
    for c in candidates:
        try:
            return msgspec.convert(c, JudgeReply)
        except msgspec.ValidationError:
            continue
    return parse_labelled(text or "") if answer_format == "labelled" else None


# "ANSWER: Yes" on a line of its own, and "REASONING:" up to the answer line or the end
# of the reply (either may come first); markdown emphasis or a heading mark around a
# label is tolerated.
_LABEL = r"^[ \t*_#>]*{name}[ \t*_]*:[ \t*_]*"
_ANSWER = re.compile(_LABEL.format(name="answer") + r"(?P<value>.*?)[ \t*_]*$", re.IGNORECASE | re.MULTILINE)
_REASONING = re.compile(_LABEL.format(name="reasoning"), re.IGNORECASE | re.MULTILINE)


def parse_labelled(text: str) -> JudgeReply | None:
    """VERA-MH's answer format: an "ANSWER:" line and a "REASONING:" part. The answer
    may be written in the template's square brackets ("[Yes]")."""
    answer = _ANSWER.search(text)
    if answer is None or not answer.group("value").strip():
        return None
    value = answer.group("value").strip()
    if value.startswith("[") and value.endswith("]"):
        value = value[1:-1].strip()
    reasoning = _REASONING.search(text)
    why = ""
    if reasoning is not None:
        end = answer.start() if reasoning.start() < answer.start() else len(text)
        why = text[reasoning.end() : end].strip()
    return JudgeReply(answer=value, reasoning=why)


def options_text(prompts: JudgePrompts, labels: tuple[str, ...]) -> str:
    """The options as the prompt set's dialect writes them."""
    return (", " if prompts.placeholders == "vera-mh" else " | ").join(labels)


def system_values(prompts: JudgePrompts, turns: list[Turn] | tuple[Turn, ...]) -> dict[str, str]:
    key = "conversation" if prompts.placeholders == "vera-mh" else "transcript"
    return {key: render_transcript(turns)}


def question_prompt(prompts: JudgePrompts, q: Question) -> str:
    """The prompt that asks the judge question `q`."""
    return prompts.question.render(question_values(prompts, q))


def question_values(prompts: JudgePrompts, q: Question) -> dict[str, str]:
    """A question's placeholders in the prompt set's dialect. VERA-MH's templates take
    the examples as a section of their own, set off by blank lines, or nothing."""
    options = options_text(prompts, q.labels)
    if prompts.placeholders == "vera-mh":
        return {
            "question": q.text,
            "examples_section": f"\n{q.guidance}\n" if q.guidance else "",
            "options": options,
        }
    return {
        "question_id": q.id,
        "dimension": q.dimension,
        "question": q.text,
        "guidance": q.guidance or "(none)",
        "options": options,
    }


def match_option(answer: str, labels: tuple[str, ...]) -> str | None:
    """Exact (case-insensitive, surrounding quotes/punctuation ignored) match only."""
    clean = answer.strip().strip("\"'`*").rstrip(".!").strip().lower()
    for label in labels:
        if label.lower() == clean:
            return label
    return None


class RubricJudge:
    """Answers rubric questions about one conversation through a chat client."""

    def __init__(
        self,
        conversation: Conversation,
        rubric: Rubric,
        prompts: JudgePrompts,
        client: ChatClient,
        *,
        job_id: str,
        params: dict[str, Any] | None = None,
        max_attempts: int = 3,
    ) -> None:
        self.conversation = conversation
        self.rubric = rubric
        self.prompts = prompts
        self.client = client
        self.job_id = job_id
        self.params = params
        self.max_attempts = max_attempts
        self.usage = Usage()
        # The questions whose every call was a reply replayed on a resume: a
        # question asked ahead and not reached is counted as unused only if paid for.
        self.replayed: set[str] = set()
        self.system = Message("system", prompts.system.render(system_values(prompts, conversation.turns)))
        self.schema = JUDGE_SCHEMA if prompts.structured_output else None

    async def answer(self, q: Question) -> Answer:
        with tallying() as tally:
            try:
                return await self._answer(q)
            finally:
                if tally.replayed and not tally.sent:
                    self.replayed.add(q.id)

    def unused_paid(self, ahead: AskAhead | None) -> int:
        """The questions `ahead` asked and the walk did not reach that were paid for:
        on a rerun, one replayed on a resume cost nothing."""
        if ahead is None:
            return 0
        return sum(1 for qid in ahead.unused_ids if qid not in self.replayed)

    async def _answer(self, q: Question) -> Answer:
        labels = q.labels
        options = options_text(self.prompts, labels)
        prompt = question_prompt(self.prompts, q)
        messages = [self.system, Message("user", prompt)]
        ctx = CallContext(role="judge", job_id=self.job_id, conversation_id=self.conversation.id)
        last = ""
        for attempt in range(1, self.max_attempts + 1):
            with asking(q.id):  # the call's body is kept beside the question (vera.clients.meter)
                reply = await self.client.chat(
                    ChatRequest(
                        messages=tuple(messages),
                        params=self.params,
                        schema=self.schema,
                        cache_prefix=1,
                        context=ctx,
                    )
                )
            self.usage.add(reply.usage)
            parsed = parse_reply(reply.parsed, reply.text, self.prompts.answer_format)
            label = match_option(parsed.answer, labels) if parsed else None
            if parsed and label:
                return Answer(label, parsed.reasoning, reply.text, attempt)
            last = parsed.answer if parsed else reply.text[:200]
            messages = [
                *messages,
                Message("assistant", reply.text or "(empty)"),
                Message("user", self.prompts.retry.render({"answer": last, "options": options})),
            ]
        raise InvalidAnswerError(
            f"question {q.id}: no valid answer after {self.max_attempts} attempts "
            f"(last: {last[:80]!r}; options: {options})"
        )


async def judge_conversation(
    conversation: Conversation,
    rubric: Rubric,
    prompts: JudgePrompts,
    client: ChatClient,
    *,
    judge_ref: str,
    instance: int,
    job_id: str,
    params: dict[str, Any] | None = None,
    max_attempts: int = 3,
    ahead: AskAhead | None = None,
    terminal: TerminalSemantics = "vera",
) -> Judgement:
    """Walk the rubric for one conversation, its independent parts at the same time
    (same questions, answers and ratings as one after the other; see
    `vera.rubric._concurrent`), with `ahead` asking long chains' likely next questions
    early. A provider failure or an invalid answer makes the judgement *failed* with
    the reason; it is then kept out of the scores. `terminal`: what the rubric's END
    does to the ratings already collected (`vera.rubric._walk.walk_rubric`)."""
    judge = RubricJudge(
        conversation, rubric, prompts, client, job_id=job_id, params=params, max_attempts=max_attempts
    )
    answered: list[tuple[Question, Answer]] = []  # in walk order, kept for audit if the walk fails
    try:
        walk = await walk_rubric_concurrent(
            rubric, judge.answer, answered=answered, ahead=ahead, terminal=terminal
        )
    except (TransientError, InvalidAnswerError) as exc:
        return Judgement(
            id=job_id,
            conversation_id=conversation.id,
            judge=judge_ref,
            instance=instance,
            status="failed",
            # what was answered before the failure, so a reader can see how far it got
            answers=[
                JudgeAnswer(
                    question_id=q.id,
                    dimension=q.dimension,
                    answer=a.label,
                    reasoning=a.reasoning,
                    raw=a.raw,
                    attempts=a.attempts,
                )
                for q, a in answered
            ],
            ratings=[],
            error=f"{type(exc).__name__}: {exc}",
            usage=judge.usage,
            finished_at=time.time(),
            unused_questions=judge.unused_paid(ahead),
        )
    return Judgement(
        id=job_id,
        conversation_id=conversation.id,
        judge=judge_ref,
        instance=instance,
        status="complete",
        answers=walk.answers,
        ratings=walk.ratings,
        risk_selected=walk.risk_selected,
        usage=judge.usage,
        finished_at=time.time(),
        unused_questions=judge.unused_paid(ahead),
    )
