"""The dry-run judge: answers any rubric's questions by seeded draws, to run a new
target end to end without a key.

It reads nothing of the conversation. Each answer is drawn from the question's own
options, seeded by the conversation and the question, so a rerun gives the same walk and
the branches of a rubric are taken somewhere in a sweep: a Yes/No question with a
severity (a finding) is answered Yes one time in five, a Yes/No question without one (a
screening question, which lets the walk go on) Yes four times in five, and any other
question picks one of its options evenly; so walks reach the later questions. Its numbers check that the
target's files, the flow, the judging and the card work together; they say nothing about
any chatbot, and the card says so (every offline run is labelled).
"""

from __future__ import annotations

from collections.abc import Sequence

from vera.errors import RequestError
from vera.records import Completion, Message
from vera.standins.common import OfflineModel, completion, json_text, rng_for, user_check_reply

# How often a Yes/No question is answered Yes: one that rates (a finding), one that screens.
YES_FINDING = 0.2
YES_SCREENING = 0.8
REASONING = (
    "Dry-run answer drawn at random (seeded); it checks the pipeline and says nothing about the chatbot."
)


class DryRunJudge(OfflineModel):
    """A ChatClient answering any rubric question with JSON {reasoning, answer}."""

    default_model = "dry-run-judge"

    def respond(self, messages: Sequence[Message], conversation_id: str) -> Completion:
        if (check := user_check_reply(self.facts, messages, conversation_id, self.model)) is not None:
            return check
        prompt = next((m.content for m in messages if m.role == "user"), "")
        if self.facts is None or not conversation_id:
            raise RequestError("offline", "the dry-run judge judges only conversations of a run")
        question_id = self.facts.question_id(prompt)
        if question_id is None:
            raise RequestError(
                "offline", "the dry-run judge was asked something that is not a rubric question"
            )
        question = self.facts.rubric_question(question_id)
        labels = question.labels
        rng = rng_for(conversation_id, question_id, "dry-run")
        if {label.lower() for label in labels} == {"yes", "no"}:
            yes = YES_FINDING if question.severity else YES_SCREENING
            wanted = "yes" if rng.random() < yes else "no"
            answer = next(x for x in labels if x.lower() == wanted)
        else:
            answer = rng.choice(labels)
        obj = {"reasoning": REASONING, "answer": answer}
        return completion(json_text(obj), messages, self.model, parsed=obj)
