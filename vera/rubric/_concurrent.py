"""Walk a rubric's independent parts at the same time, with the sequential walk's answers.

Which question comes next depends on the answer, so a walk cannot simply be split: a
question may be asked only if the sequential walk (`vera.rubric._walk.walk_rubric`) would ask
it too. Some questions are certain, though. In the flow graph (every question an edge to
each question an answer can lead to, stopping an edge to an exit), question P
*post-dominates* question Q when every path from Q to the exit passes through P: once
the walk reaches Q, it will reach P whatever the answers in between. In vera-si, for
example, every path from "Detects Potential Risk"'s second question runs through the
first question of "Guides to Human Care", and from there through the first questions
of "Supportive Conversation" and "Follows AI Boundaries": once the walk gets there,
four parts can be asked at once.

So the walk runs as *parts*: a part walks from its first question until it reaches its
stop (the question the next part starts at, or the exit), asking exactly what the
sequential walk asks between them. At every question Q it reaches, the part looks up
P, Q's nearest post-dominator; if P comes before the part's stop, the rest from P on
becomes a new part that starts at once, and this part now stops at P. Each part's
first question is certain (it post-dominates a question that was reached), and a part
follows the sequential rule from there, so the parts ask exactly the questions of the
sequential walk, each once. When they are done, the sequential walk is replayed over
the collected answers, so the answers, ratings and audit fields are the sequential
walk's own, by construction.

A failing call fails the walk as it would fail the sequential one: the failure that
comes first *in walk order* is raised (not the first in time), and `answered` holds the
answers before it in walk order. Parts after a failed one are cancelled, as their calls
would never have been made; parts before it finish, since one of them might fail first.
The only difference from the sequential walk is then a few calls of later parts that
were already in flight when an earlier part failed: they are paid for (their usage is
counted by the caller's client) but not recorded as answers.

A rubric whose flow has a cycle (an invalid rubric, refused by validation) has no
post-dominators to speak of; it is walked sequentially.
"""

from __future__ import annotations

import asyncio
from functools import lru_cache

from vera.rubric._model import Question, Rubric
from vera.rubric._validate import _successors
from vera.rubric._walk import Answer, AnswerFn, Walk, _canonical, walk_rubric

# The exit of the flow graph (END, ASSIGN_END, or the last row's next).
_EXIT = None


class Flow:
    """A rubric's flow graph: the next question for every (question, label), and every
    question's nearest post-dominator (`None` for the exit)."""

    __slots__ = ("ipdom", "step")

    def __init__(self, step: list[dict[str, int | None]], ipdom: list[int | None]) -> None:
        self.step = step
        self.ipdom = ipdom


@lru_cache(maxsize=16)
def flow_of(rubric: Rubric) -> Flow | None:
    """The flow of a rubric, or None when it has a cycle (a validated rubric has none)."""
    step: list[dict[str, int | None]] = []
    for i in range(len(rubric.questions)):
        targets: dict[str, int | None] = {}
        for label, target in _successors(rubric, i):
            targets.setdefault(label, target)  # the first option of a label wins, as in the walk
        step.append(targets)
    ipdom = _post_dominators([list(dict.fromkeys(s.values())) for s in step])
    return None if ipdom is None else Flow(step, ipdom)


def _post_dominators(succ: list[list[int | None]]) -> list[int | None] | None:
    """Nearest post-dominator of every node of a graph whose edges to `None` go to the
    exit; None if the graph has a cycle. Nodes are taken after all their successors (a
    depth-first post-order), so a node's successors' post-dominator chains are known:
    its nearest post-dominator is the first node of one chain that is on all of them."""
    n = len(succ)
    ipdom: list[int | None] = [None] * n
    colour = [0] * n  # 0 new, 1 on the stack, 2 done

    def chain(node: int | None) -> list[int | None]:
        out: list[int | None] = []
        while node is not None:
            out.append(node)
            node = ipdom[node]
        out.append(_EXIT)
        return out

    for root in range(n):
        if colour[root]:
            continue
        colour[root] = 1
        stack = [(root, iter(succ[root]))]
        while stack:
            node, edges = stack[-1]
            nxt = next(edges, -1)
            if nxt == -1:
                chains = [chain(s) for s in succ[node]]
                others = [set(c) for c in chains[1:]]
                ipdom[node] = next(x for x in chains[0] if all(x in o for o in others)) if chains else _EXIT
                colour[node] = 2
                stack.pop()
            elif nxt is None or colour[nxt] == 2:
                continue
            elif colour[nxt] == 1:
                return None  # a cycle
            else:
                colour[nxt] = 1
                stack.append((nxt, iter(succ[nxt])))
    return ipdom


class _Part:
    """One part of the walk: its answers from `answer`, in order."""

    __slots__ = ("answers",)

    def __init__(self) -> None:
        self.answers: list[tuple[Question, Answer]] = []


async def walk_rubric_concurrent(
    rubric: Rubric,
    answer: AnswerFn,
    *,
    answered: list[tuple[Question, Answer]] | None = None,
) -> Walk:
    """`walk_rubric`'s result, with the questions of independent parts asked at the
    same time (see the module's docstring). Same arguments, same exceptions."""
    flow = flow_of(rubric)
    if flow is None or not rubric.questions:
        return await walk_rubric(rubric, answer, answered=answered)
    order: list[_Part] = []  # the parts in walk order
    running: dict[asyncio.Task[None], _Part] = {}
    task_of: dict[_Part, asyncio.Task[None]] = {}
    all_done = asyncio.Event()

    def start(first: int, stop: int | None, after: _Part | None) -> None:
        part = _Part()
        order.insert(order.index(after) + 1 if after is not None else 0, part)
        task = asyncio.create_task(walk_part(part, first, stop))
        running[task], task_of[part] = part, task
        task.add_done_callback(finished)

    def finished(task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            # The sequential walk stops here: nothing after this part is asked.
            for later in order[order.index(running[task]) + 1 :]:
                task_of[later].cancel()
        # Parts start only from running parts: when all are done, none will start.
        if all(t.done() for t in running):
            all_done.set()

    async def walk_part(part: _Part, i: int | None, stop: int | None) -> None:
        while i is not None and i != stop:
            certain = flow.ipdom[i]
            if certain is not None and certain != stop:
                # Every path from i passes through `certain` before `stop` (stop
                # post-dominates i too, so it is further along i's chain): the rest
                # from there is a part of its own, asked from now on.
                start(certain, stop, part)
                stop = certain
            q = rubric.questions[i]
            if q.automatic:
                label = q.options[0].label
            else:
                a = await answer(q)
                part.answers.append((q, a))
                label = _canonical(q, a.label)
            i = flow.step[i][label]

    start(0, _EXIT, None)
    try:
        await all_done.wait()
    finally:
        # Cancelled from outside (the sweep stops): no part outlives the walk.
        left = [t for t in running if not t.done()]
        for t in left:
            t.cancel()
        if left:
            await asyncio.gather(*left, return_exceptions=True)

    in_order = [qa for part in order for qa in part.answers]
    for part in order:
        task = task_of[part]
        if not task.cancelled() and (exc := task.exception()) is not None:
            if answered is not None:
                answered.extend(qa for p in order[: order.index(part) + 1] for qa in p.answers)
            raise exc
    if answered is not None:
        answered.extend(in_order)
    by_id = {q.id: a for q, a in in_order}

    async def recorded(q: Question) -> Answer:
        return by_id[q.id]

    # The sequential walk over the collected answers: ratings exactly as it makes them.
    return await walk_rubric(rubric, recorded)
