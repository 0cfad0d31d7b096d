"""The benchmark harness behind `vera bench` (a source checkout only: it is not part of
the installed package): the engine's throughput, CPU and memory against a local fake server.

A benchmark run starts `benchmarks/fake_server.py` (an OpenAI-compatible server with a
fixed latency and an optional rate limit) as a separate process, so its CPU is not
charged to the client, and runs an ordinary sweep against it through the real stack, in the same `RunSession`
`vera run` uses:
provider profiles on disk, `ClientPool` → `LimitedClient` → `OpenAIClient` over one
aiohttp session, the `simulate_conversation` turn loop, and every record written to a
run store. Chatbot, user-agent (and judge, with `--judge`) are three profiles on one
account, as they would be on one provider key. The configuration is `vera run`'s
default: event log, progress display and call bodies (each call's request and response
kept in the run directory, which answer a resume: no response cache then, as in `vera
run`) on, and with `--judge` the judge's asking ahead at the end of the sweep
(`--no-events`, `--no-progress`, `--no-call-bodies`, `--no-ask-ahead` turn each off to
show what it costs; with `--no-call-bodies` the run-local response cache is on, as in
`vera run`, and `--no-cache` turns it off).

    vera bench                                   # 100 conversations × 20 turns, 200 ms
    vera bench --conversations 2000 --turns 20 --latency-ms 2000 --concurrency 2000
    vera bench --rpm 600 --duration-s 120 --json rate.json
    vera bench --suite --json results.json       # every target scenario, one table
    vera bench --suite --scenario memory-flat    # peak RSS at 30,000 against 1,000

Figures cover the measured window: the whole sweep, or with `--duration-s` its first S
seconds (no conversation starts after S; those still running are then cancelled).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Coroutine, Iterator
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import click
import orjson

from vera import __version__
from vera.app._gc import sweep_collector
from vera.errors import UserError
from vera.inputs._config import REPO_ROOT, ConversationConfig, JudgeConfig, RunConfig
from vera.records import Role

FAKE_SERVER = Path(__file__).resolve().parent / "fake_server.py"
KEY_ENV = "VERA_BENCH_KEY"
KEY = "sk-bench-0123456789abcdef"
PROFILES: dict[Role, str] = {"chatbot": "bench-chatbot", "user_agent": "bench-user", "judge": "bench-judge"}


@dataclass(frozen=True)
class BenchOptions:
    conversations: int = 100
    turns: int = 20
    latency_ms: float = 200.0
    concurrency: int = 100
    rpm: float | None = None
    duration_s: float | None = None
    judge: bool = False
    # What `vera run` has on by default is on here too; each can be turned off to
    # show its cost.
    cache: bool = True
    events: bool = True
    progress: bool = True
    ask_ahead: bool = True
    call_bodies: bool = True  # each call's request and response kept in the run (call_bodies.vlog)
    # Sessions per arc (docs/sessions.md): N conversations are then N / S arcs of S
    # sessions each, a model chatbot sent the arc's earlier sessions as history.
    sessions: int = 1
    chatbot_memory: str = "history"  # with sessions: "none" sends the chatbot this session only


# ---------------------------------------------------------------------------------------
# The fake server process
# ---------------------------------------------------------------------------------------


class ServerProcess:
    """`benchmarks/fake_server.py` running in its own process."""

    def __init__(self, latency_ms: float, rpm: float | None, key: str) -> None:
        if not FAKE_SERVER.is_file():
            raise UserError(f"vera bench needs a source checkout: {FAKE_SERVER} not found")
        command = [sys.executable, str(FAKE_SERVER), "--latency-ms", str(latency_ms), "--key", key]
        if rpm:
            command += ["--rpm", str(rpm)]
        # stderr goes to a file: a pipe nobody reads could fill up and stall the server.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in stop())
        self._process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self._stderr, text=True)
        stdout = self._process.stdout
        if stdout is None:  # stdout=PIPE always gives one; the check tells the type checker
            raise RuntimeError("the benchmark server was started without a stdout pipe")
        line = stdout.readline().strip()
        if not line.startswith("http://"):
            self.stop()
            self._stderr.seek(0)
            detail = self._stderr.read().decode(errors="replace").strip()[-400:]
            raise UserError(f"the fake server did not start: {line or detail}")
        self.base_url = line
        self.stats_url = line.removesuffix("/v1") + "/stats"

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()
        self._stderr.close()


@contextlib.contextmanager
def fake_server(latency_ms: float, rpm: float | None) -> Iterator[ServerProcess]:
    server = ServerProcess(latency_ms, rpm, KEY)
    try:
        yield server
    finally:
        server.stop()


def write_profiles(directory: Path, base_url: str, opts: BenchOptions) -> None:
    """One profile per role, all on the fake server's account (same URL, same key), so
    they share one set of limits, as roles on one provider key do."""
    directory.mkdir(parents=True, exist_ok=True)
    limits = f"max_in_flight = {opts.concurrency}\n"
    if opts.rpm:
        limits += f"rpm = {opts.rpm}\n"
    # The timeout only has to catch a stuck call, never a call queued behind the limits.
    timeout = max(60.0, 5 * opts.latency_ms / 1000)
    for name in PROFILES.values():
        (directory / f"{name}.toml").write_text(
            f'protocol = "openai"\n'
            f'base_url = "{base_url}"\n'
            f'model = "{name}"\n'
            f'api_key_env = "{KEY_ENV}"\n'
            f"{limits}"
            f"timeout_s = {timeout}\n"
            f"price_input_per_mtok = 1.0\n"
            f"price_output_per_mtok = 2.0\n"
            f"[params]\n"
            f"temperature = 0.7\n"
            f"max_tokens = 512\n",
            encoding="utf-8",
        )


# ---------------------------------------------------------------------------------------
# One measurement
# ---------------------------------------------------------------------------------------


def current_rss_kb() -> float:
    """Resident memory now (Linux `/proc`; elsewhere the peak so far stands in)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return peak_rss_kb()
    return pages * os.sysconf("SC_PAGE_SIZE") / 1024


