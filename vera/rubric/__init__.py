"""The rubric: load it (TSV), validate its flow as a graph, walk it (one question after
another, or the independent parts at once), rate each dimension, and render it as a
document. Pure: the walk takes an `answer(question)` coroutine.
"""

from vera.rubric._concurrent import AskAhead, calls_at_once, walk_rubric_concurrent
from vera.rubric._doc import render_rubric
from vera.rubric._guide import GUIDE_WORDS, RatingMeaning, rating_guide
from vera.rubric._load import load_rubric
from vera.rubric._model import TERMINAL_SEMANTICS, Question, Rubric, TerminalSemantics
from vera.rubric._texts import QuestionTexts, RubricMissing, question_texts, run_rubric
from vera.rubric._validate import validate_rubric
from vera.rubric._walk import Answer

__all__ = [
    "GUIDE_WORDS",
    "TERMINAL_SEMANTICS",
    "Answer",
    "AskAhead",
    "Question",
    "QuestionTexts",
    "RatingMeaning",
    "Rubric",
    "RubricMissing",
    "TerminalSemantics",
    "calls_at_once",
    "load_rubric",
    "question_texts",
    "rating_guide",
    "render_rubric",
    "run_rubric",
    "validate_rubric",
    "walk_rubric_concurrent",
]
