"""Every output vera writes, digested, so a restructuring can show it changed none of them.

A move of modules must leave every byte a user sees as it was. This script produces the
outputs of every report command (the card in all its files and the terminal, compare
in text, JSON and HTML, both gates, the sequential gate's records and page, every
export, pooling, the improvement report, ratings import and plan, agreement, the
calibrated card, the static pages of `vera view --bundle`) from the same fixed runs,
plus a fresh offline run (the stand-ins' conversations and judgements), and writes a
SHA-256 per output. Run it with the code before and after the change and compare:

    python benchmarks/output_identity.py runs  /tmp/id/runs          # once, any version
    python benchmarks/output_identity.py outputs /tmp/id/runs /tmp/id/before
    ... change the code ...
    python benchmarks/output_identity.py outputs /tmp/id/runs /tmp/id/after
    python benchmarks/output_identity.py diff /tmp/id/before /tmp/id/after

(`digest OUT` re-masks and re-digests an outputs folder, e.g. after the masks changed.)

The fixed runs are made once so that the report outputs are compared on identical
records; the fresh run is made by each version, and its run id, times and durations are
masked (they differ between any two runs) before it is digested.
"""

from __future__ import annotations

import csv
import fcntl
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

VERA = str(Path(sys.executable).with_name("vera"))
ENV = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1", "TZ": "UTC"}
DIMENSIONS_COLUMN = "dimension"

# Work happens in one fixed place, so paths printed by a command are the same every time.
WORK = Path(tempfile.gettempdir()) / "vera-output-identity"
# What differs between any two runs of the same code: the fresh run's id, clock times
# (ISO, epoch seconds, file mtimes in nanoseconds) and durations. Masked in text outputs.
_MASKS = [
    (re.compile(rb"\b[0-9]{8}-[0-9]{6}-[0-9a-f]{4,}\b"), b"<run-id>"),
    (
        re.compile(rb"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?"),
        b"<time>",
    ),
    (re.compile(rb'((?:_|")at"\s*:\s*)\d+(\.\d+)?'), rb"\1<time>"),
    (re.compile(rb'(latency_ms"\s*:\s*)\d+(\.\d+)?'), rb"\1<latency>"),
    (re.compile(rb"\b1[6-9]\d{17}\b"), b"<mtime>"),
    (re.compile(rb"\d+(\.\d+)? ?(s|ms|min)\b"), b"<duration>"),
]


def vera(*args: str, cwd: Path, stdout: Path | None = None, ok: tuple[int, ...] = (0,)) -> bytes:
    done = subprocess.run([VERA, *args], cwd=cwd, env=ENV, capture_output=True, check=False)
    if done.returncode not in ok:
        raise SystemExit(f"vera {' '.join(args)}: exit {done.returncode}\n{done.stderr.decode()}")
    if stdout is not None:
        stdout.write_bytes(done.stdout)
    return done.stdout


def make_runs(root: Path) -> None:
    """Two small offline runs of the same personas (baseline seeds 1-2, candidate seed 3),
    and a one-chatbot baseline for the sequential gate."""
    root.mkdir(parents=True, exist_ok=False)
    for name, seeds, only in (
        ("a", "2", ()),
        ("b", "3", ()),
        ("c", "2", ("--providers", "offline/best-practice")),
    ):
        vera("run", *only, "--limit-personas", "6", "--seeds", seeds, "--out", name, cwd=root)