def peak_rss_kb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform == "darwin" else float(peak)  # macOS counts bytes


async def _server_stats(session: aiohttp.ClientSession, url: str) -> dict[str, Any]:
    async with session.get(url) as response:
        stats: dict[str, Any] = orjson.loads(await response.read())
        return stats


def _config(opts: BenchOptions, providers: Path) -> RunConfig:
    cfg = RunConfig(
        chatbots=[PROFILES["chatbot"]],
        user_agents=[PROFILES["user_agent"]],
        judges=[PROFILES["judge"]],
        providers=str(providers),
        max_concurrency=opts.concurrency,
        cache=opts.cache,
        # min = max: the fake user never ends early, so every conversation makes T calls.
        conversation=ConversationConfig(
            max_turns=opts.turns,
            min_turns=opts.turns,
            sessions=[f"session-{i}" for i in range(1, opts.sessions + 1)] if opts.sessions > 1 else [],
            chatbot_memory="none" if opts.chatbot_memory == "none" else "history",
        ),
        judge=JudgeConfig(ask_ahead="tail" if opts.ask_ahead else "off"),
        base_dir=str(REPO_ROOT),
    )
    cfg.check()
    return cfg


def _enough_jobs(cfg: RunConfig, conversations: int, n_personas: int) -> None:
    """At least `conversations` jobs: the personas, repeated with seeds 1, 2, ... as
    replicates (the sweep is then cut to exactly `conversations`)."""
    cfg.persona_limit = min(conversations, n_personas)
    cfg.seeds = list(range(1, math.ceil(conversations / n_personas) + 1))


@dataclass
class Window:
    """What happened between the start of the sweep and the end of the measured window."""

    wall_s: float
    cpu_s: float
    account: dict[str, Any]  # the shared account's counters
    server_before: dict[str, Any]
    server_after: dict[str, Any]
    rss_before_kb: float
    peak_rss_kb: float = 0.0
    loop: str = ""  # the event loop's implementation: uvloop or asyncio


