"""Writing a run config for a test: the built-in personas, rubric and prompt sets, the
test's own provider profiles, and whatever settings the test is about.

    write_run_config(tmp / "run.toml", providers=providers, runs_dir=tmp / "runs",
                     chatbots=["bot"], max_concurrency=8, conversation={"max_turns": 4})

Keyword arguments become top-level keys; a dict becomes a [table].
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

BUILT_IN_INPUTS = {
    "personas": ROOT / "personas" / "vera-personas.tsv",
    "rubric": ROOT / "rubrics" / "vera-si.tsv",
    "user_prompts": ROOT / "personas" / "prompts",
    "judge_prompts": ROOT / "rubrics" / "prompts",
}


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str | Path):
        return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def write_run_config(
    path: Path,
    *,
    providers: Path,
    runs_dir: Path,
    chatbots: list[str],
    user_agents: tuple[str, ...] | list[str] = ("offline/scripted-user",),
    judges: tuple[str, ...] | list[str] = ("offline/lexical-judge",),
    **settings: Any,
) -> Path:
    top: dict[str, Any] = {
        "chatbots": chatbots,
        "user_agents": list(user_agents),
        "judges": list(judges),
        **BUILT_IN_INPUTS,
        "providers": providers,
        "runs_dir": runs_dir,
    }
    tables = {k: v for k, v in settings.items() if isinstance(v, dict)}
    top.update({k: v for k, v in settings.items() if not isinstance(v, dict)})
    lines = [f"{k} = {toml_value(v)}" for k, v in top.items()]
    for name, table in tables.items():
        lines.append(f"[{name}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in table.items()]
    path.write_text("\n".join(lines) + "\n")
    return path