def _ratings_file(run: Path, out: Path) -> Path:
    """Seeded human ratings in the long format: three raters over the run's first ten
    conversations and every dimension the judge rated."""
    vera("export", str(run), "-o", str(out / "dims.csv"), cwd=out)
    with (out / "dims.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    items = sorted({r["conversation_id"] for r in rows})[:10]
    dims = sorted({r[DIMENSIONS_COLUMN] for r in rows if r[DIMENSIONS_COLUMN]})
    rng = random.Random(7)
    path = out / "humans.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["item_id", "rater", "dimension", "rating"])
        for item in items:
            for rater in ("ann", "bob", "cy"):
                for dim in dims:
                    w.writerow([item, rater, dim, rng.choice(["BP", "BP", "SUB", "HPH", "NR"])])
    (out / "dims.csv").unlink()
    return path


def _hold_work_folder() -> None:
    """Refuse, in one line, to share WORK with another `outputs` running at the same time:
    the folder is fixed (so printed paths compare equal), and two runs in it would
    overwrite each other's files and report differences that are not in the code."""
    WORK.parent.mkdir(parents=True, exist_ok=True)
    lock = open(WORK.with_name(WORK.name + ".lock"), "w")  # noqa: SIM115 - held until exit
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.exit(f"output_identity: {WORK} is in use by another run of this script; wait for it")
    _HELD.append(lock)


_HELD: list[object] = []


def outputs(runs: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=False)
    _hold_work_folder()
    work = WORK
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    a, b = work / "a", work / "b"
    shutil.copytree(runs / "a", a)
    shutil.copytree(runs / "b", b)
    t = out / "files"
    t.mkdir()

    def run(*args: str | Path, to: str | None = None, ok: tuple[int, ...] = (0,)) -> None:
        """`vera ARGS` in the work folder (so printed paths never differ), its stdout
        kept as files/TO."""
        vera(*map(str, args), cwd=work, stdout=None if to is None else t / to, ok=ok)

    gate_ok = (0, 4, 5)  # passed, failed, or too few conversations to say

    # The card: every file `vera score` writes, then the same with a breakdown and the
    # flagged conversations left out, then the terminal forms.
    run("score", a, to="score.stdout")
    run("score", b)
    run("card", a, to="card.txt")
    run("card", a, "--by", "user-agent", to="card_by.txt")
    a2 = work / "a2"
    shutil.copytree(a, a2)
    run("score", a2, "--by", "Current Suicide Risk Level", "--exclude-flagged", to="score_by.stdout")

    # Comparison and gate, in each of their forms; pooling.
    compares: list[tuple[tuple[str, ...], str | None, tuple[int, ...]]] = [
        ((), "compare.txt", (0,)),
        (("--by-seed",), "compare_by_seed.txt", (0,)),
        (("--json", "-"), "compare.json", (0,)),
        (("--html", str(t / "compare.html")), None, (0,)),
        (("--gate",), "gate.txt", gate_ok),
        (("--gate", "--json", "-"), "gate.json", gate_ok),
    ]
    for extra, to, ok in compares:
        run("compare", a, b, *extra, to=to, ok=ok)
    for extra, to in (((), "pool.txt"), (("--json",), "pool.json")):
        run("pool", a, b, "--chatbot", "offline/best-practice", *extra, to=to)

    # The sequential gate: waves of a candidate against a one-chatbot baseline, its
    # records, page and plot, and the note `vera compare` gives for its run.
    c, g = work / "c", work / "g"
    shutil.copytree(runs / "c", c)
    # Exit 1 is an outcome here too: the stand-ins now rate this baseline's rows all Not
    # Relevant, so the gate says it has nothing to compare (its message is the output),
    # writes no run, and `compare` says that run is missing.
    run("gate", c, "--candidate", "offline/risk-ignoring", "--wave", "4", "--max-conversations", "12",
        "--out", g, to="seq_gate.txt", ok=(*gate_ok, 1))  # fmt: skip
    run("compare", c, g, to="seq_compare.txt", ok=(0, 1))

    # The static bundle of `vera view --bundle`: conversation pages, lists, compare.
    run("view", a, "--bundle", t / "bundle", to="bundle.stdout")

    # Exports.
    for extra, name in (
        ((), "export.csv"),
        (("--wide",), "export_wide.csv"),
        (("--format", "parquet"), "export.parquet"),
        (("--format", "reference"), "reference"),
        (("--calls",), "calls_full.jsonl"),
    ):
        run("export", a, *extra, "-o", t / name)
    for results in sorted((t / "reference").rglob("results.csv")):
        run("score", results, to=f"score_reference_{results.parent.name}.txt")

    # The improvement report.
    for fmt in ("md", "html", "json"):
        run("report", "improvements", a, "--format", fmt, "--out", t / f"improvements.{fmt}")

    # Human ratings: import, plan, agreement, the calibrated card and gate.
    humans = _ratings_file(a, work)
    run("agreement", humans, to="agreement.txt")
    run("agreement", humans, "--json", to="agreement.json")
    against = ("--against", a, "--resamples", "200")
    run("agreement", humans, *against, "--confusion-csv", t / "confusion.csv", to="agreement_against.txt")
    run("agreement", humans, *against, "--json", to="agreement_against.json")
    run("ratings", "import", a, humans, to="ratings_import.txt")
    run("ratings", "import", b, humans, "--skip-unmatched", ok=(0, 1))
    run("ratings", "plan", a, "--resamples", "100", to="ratings_plan.txt", ok=(0, 1))
    run("score", a, to="score_calibrated.stdout")
    run("card", a, to="card_calibrated.txt")
    run("compare", a, b, "--gate", "--calibrated", to="gate_calibrated.txt", ok=(0, 1, 4, 5))

    # Every file the two scored runs hold now (cards, plots, pages, frames, ratings).
    for folder, name in ((a, "run_a"), (a2, "run_a2"), (b, "run_b"), (g, "run_gate")):
        for f in sorted(folder.rglob("*")):
            if (
                f.is_file()
                and f.suffix not in (".sqlite", ".vlog", ".lock")
                and f.name not in ("events.jsonl",)
            ):
                rel = f.relative_to(folder)
                dest = t / name / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, dest)

    # A fresh offline run made by this version: the stand-ins' words and the judge's ratings.
    fresh = work / "fresh"
    run("run", "--limit-personas", "4", "--seeds", "1", "--out", fresh, to="fresh.stdout")
    run("export", fresh, "-o", t / "fresh_export.csv")
    for name in ("card.md", "conversations.jsonl", "judgements.jsonl"):
        shutil.copyfile(fresh / name, t / f"fresh_{name}")
    digest(out)