async def measure(opts: BenchOptions, server: ServerProcess, workdir: Path) -> dict[str, Any]:
    """Run the sweep against `server` and return the figures of the measured window."""
    # Imported here so `vera --help` stays fast: the pipeline pulls in polars.
    from vera.app import RunFacts
    from vera.app._run import per_chatbot
    from vera.app._session import RunSession
    from vera.engine import Inputs, plan_sweep, run_sweep
    from vera.inputs._profiles import load_profiles
    from vera.store._events import Fanout

    providers = workdir / "providers"
    write_profiles(providers, server.base_url, opts)
    inputs = Inputs.load(_config(opts, providers))
    _enough_jobs(inputs.config, opts.conversations, len(inputs.personas.personas))
    # No grace: when the window closes, conversations still running would only add a tail.
    async with (
        RunSession(workdir / "run", resume="", grace_s=0.0, call_bodies=opts.call_bodies) as session,
        aiohttp.ClientSession() as probe,
    ):
        facts = RunFacts(inputs, session.store.read_conversation)
        pool = await session.open_pool(load_profiles(providers), inputs.config, stand_ins=facts)
        sweep = plan_sweep(inputs, pool, limit=opts.conversations, judge=opts.judge)
        facts.plan(sweep.jobs)
        if opts.events:
            session.open_events()
        session.open_cache(inputs.config)
        progress = session.open_progress(opts.progress)
        if progress is not None:
            progress.plan(per_chatbot(sweep))
        clients = session.clients()
        for role, ref in PROFILES.items():
            clients.client(ref, role)  # built before the clock starts
        (account,) = pool.accounts  # every role on one account

        gc.collect()
        rss_before = current_rss_kb()
        server_before = await _server_stats(probe, server.stats_url)
        cpu_start, started = time.process_time(), time.perf_counter()
        sweep_task = asyncio.create_task(
            session.work(
                run_sweep(
                    sweep,
                    session.store,
                    clients,
                    max_concurrency=opts.concurrency,
                    progress=Fanout(progress, session.events),
                    stop=session.stop,
                )
            )
        )
        await asyncio.wait({sweep_task}, timeout=opts.duration_s)
        window = Window(
            wall_s=time.perf_counter() - started,
            cpu_s=time.process_time() - cpu_start,
            account=account.snapshot(),
            server_before=server_before,
            server_after=await _server_stats(probe, server.stats_url),
            rss_before_kb=rss_before,
            loop=type(asyncio.get_running_loop()).__module__.split(".")[0],
        )
        session.stop.request("duration reached")  # start nothing more; cancel what runs
        result = await sweep_task  # a bug in the sweep surfaces here, not as odd figures
    if result is None:
        raise UserError("vera bench: interrupted before the figures were complete")
    # ru_maxrss is updated lazily by the kernel and can read a little below the current
    # RSS sampled at the start; the peak is at least what was seen then.
    window.peak_rss_kb = max(peak_rss_kb(), window.rss_before_kb)
    return figures(opts, window, result)


