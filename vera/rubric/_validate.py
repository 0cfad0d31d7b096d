"""Validating a rubric's flow as a graph: dangling GOTOs, cycles, unreachable
questions, missing options. Problems are listed with their rows, never raised."""

from __future__ import annotations

from pathlib import Path

import msgspec

from vera.records import METHOD_DIMENSIONS
from vera.rubric._load import AUTO_FALSE, AUTO_TRUE
from vera.rubric._model import Rubric


class Problem(msgspec.Struct, frozen=True):
    line: int
    message: str

    def render(self, path: str) -> str:
        return f"{path}:{self.line}: {self.message}" if self.line else f"{path}: {self.message}"


def _successors(rubric: Rubric, i: int) -> list[tuple[str, int | None]]:
    """(label, next index or None=stop) for every outcome of question i."""
    q = rubric.questions[i]
    index = rubric.index()
    nxt = i + 1 if i + 1 < len(rubric.questions) else None
    if q.implicit:
        return [("Yes", next_dimension(rubric, i)), ("No", nxt)]
    out: list[tuple[str, int | None]] = []
    for o in q.options:
        g = o.goto
        if g.kind == "next":
            out.append((o.label, nxt))
        elif g.kind in ("question", "not_relevant"):
            out.append((o.label, index.get(g.target)))
        else:
            out.append((o.label, None))
    return out


def next_dimension(rubric: Rubric, i: int) -> int | None:
    dim = rubric.questions[i].dimension
    for j in range(i + 1, len(rubric.questions)):
        if rubric.questions[j].dimension and rubric.questions[j].dimension != dim:
            return j
    return None


def validate_rubric(rubric: Rubric) -> list[Problem]:
    """Every problem in the rubric's flow, each with the file line it concerns."""
    problems = [Problem(line, message) for line, message in rubric.header_problems]
    if not rubric.questions:
        return [*problems, Problem(0, "no questions")]
    index: dict[str, int] = {}
    graph_broken = False  # duplicate ids: cycle and reachability checks would mislead
    for i, q in enumerate(rubric.questions):
        if q.id in index:
            graph_broken = True
            first = rubric.questions[index[q.id]].line
            problems.append(Problem(q.line, f"duplicate question id {q.id!r} (first on {first})"))
        else:
            index[q.id] = i
    # The dimensions a rubric may use: those its sidecar lists, else the method's five
    # (a typo such as "Supportive Conversaton" would otherwise become a sixth dimension).
    known = rubric.declared_dimensions or METHOD_DIMENSIONS
    for q in rubric.questions:
        where = f"question {q.id}"
        if not q.dimension:
            problems.append(Problem(q.line, f"{where} has no dimension"))
        elif q.dimension not in known:
            side = Path(rubric.path).with_suffix(".toml").name
            whose = (
                f"as {side} lists them"
                if rubric.declared_dimensions
                else f"the method's five; a rubric with its own lists them in {side} as dimensions = [...]"
            )
            problems.append(
                Problem(
                    q.line,
                    f"{where} has unknown dimension {q.dimension!r}: expected one of {', '.join(known)} ({whose})",
                )
            )
        if q.severity not in (None, "Red", "Yellow"):
            problems.append(
                Problem(q.line, f"{where} has unknown severity {q.severity!r} (Red, Yellow or empty)")
            )
        if not q.text:
            problems.append(Problem(q.line, f"{where} has no question text"))
        if q.implicit and q.severity is None:
            problems.append(
                Problem(
                    q.line,
                    f"{where} has neither answer options nor a severity: an implicit "
                    "Yes/No question needs a severity, otherwise list its options",
                )
            )
        if q.auto_raw.lower() not in (AUTO_TRUE, *AUTO_FALSE):
            problems.append(
                Problem(
                    q.line, f"{where} has Auto Answer {q.auto_raw!r}: write true, false or leave it empty"
                )
            )
        elif q.auto and len(q.options) != 1:
            problems.append(
                Problem(
                    q.line,
                    f"{where} has Auto Answer true but {len(q.options)} answer options: "
                    "an auto-answered question needs exactly one explicit answer",
                )
            )
        labels: set[str] = set()
        for o in q.options:
            if not o.label:
                problems.append(Problem(o.line, f"{where} has an option without a label"))
            elif o.label.lower() in labels:
                problems.append(Problem(o.line, f"{where} lists option {o.label!r} twice"))
            labels.add(o.label.lower())
            g = o.goto
            if g.kind in ("question", "not_relevant"):
                if not g.target:
                    problems.append(Problem(o.line, f"{where}: GOTO {str(g)!r} names no question"))
                elif g.target not in index:
                    problems.append(
                        Problem(o.line, f"{where}: GOTO {str(g)!r} points to no question (dangling)")
                    )
                elif g.target == q.id:
                    problems.append(Problem(o.line, f"{where}: GOTO points to itself"))
            if g.kind == "assign_end" and q.severity is None:
                problems.append(
                    Problem(o.line, f"{where}: ASSIGN_END on a question without severity assigns nothing")
                )
    if not graph_broken:
        problems.extend(_graph_problems(rubric))
    return sorted(problems, key=lambda p: p.line)


def _graph_problems(rubric: Rubric) -> list[Problem]:
    n = len(rubric.questions)
    succ = [[t for _, t in _successors(rubric, i) if t is not None] for i in range(n)]
    problems: list[Problem] = []
    # Cycles: iterative DFS with colours; report each back edge once.
    colour = [0] * n
    for start in range(n):
        if colour[start]:
            continue
        stack = [(start, iter(succ[start]))]
        colour[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                colour[node] = 2
                stack.pop()
            elif colour[nxt] == 1:
                q, t = rubric.questions[node], rubric.questions[nxt]
                problems.append(
                    Problem(q.line, f"cycle: question {q.id} leads back to question {t.id} (row {t.line})")
                )
            elif colour[nxt] == 0:
                colour[nxt] = 1
                stack.append((nxt, iter(succ[nxt])))
    seen = {0}
    frontier = [0]
    while frontier:
        for nxt in succ[frontier.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    for i, q in enumerate(rubric.questions):
        if i not in seen:
            problems.append(Problem(q.line, f"question {q.id} is unreachable from the first question"))
    return problems
