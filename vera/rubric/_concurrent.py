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
answers before it in walk order. Parts after a failed one ask nothing more, as their
calls would never have been made; parts before it finish, since one of them might fail
first. The only difference from the sequential walk is then a few calls of later parts
(and questions asked ahead) that were already under way when an earlier part failed.
They are not cancelled: a request already sent is billed whether or not anyone waits
for its answer, and only a call that ends is recorded (vera.clients.stack), so the walk
waits for them and the card's calls stay the requests the provider received. Their
answers are not recorded as answers. Only a cancellation from outside (the sweep
stopping) cancels calls in flight.

A rubric whose flow has a cycle (an invalid rubric, refused by validation) has no
post-dominators to speak of; it is walked sequentially.

**Asking ahead** (`AskAhead`, off unless given). The parts shorten the walk to its
longest chain: in vera-si up to 7 questions of one dimension, each asked only if the one
before was answered No. At the end of a sweep nothing else waits for the account's
slots, and those chains are what the sweep waits for. With `AskAhead`, a part that has
already asked `after` questions (a chain that is going on) also asks, while it waits for
its answer, the question it goes on to along the longest way onward; if the answer
leads there, that answer is at hand one call earlier, so the rest of the chain takes
half the rounds. An answer is the same whenever it is asked: each judge call holds the
transcript and one question, nothing about earlier answers. A question asked ahead that
the walk does not reach is *unused*: paid for, counted in `AskAhead.unused`, never
recorded as an answer, and the walk waits for it (its call is accounted like any
other). It is asked only while `AskAhead.when()` says so (the sweep gives "no job left
to start"). Everything above still holds: the answers, ratings and the failure raised
are the sequential walk's (a question asked ahead that fails is that walk's failure
only if the walk reaches it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import lru_cache

from vera.rubric._model import Question, Rubric, TerminalSemantics
from vera.rubric._validate import _successors
from vera.rubric._walk import Answer, AnswerFn, Walk, _canonical, walk_rubric

# The exit of the flow graph (END, ASSIGN_END, or the last row's next).
_EXIT = None


class Flow:
    """A rubric's flow graph: the next question for every (question, label), every
    question's nearest post-dominator (`None` for the exit), and its `onward` question:
    the next one along the longest way on from it (`None` when every answer leads to
    the exit)."""

    __slots__ = ("ipdom", "onward", "step")

    def __init__(
        self, step: list[dict[str, int | None]], ipdom: list[int | None], onward: list[int | None]
    ) -> None:
        self.step = step
        self.ipdom = ipdom
        self.onward = onward


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
    if ipdom is None:
        return None
    return Flow(step, ipdom, _onward(rubric, step))


def _onward(rubric: Rubric, step: list[dict[str, int | None]]) -> list[int | None]:
    """For every question, the next question along the longest way on from it (ways
    measured in asked questions, automatic ones passed through), or None when every
    answer leads to the exit. The flow has no cycle (the caller checked)."""
    n = len(step)
    longest: list[int] = [-1] * n  # asked questions on the longest way from i, i included
    for root in range(n - 1, -1, -1):
        stack = [root]
        while stack:  # depth first, a question after all its successors
            i = stack[-1]
            todo = [j for j in step[i].values() if j is not None and longest[j] < 0]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            onward = max((longest[j] for j in step[i].values() if j is not None), default=0)
            longest[i] = onward + (not rubric.questions[i].automatic)
    return [
        max((j for j in step[i].values() if j is not None), key=lambda j: longest[j], default=None)
        for i in range(n)
    ]


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


def calls_at_once(rubric: Rubric, *, ask_ahead: bool) -> int:
    """The most calls one walk of `rubric` can have in flight at once, whatever the
    answers and however long each call takes (a resume bounds a killed session's calls
    in flight with it: vera.app._killed). Each question is asked at most once (a re-ask
    of an invalid answer waits for the one before), so it is never more than the
    questions asked, and far fewer:

    - *parts*: a part has one call of its own in flight at a time, and the parts under
      way at once are strung along one way through the flow, each one's question
      reachable from the nearest post-dominator of the one before it (a part's stop
      post-dominates where it is, and the next part starts there). So `L(q)` = 1 +
      the most from anywhere reachable from q's post-dominator, and parts at once are
      at most the largest `L` reachable from the first question;
    - *asking ahead*: a part waiting for its question may have asked its onward one (at
      most one per part at a time), and a question asked ahead that the walk then left
      (its answer led elsewhere) stays in flight until it ends, unused. Such a question
      is asked at a question where the walk *diverged* from the onward way, at most one
      per question on the walk's way: at most the most divergences along one way.

    With asking ahead, the bound is twice the parts plus the divergences (a measured
    walk's calls in flight stay within it: tests/test_killed_session.py). A rubric
    whose flow has a cycle is walked sequentially: one call at a time."""
    asked = sum(1 for q in rubric.questions if not q.automatic)
    flow = flow_of(rubric)
    if flow is None or not rubric.questions:
        return min(1, asked)
    n = len(rubric.questions)
    auto = [q.automatic for q in rubric.questions]
    succ = [list(dict.fromkeys(flow.step[i].values())) for i in range(n)]

    def asked_next(j: int | None) -> int | None:
        """The question asked next from j on (automatic ones answer themselves)."""
        while j is not None and auto[j]:
            j = flow.step[j][rubric.questions[j].options[0].label]
        return j

    parts_from = [0] * n  # L: parts at once whose first own call is at i
    reach = [0] * n  # R: the largest L of any question reachable from i, i included
    diverge = [0] * n  # the most divergences on a way from i on
    for i in _successors_first(succ):
        after = flow.ipdom[i]
        parts_from[i] = (not auto[i]) + (reach[after] if after is not None else 0)
        reach[i] = max([parts_from[i], *(reach[j] for j in succ[i] if j is not None)])
        if auto[i]:
            diverge[i] = max((diverge[j] for j in succ[i] if j is not None), default=0)
            continue
        onward = asked_next(flow.onward[i])
        ways = [asked_next(j) for j in succ[i]]
        diverge[i] = max(
            (int(onward is not None and j != onward) + (diverge[j] if j is not None else 0) for j in ways),
            default=0,
        )
    parts = reach[0]
    return min(asked, 2 * parts + diverge[0] if ask_ahead else parts)


def _successors_first(succ: list[list[int | None]]) -> list[int]:
    """Every node of an acyclic flow, each after all the nodes it leads to."""
    order: list[int] = []
    seen = [False] * len(succ)
    for root in range(len(succ)):
        if seen[root]:
            continue
        seen[root] = True
        stack = [(root, iter(succ[root]))]
        while stack:
            node, edges = stack[-1]
            nxt = next(edges, -1)
            if nxt == -1:
                order.append(node)
                stack.pop()
            elif nxt is not None and not seen[nxt]:
                seen[nxt] = True
                stack.append((nxt, iter(succ[nxt])))
    return order


class AskAhead:
    """Asking ahead for one walk (see the module docstring): a part that has asked
    `after` questions asks its onward question alongside each next one, while `when()`
    is true. `asked` counts the questions asked ahead, `unused` those the walk did not
    reach (asked, not answers), `unused_ids` names them."""

    __slots__ = ("after", "asked", "unused", "unused_ids", "when")

    def __init__(self, when: Callable[[], bool], *, after: int = 3) -> None:
        self.when = when
        self.after = after
        self.asked = 0
        self.unused = 0
        self.unused_ids: list[str] = []


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
    ahead: AskAhead | None = None,
    terminal: TerminalSemantics = "vera",
) -> Walk:
    """`walk_rubric`'s result, with the questions of independent parts asked at the
    same time, and with `ahead` the likely next questions of long chains asked early
    (see the module's docstring). Same arguments, same exceptions. `terminal` changes
    only the ratings, never which questions are asked."""
    flow = flow_of(rubric)
    if flow is None or not rubric.questions:
        return await walk_rubric(rubric, answer, answered=answered, terminal=terminal)
    order: list[_Part] = []  # the parts in walk order
    running: dict[asyncio.Task[None], _Part] = {}
    task_of: dict[_Part, asyncio.Task[None]] = {}
    all_done = asyncio.Event()
    early: dict[int, asyncio.Future[Answer]] = {}  # asked ahead, not yet reached
    halted: set[_Part] = set()  # after a failed part: they ask nothing more

    def start(first: int, stop: int | None, after: _Part | None) -> None:
        part = _Part()
        order.insert(order.index(after) + 1 if after is not None else 0, part)
        task = asyncio.create_task(walk_part(part, first, stop))
        running[task], task_of[part] = part, task
        task.add_done_callback(finished)

    def finished(task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            # The sequential walk stops here: nothing after this part is asked. A later
            # part's call already under way runs to its end (see the module docstring).
            for later in order[order.index(running[task]) + 1 :]:
                halted.add(later)
        # Parts start only from running parts: when all are done, none will start.
        if all(t.done() for t in running):
            all_done.set()

    def ask_ahead(i: int, stop: int | None) -> None:
        j = flow.onward[i]
        # Only within the part: `stop` post-dominates i, so a way on reaches it or ends,
        # and what lies beyond it belongs to the next part.
        while j is not None and j != stop:
            if not rubric.questions[j].automatic:
                break
            j = flow.step[j][rubric.questions[j].options[0].label]
        if ahead is None or j is None or j == stop or j in early:
            return
        ahead.asked += 1
        early[j] = asyncio.ensure_future(answer(rubric.questions[j]))

    async def walk_part(part: _Part, i: int | None, stop: int | None) -> None:
        asked = 0
        while i is not None and i != stop and part not in halted:
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
                asked += 1
                if ahead is not None and asked >= ahead.after and ahead.when():
                    ask_ahead(i, stop)
                # Awaiting a task asked ahead cancels it if this part is cancelled.
                a = await (early.pop(i, None) or answer(q))
                if part in halted:
                    break  # an earlier part failed while this call was under way
                part.answers.append((q, a))
                label = _canonical(q, a.label)
            i = flow.step[i][label]

    start(0, _EXIT, None)
    completed = False
    try:
        await all_done.wait()
        completed = True
    finally:
        # Cancelled from outside (the sweep stops): no part outlives the walk.
        left = [t for t in running if not t.done()]
        for t in left:
            t.cancel()
        if left:
            await asyncio.gather(*left, return_exceptions=True)
        # Every part is done: what was asked ahead and is still here was not reached.
        # The walk waits for those calls, so each is accounted, whether it ran to its
        # end or failed; one cancelled from outside cancels them with its parts.
        unused = list(early.values())
        if ahead is not None:
            ahead.unused += len(unused)
            ahead.unused_ids.extend(rubric.questions[j].id for j in early)
        if not completed:
            for call in unused:
                call.cancel()
        if unused:
            await asyncio.gather(*unused, return_exceptions=True)

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
    return await walk_rubric(rubric, recorded, terminal=terminal)