def figures(opts: BenchOptions, window: Window, result: Any) -> dict[str, Any]:
    """The figures of one run, as printed and written to `--json`."""
    # A worker runs an arc's sessions one after another: at most one per arc in flight.
    in_flight = min(opts.concurrency, -(-opts.conversations // opts.sessions))
    counters, before, after = window.account, window.server_before, window.server_after
    # Questions asked ahead that no walk reached were paid for but did no work of the
    # sweep's: they are not counted as calls made (`unused_questions` shows them).
    calls = counters["calls"] - counters["errors"] - result.unused_questions
    # At 0 ms the fake server adds no wait, so only an rpm limit bounds the rate: without
    # one there is no ideal to measure the efficiency against.
    ideal = in_flight / (opts.latency_ms / 1000) if opts.latency_ms > 0 else None
    if opts.rpm:
        ideal = opts.rpm / 60 if ideal is None else min(ideal, opts.rpm / 60)
    calls_per_s = calls / window.wall_s
    server_requests = after["requests"] - before["requests"]
    server_cpu_s = after["cpu_s"] - before["cpu_s"]
    return {
        "scenario": asdict(opts),
        "config": {
            # As `vera run`: a new run that keeps call bodies opens no response cache
            # (they answer its resume), so "cache" says what was opened, not what was asked.
            "cache": opts.cache and not opts.call_bodies,
            "events": opts.events,
            "progress": opts.progress,
            "call_bodies": opts.call_bodies,
        }
        | ({"ask_ahead": opts.ask_ahead} if opts.judge else {}),
        "calls": calls,
        "wall_s": round(window.wall_s, 3),
        "calls_per_s": round(calls_per_s, 1),
        "ideal_calls_per_s": None if ideal is None else round(ideal, 1),
        "efficiency": None if ideal is None else round(calls_per_s / ideal, 4),
        "cpu_ms_per_call": round(window.cpu_s * 1000 / calls, 4) if calls else None,
        "peak_rss_mb": round(window.peak_rss_kb / 1024, 1),
        "rss_mb_start": round(window.rss_before_kb / 1024, 1),
        "rss_mb_peak": round(window.peak_rss_kb / 1024, 1),
        "rss_kb_per_conversation": round((window.peak_rss_kb - window.rss_before_kb) / in_flight, 2),
        "http_429": counters["http_429"],
        "rpm_utilisation": round(calls_per_s * 60 / opts.rpm, 4) if opts.rpm else None,
        "failed": result.conversations_failed,
        "failed_calls": counters["errors"],
        "retries": counters["retries"],
        "conversations_finished": result.conversations,
        "judgements_finished": result.judgements,
        "unused_questions": result.unused_questions,
        "client_cpu_s": round(window.cpu_s, 3),
        "server_requests": server_requests,
        "server_http_429": after["http_429"] - before["http_429"],
        "server_max_in_flight": after["max_in_flight"],
        "server_cpu_ms_per_request": (
            round(server_cpu_s * 1000 / server_requests, 4) if server_requests else None
        ),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "loop": window.loop,
        "vera_version": __version__,
    }


def run_bench(opts: BenchOptions) -> dict[str, Any]:
    """One benchmark: start the fake server, run the sweep on uvloop, stop the server."""
    if opts.conversations < 1 or opts.concurrency < 1 or opts.turns < 2:
        raise UserError("--conversations and --concurrency must be at least 1, --turns at least 2")
    if opts.latency_ms < 0:
        raise UserError("--latency-ms must be 0 or more")
    raise_open_files_limit()
    # The profiles read their key from the environment, as real ones do; this process only.
    os.environ[KEY_ENV] = KEY
    with (
        fake_server(opts.latency_ms, opts.rpm) as server,
        tempfile.TemporaryDirectory(prefix="vera-bench-") as tmp,
    ):
        return _run_on_uvloop(measure(opts, server, Path(tmp)))


T = TypeVar("T")


def _run_on_uvloop(coro: Coroutine[Any, Any, T]) -> T:
    # The process is ours here, so the sweep's collector setting is applied here (see
    # vera.app._gc), never from library code.
    with sweep_collector():
        try:
            import uvloop
        except ImportError:  # not on Windows
            return asyncio.run(coro)
        return uvloop.run(coro)


def raise_open_files_limit() -> None:
    """Lift the soft limit on open files to the hard one: every connection is a file."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else 1 << 20  # the kernel's usual nr_open
    if soft == resource.RLIM_INFINITY or soft >= target:
        return
    with contextlib.suppress(ValueError, OSError):  # not allowed here: run with what we have
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


# ---------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------

_LINES = (
    ("calls", "calls", "{:,}"),
    ("wall_s", "wall time (s)", "{:.2f}"),
    ("calls_per_s", "calls/s", "{:,.1f}"),
    ("ideal_calls_per_s", "ideal calls/s", "{:,.1f}"),
    ("efficiency", "efficiency", "{:.1%}"),
    ("cpu_ms_per_call", "client CPU per call (ms)", "{:.3f}"),
    ("server_cpu_ms_per_request", "server CPU per request (ms)", "{:.3f}"),
    ("rss_mb_start", "client RSS at the start (MB)", "{:,.1f}"),
    ("peak_rss_mb", "client peak RSS (MB)", "{:,.1f}"),
    ("rss_kb_per_conversation", "RSS per in-flight conversation (KB)", "{:.1f}"),
    ("http_429", "HTTP 429 (client)", "{:,}"),
    ("rpm_utilisation", "rate-limit utilisation", "{:.1%}"),
    ("failed", "failed conversations", "{:,}"),
)


_PARTS = ("cache", "events", "progress", "call_bodies", "ask_ahead")


def render_figures(fig: dict[str, Any]) -> str:
    s = fig["scenario"]
    head = (
        f"{s['conversations']:,} conversations × {s['turns']} turns, {s['latency_ms']:g} ms latency, "
        f"concurrency {s['concurrency']:,}"
        + (f", {s['rpm']:g} rpm" if s["rpm"] else "")
        + (f", {s['duration_s']:g} s window" if s["duration_s"] else "")
        + (", judged" if s["judge"] else "")
        + (
            f", {s['sessions']} sessions per arc (chatbot memory: {s.get('chatbot_memory', 'history')})"
            if s.get("sessions", 1) > 1
            else ""
        )
    )
    config = fig.get("config") or {}
    # `config` names only what applied (asking ahead only with --judge).
    on = [name for name in _PARTS if config.get(name)]
    off = [name for name in _PARTS if name in config and not config[name]]
    head += f"; {', '.join(on) or 'nothing'} on" + (f", {', '.join(off)} off" if off else "")
    lines = [head]
    for key, label, fmt in _LINES:
        if fig.get(key) is not None:
            lines.append(f"  {label:<38}{fmt.format(fig[key])}")
    if s["judge"]:
        lines.append(f"  {'judgements':<38}{fig['judgements_finished']:,}")
        lines.append(f"  {'questions asked ahead, unused (paid)':<38}{fig.get('unused_questions', 0):,}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# The sessions sweep: sessions per arc × turns, beside one session
# ---------------------------------------------------------------------------------------


def run_sessions_sweep(opts: BenchOptions, sessions: list[int], turns: list[int]) -> list[dict[str, Any]]:
    """One benchmark per (turns, sessions per arc), one session first for each number
    of turns. Every cell runs `concurrency` arcs, all in flight at once (so S × C
    conversations): the work in flight is the same in every cell, and a cell's CPU per
    call differs from one session's only by what sessions cost. (With a fixed number
    of conversations, longer arcs leave a longer tail with fewer in flight, and the
    per-second work of the run is then spread over fewer calls per second.)"""
    counts = [1, *(n for n in dict.fromkeys(sessions) if n != 1)]
    return [
        run_bench(replace(opts, sessions=n, turns=t, conversations=opts.concurrency * n))
        for t in turns
        for n in counts
    ]


def render_sessions_table(figs: list[dict[str, Any]]) -> str:
    """The sweep as a table: CPU per call of each cell beside one session's at the same
    number of turns."""
    single = {f["scenario"]["turns"]: f["cpu_ms_per_call"] for f in figs if f["scenario"]["sessions"] == 1}
    rows = [
        "| sessions per arc | turns | arcs | calls | calls/s | efficiency | CPU ms/call | vs 1 session |",
        "|" + " --- |" * 8,
    ]
    for f in figs:
        s = f["scenario"]
        base = single.get(s["turns"])
        ratio = f["cpu_ms_per_call"] / base if base and f["cpu_ms_per_call"] else None
        rows.append(
            f"| {s['sessions']} | {s['turns']} | {-(-s['conversations'] // s['sessions']):,} | {f['calls']:,} "
            f"| {f['calls_per_s']:,.1f} | {_cell(f['efficiency'], '{:.1%}')} "
            f"| {_cell(f['cpu_ms_per_call'], '{:.3f}')} | {_cell(ratio, '{:.2f}×')} |"
        )
    return "\n".join(rows)


def _numbers(value: str, flag: str, low: int) -> list[int]:
    try:
        numbers = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise UserError(f"{flag} {value!r}: give whole numbers separated by commas, e.g. 2,4") from None
    if not numbers or min(numbers) < low:
        raise UserError(f"{flag} {value!r}: give whole numbers of at least {low}, separated by commas")
    return numbers


# ---------------------------------------------------------------------------------------
# The suite: every target scenario, each in a fresh process
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    name: str
    what: str
    args: tuple[str, ...]
    targets: tuple[tuple[str, str, float], ...]  # (figure, "<=" or ">=", bound)
    # Run first, for a scenario that compares two sizes: its peak RSS is the baseline
    # of the figure `rss_growth` (peak RSS of `args` / peak RSS of `baseline` − 1).
    baseline: tuple[str, ...] | None = None

    def command(self) -> str:
        main = "vera bench " + " ".join(self.args)
        return main if self.baseline is None else f"vera bench {' '.join(self.baseline)}; {main}"

    def verdicts(self, fig: dict[str, Any]) -> list[tuple[str, bool]]:
        out = []
        for key, op, bound in self.targets:
            value = fig.get(key)
            met = value is not None and (value >= bound if op == ">=" else value <= bound)
            out.append((f"{key} {op} {bound:g}", met))
        return out


SUITE = (
    Scenario(
        "throughput",
        "100 conversations × 20 turns at 200 ms: calls/s against the ideal 500",
        ("--conversations", "100", "--turns", "20", "--latency-ms", "200", "--concurrency", "100"),
        (("calls_per_s", ">=", 450), ("cpu_ms_per_call", "<=", 0.30)),
    ),
    Scenario(
        "judge",
        "the same, each conversation judged as it ends: efficiency with the judge's calls",
        ("--conversations", "100", "--turns", "20", "--latency-ms", "200", "--concurrency", "100", "--judge"),
        (("efficiency", ">=", 0.85),),
    ),
    Scenario(
        "concurrency",
        "2,000 concurrent conversations at 2 s: efficiency against the ideal 1,000 calls/s",
        ("--conversations", "2000", "--turns", "20", "--latency-ms", "2000", "--concurrency", "2000"),
        (("efficiency", ">=", 0.90), ("cpu_ms_per_call", "<=", 0.5)),
    ),
    Scenario(
        "rate-limit",
        "600 requests/min on client and server, 2 minutes: utilisation and 429s",
        (
            "--conversations", "1000", "--turns", "20", "--latency-ms", "200",
            "--concurrency", "50", "--rpm", "600", "--duration-s", "120",
        ),
        (("rpm_utilisation", ">=", 0.95), ("http_429", "<=", 0), ("server_http_429", "<=", 0)),
    ),
    Scenario(
        "memory",
        "10,000 concurrent conversations at 10 s: RSS per in-flight conversation",
        ("--conversations", "10000", "--turns", "6", "--latency-ms", "10000", "--concurrency", "10000"),
        (("rss_kb_per_conversation", "<=", 50), ("cpu_ms_per_call", "<=", 0.5)),
    ),
    Scenario(
        "memory-flat",
        "30,000 conversations against 1,000 at concurrency 200: peak RSS must not grow with the sweep",
        ("--conversations", "30000", "--turns", "10", "--latency-ms", "20", "--concurrency", "200"),
        (("rss_growth", "<=", 0.10),),
        baseline=("--conversations", "1000", "--turns", "10", "--latency-ms", "20", "--concurrency", "200"),
    ),
)  # fmt: skip


def run_suite(json_path: str | None, only: tuple[str, ...] = ()) -> bool:
    """Run every scenario (or those named in `only`) in its own `vera bench` process
    (peak RSS is per process), print the results table, and return whether every target
    was met."""
    unknown = sorted(set(only) - {s.name for s in SUITE})
    if unknown:
        names = ", ".join(s.name for s in SUITE)
        raise UserError(f"--scenario: no scenario {', '.join(unknown)} (the suite has: {names})")
    results: list[tuple[Scenario, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory(prefix="vera-bench-suite-") as tmp:
        for scenario in SUITE:
            if only and scenario.name not in only:
                continue
            click.echo(f"\n== {scenario.name}: {scenario.what}\n$ {scenario.command()}", err=True)
            fig = _scenario_run(scenario.name, scenario.args, Path(tmp))
            if scenario.baseline is not None:
                base = _scenario_run(f"{scenario.name}-baseline", scenario.baseline, Path(tmp))
                fig["baseline"] = {k: base[k] for k in ("scenario", "rss_mb_start", "rss_mb_peak", "wall_s")}
                fig["rss_growth"] = round(fig["rss_mb_peak"] / base["rss_mb_peak"] - 1, 4)
            results.append((scenario, fig))
    click.echo("\n" + render_table(results))
    if json_path:
        payload = {
            "scenarios": [
                {"name": s.name, "command": s.command(), "verdicts": dict(s.verdicts(f)), **f}
                for s, f in results
            ]
        }
        write_json(Path(json_path), payload)
    return all(met for s, f in results for _, met in s.verdicts(f))


def _scenario_run(name: str, args: tuple[str, ...], folder: Path) -> dict[str, Any]:
    """One `vera bench` in a fresh process; its figures."""
    out = folder / f"{name}.json"
    command = [sys.executable, "-m", "vera", "bench", *args, "--json", str(out)]
    if (code := subprocess.run(command).returncode) != 0:
        raise UserError(f"benchmark scenario {name!r} failed (exit code {code})")
    result: dict[str, Any] = orjson.loads(out.read_bytes())
    return result


def write_json(path: Path, data: Any) -> None:
    """Write figures whole (by rename): a reader or a crash never sees half a file."""
    from vera.store._writer import atomic_write

    atomic_write(path, orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n", what="the benchmark figures")


def _cell(value: Any, fmt: str) -> str:
    return "–" if value is None else fmt.format(value)


def render_table(results: list[tuple[Scenario, dict[str, Any]]]) -> str:
    """The results as a Markdown table, one row per scenario, targets marked."""
    header = (
        "| scenario | calls | wall s | calls/s | ideal | efficiency | client CPU ms/call "
        "| server CPU ms/req | peak RSS MB | RSS KB/conv | RSS growth | 429s | rpm util. | failed | targets |"
    )
    rows = [header, "|" + " --- |" * 15]
    for s, f in results:
        targets = ", ".join(f"{name} {'✓' if met else '✗'}" for name, met in s.verdicts(f))
        rows.append(
            f"| {s.name} | {f['calls']:,} | {f['wall_s']:.1f} | {f['calls_per_s']:,.1f} "
            f"| {_cell(f['ideal_calls_per_s'], '{:,.0f}')} | {_cell(f['efficiency'], '{:.1%}')} "
            f"| {_cell(f['cpu_ms_per_call'], '{:.3f}')} | {_cell(f['server_cpu_ms_per_request'], '{:.3f}')} "
            f"| {f['peak_rss_mb']:,.0f} | {f['rss_kb_per_conversation']:.1f} "
            f"| {_cell(f.get('rss_growth'), '{:+.1%}')} | {f['http_429']} "
            f"| {_cell(f['rpm_utilisation'], '{:.1%}')} | {f['failed']} | {targets} |"
        )
    return "\n".join(rows)


# ---------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--conversations", type=click.IntRange(min=1), default=100, show_default=True, help="Conversations (N)."
)
@click.option(
    "--turns", type=click.IntRange(min=2), default=20, show_default=True, help="Turns per conversation (T)."
)
@click.option(
    "--latency-ms",
    type=click.FloatRange(min=0),
    default=200.0,
    show_default=True,
    help="Fake server latency (L).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Conversations in flight (C).",
)
@click.option(
    "--rpm",
    type=click.FloatRange(min=0, min_open=True),
    help="Requests/min limit on both the client profile and the server (R); more than 0.",
)
@click.option(
    "--duration-s",
    type=click.FloatRange(min=0, min_open=True),
    help="Measure the first S seconds; start no conversation after.",
)
@click.option("--judge", is_flag=True, help="Also judge every conversation (the fake answers the rubric).")
@click.option(
    "--cache/--no-cache",
    default=True,
    show_default=True,
    help="The response cache where `vera run` keeps one (with --no-call-bodies).",
)
@click.option(
    "--events/--no-events", default=True, show_default=True, help="The event log, on as in `vera run`."
)
@click.option(
    "--progress/--no-progress",
    default=True,
    show_default=True,
    help="The progress display, on as in `vera run` (a live table on a terminal, else a line every 10 s).",
)
@click.option(
    "--call-bodies/--no-call-bodies",
    default=True,
    show_default=True,
    help="Each call's request and response kept in the run directory, on as in `vera run`.",
)
@click.option(
    "--ask-ahead/--no-ask-ahead",
    default=True,
    show_default=True,
    help="With --judge: the judge's asking ahead at the end of the sweep, on as in `vera run`.",
)
@click.option(
    "--sessions",
    "sessions_list",
    help="Sweep sessions per arc, e.g. 2,4: each beside one session, with --concurrency arcs all in "
    "flight in every cell (--conversations is not used); prints CPU per call side by side (docs/sessions.md).",
)
@click.option(
    "--chatbot-memory",
    type=click.Choice(["history", "none"]),
    default="history",
    show_default=True,
    help="With --sessions: send the chatbot the arc's earlier sessions (history) or this session only.",
)
@click.option(
    "--sweep-turns",
    help="With --sessions: the turns per session to sweep, e.g. 10,20 (default: --turns).",
)
@click.option(
    "--batch",
    is_flag=True,
    help="With --judge: judge the same conversations live and in batch mode on the loopback Batch API "
    "and print the judge's money per judged conversation for each, the ratio and the wall times.",
)
@click.option(
    "--batch-poll-s",
    type=click.FloatRange(min=0, min_open=True),
    default=0.02,
    show_default=True,
    help="With --batch: seconds between polls of a pending batch.",
)
@click.option(
    "--reference-data",
    type=click.Path(exists=True, file_okay=False),
    help="With --batch: the reference tool's v1.1 data folder, to judge the same transcripts with its "
    "rubric and judge prompts side by side (default: $VERA_MH_DATA or "
    "../shared/reference/vera-mh-v1.1/data, when present).",
)
@click.option(
    "--money",
    is_flag=True,
    help="A whole run's money per judged conversation by role, vera's cheapest settings beside the "
    "reference tool's request pattern, on OpenAI and Anthropic fakes with prompt caching "
    "(benchmarks/bench_money.py).",
)
@click.option(
    "--floor",
    is_flag=True,
    help="vera's CPU per call beside a bare aiohttp client's sending the same requests, in alternating "
    "rounds on one fake server, and the ratio (benchmarks/bench_cpu.py).",
)
@click.option(
    "--rounds", type=click.IntRange(min=1), default=5, show_default=True, help="With --floor: rounds of each."
)
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Write the figures to this file.")
@click.option("--suite", is_flag=True, help="Run every target scenario and print the results table.")
@click.option("--scenario", "only", multiple=True, help="With --suite: only this scenario (repeatable).")
def bench(
    conversations: int,
    turns: int,
    latency_ms: float,
    concurrency: int,
    rpm: float | None,
    duration_s: float | None,
    judge: bool,
    cache: bool,
    events: bool,
    progress: bool,
    call_bodies: bool,
    ask_ahead: bool,
    sessions_list: str | None,
    chatbot_memory: str,
    sweep_turns: str | None,
    batch: bool,
    batch_poll_s: float,
    reference_data: str | None,
    money: bool,
    floor: bool,
    rounds: int,
    json_path: str | None,
    suite: bool,
    only: tuple[str, ...],
) -> None:
    """Measure throughput, CPU and memory against a local fake server (a separate process).

    Ideal calls/s = min(concurrency, conversations) / latency, capped by --rpm / 60.
    Without options: 100 conversations × 20 turns at 200 ms latency (about 5 s)."""
    from vera.store import check_output

    check_output(json_path, "--json")  # never over a run's records (a bench run is one)
    if suite:
        if not run_suite(json_path, only):
            sys.exit(1)
        return
    if money:
        from benchmarks.bench_money import render_money_bench, run_money_bench

        # 30 turns (the published protocol's) and 20 personas unless given.
        given = click.get_current_context().get_parameter_source
        fig = run_money_bench(
            turns=turns if given("turns") != click.core.ParameterSource.DEFAULT else 30,
            personas=min(conversations, 100)
            if given("conversations") != click.core.ParameterSource.DEFAULT
            else 20,
        )
        click.echo(render_money_bench(fig))
        if json_path:
            write_json(Path(json_path), fig)
        return
    if batch:
        if not judge:
            raise UserError("vera bench --batch measures the judge: give --judge too")
        from benchmarks.bench_batch import (
            REFERENCE_FILES,
            default_reference_data,
            render_batch_bench,
            run_batch_bench,
        )

        data = Path(reference_data) if reference_data else default_reference_data()
        if reference_data and (
            missing := [f for f in REFERENCE_FILES if not (Path(reference_data) / f).is_file()]
        ):
            raise UserError(
                f"--reference-data {reference_data}: no {', '.join(missing)} there "
                "(give the reference tool's v1.1 data/ folder)"
            )
        fig = run_batch_bench(conversations, concurrency, batch_poll_s, data)
        click.echo(render_batch_bench(fig))
        if json_path:
            write_json(Path(json_path), fig)
        return
    opts = BenchOptions(
        conversations,
        turns,
        latency_ms,
        concurrency,
        rpm,
        duration_s,
        judge,
        cache,
        events,
        progress,
        ask_ahead,
        call_bodies,
    )
    if floor:
        from benchmarks.bench_cpu import render_cpu_comparison, run_cpu_comparison

        fig = run_cpu_comparison(opts, rounds)
        click.echo(render_cpu_comparison(fig))
        if json_path:
            write_json(Path(json_path), fig)
        return
    if sessions_list is not None:
        counts = _numbers(sessions_list, "--sessions", 1)
        turns_list = _numbers(sweep_turns, "--sweep-turns", 2) if sweep_turns else [turns]
        figs = run_sessions_sweep(replace(opts, chatbot_memory=chatbot_memory), counts, turns_list)
        click.echo(render_sessions_table(figs))
        if json_path:
            write_json(Path(json_path), figs)
        return
    if sweep_turns:
        raise UserError("--sweep-turns goes with --sessions")
    fig = run_bench(opts)
    click.echo(render_figures(fig))
    if json_path:
        write_json(Path(json_path), fig)
