"""The offline stand-ins' view of a run (`vera.standins.StandInFacts`).

The engine sends a model only the request, and a request says only who is calling for
which conversation. The stand-ins need more (the persona and seed of a conversation, the
end-marker rules, the rubric, the turns being judged); this layer has the inputs, the
plan and the store, so it answers for them here, by conversation id, and the pool hands
this object to the stand-ins alone.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence

from vera.engine import ConversationJob, Inputs, question_prompt, turns_from_user_view
from vera.inputs import OFFLINE, render_user_reminder
from vera.records import Conversation, Message, Turn
from vera.rubric import Question
from vera.standins import PlannedConversation, rubric_refusal

# Conversations whose turns are kept for the judge: every question of a conversation
# asks for them, and a sweep judges about as many conversations at once as it runs.
_KEPT = 256


class RunFacts:
    """`StandInFacts` for one run: from its inputs, its plan (`plan`, once it is made)
    and its store (`read_conversation`: a conversation is stored before it is judged)."""

    def __init__(self, inputs: Inputs, read_conversation: Callable[[str], Conversation]) -> None:
        self._inputs = inputs
        self._settings = inputs.settings()
        self._read = read_conversation
        self._jobs: Sequence[ConversationJob] = ()
        self._by_id: dict[str, ConversationJob] | None = None
        self._reminders: dict[str, str] = {}
        self._judged: OrderedDict[str, tuple[Turn, ...]] = OrderedDict()
        self._questions: dict[str, str] | None = None
        self.end_marker = inputs.user_prompts.end_marker
        self.min_turns = self._settings.min_turns
        self.rubric_key = inputs.rubric.key
        self.resources = inputs.locale.resources if inputs.locale is not None else None

    def plan(self, jobs: Iterable[ConversationJob]) -> None:
        """Learn the planned conversations. The plan is made after the pool opens (it
        asks the pool about the models), so it cannot be given at construction. Kept by
        reference and indexed by id only when a stand-in first asks: a run without
        stand-ins pays nothing per planned conversation for them."""
        self._jobs = jobs if isinstance(jobs, Sequence) else list(jobs)
        self._by_id = None

    def _job(self, conversation_id: str) -> ConversationJob | None:
        if self._by_id is None:
            self._by_id = {j.id: j for j in self._jobs}
        return self._by_id.get(conversation_id)

    def conversation(self, conversation_id: str) -> PlannedConversation | None:
        job = self._job(conversation_id)
        return None if job is None else PlannedConversation(persona=job.persona, seed=job.seed)

    def user_turns(self, conversation_id: str, messages: Sequence[Message]) -> list[Turn]:
        job = self._job(conversation_id)
        if job is None:
            raise KeyError(conversation_id)
        persona = job.persona
        # A session type may set its own turn limits and first speaker.
        kind = job.session.type if job.session is not None else ""
        settings = self._inputs.settings(kind) if kind else self._settings
        key = f"{persona.name}\x1f{kind}"
        reminder = self._reminders.get(key)
        if reminder is None:
            reminder = self._reminders[key] = render_user_reminder(
                persona,
                self._inputs.user_prompts,
                min_turns=settings.min_turns,
                max_turns=settings.max_turns,
            )
        return turns_from_user_view(messages, reminder, self._inputs.user_prompts, settings.first_speaker)

    def judged_turns(self, conversation_id: str) -> tuple[Turn, ...]:
        turns = self._judged.get(conversation_id)
        if turns is None:
            turns = self._judged[conversation_id] = tuple(self._read(conversation_id).turns)
            if len(self._judged) > _KEPT:
                self._judged.popitem(last=False)
        return turns

    def rubric_question(self, question_id: str) -> Question:
        return self._inputs.rubric.question(question_id)

    def question_id(self, prompt: str) -> str | None:
        if self._questions is None:
            prompts = self._inputs.judge_prompts
            self._questions = {question_prompt(prompts, q): q.id for q in self._inputs.rubric.questions}
        return self._questions.get(prompt)


DRY_RUN_JUDGE = f"{OFFLINE.name}/dry-run-judge"


def dry_run_swap(judges: list[str], rubric_key: str, *, chosen: bool) -> list[str]:
    """The judges a run replaces by the dry-run judge: every judge of the config, when
    each is an offline stand-in that cannot read the rubric (the lexical judge knows only
    vera-si) and the user did not name the judges on the command line, so any target
    runs offline end to end. Empty when nothing is replaced."""
    prefix = f"{OFFLINE.name}/"
    refused = [
        j for j in judges if j.startswith(prefix) and rubric_refusal(j.removeprefix(prefix), rubric_key)
    ]
    if chosen or not refused or len(refused) != len(judges):
        return []
    return refused


def fit_stand_in_judges(inputs: Inputs, *, chosen: bool) -> str | None:
    """Judge with the dry-run judge where `dry_run_swap` says so. Returns the note that
    says so (None: nothing changed)."""
    cfg = inputs.config
    refused = dry_run_swap(cfg.judges, inputs.rubric.key, chosen=chosen)
    if not refused:
        return None
    cfg.judges = [DRY_RUN_JUDGE]
    return (
        f"note: {', '.join(refused)} cannot judge {inputs.rubric.key}; judging with {DRY_RUN_JUDGE} "
        "(seeded draws: the scores check the pipeline, not a chatbot)"
    )