def digest(out: Path) -> None:
    """Mask what differs between any two runs in the text outputs (in place; again is a
    no-op) and write OUT/digests.json."""
    t = out / "files"
    masks = [(re.compile(re.escape(str(out)).encode()), b"<out>"), *_MASKS]
    for f in sorted(t.rglob("*")):
        data = f.read_bytes() if f.is_file() else b"\0"
        if b"\0" not in data[:8192]:
            for pattern, mask in masks:
                data = pattern.sub(mask, data)
            f.write_bytes(data)
    digests = {
        str(f.relative_to(t)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(t.rglob("*"))
        if f.is_file()
    }
    (out / "digests.json").write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
    print(f"{len(digests)} outputs digested into {out / 'digests.json'}")


def diff(before: Path, after: Path) -> int:
    a = json.loads((before / "digests.json").read_text())
    b = json.loads((after / "digests.json").read_text())
    changed = sorted(k for k in a.keys() & b.keys() if a[k] != b[k])
    only = sorted(a.keys() ^ b.keys())
    for k in changed:
        print(f"differs: {k}")
    for k in only:
        print(f"only in {'before' if k in a else 'after'}: {k}")
    same = len(a.keys() & b.keys()) - len(changed)
    print(f"{same} of {len(a.keys() | b.keys())} outputs byte-identical")
    return 1 if changed or only else 0


def main() -> int:
    if len(sys.argv) >= 3 and sys.argv[1] == "runs":
        make_runs(Path(sys.argv[2]))
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "outputs":
        outputs(Path(sys.argv[2]).resolve(), Path(sys.argv[3]).resolve())
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "digest":
        digest(Path(sys.argv[2]).resolve())
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "diff":
        return diff(Path(sys.argv[2]), Path(sys.argv[3]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
