"""The reference tool's JSON run config (`generation` / `judging` / `scoring` sections),
translated into vera's run config keys.

The reference tool (VERA-MH 2.0's `vera.py`) takes a run as a JSON document with a
top-level `target` and one section per stage. vera reads its own keys in JSON too; a
document whose top level has any of the reference's section names is this layout, and
is translated here before vera's own checks run, so `--config`, `--config -` and
`$VERA_RUN_CONFIG` accept the reference's files as they are.

Each field either maps to a vera key, or is a warning naming it (vera has no
equivalent, or does it another way): nothing is dropped without a word. A value of the
wrong kind is a ConfigError naming the file and the field (one line, exit 1).
"""

from __future__ import annotations

from typing import Any

from vera.errors import ConfigError

# The reference's top-level keys; any one of the three sections marks the layout.
SECTIONS = ("generation", "judging", "scoring")
TOP_LEVEL = ("target", "invocation", *SECTIONS)

# How the reference picks a client from a model name (its llm_clients factory), as
# vera profile names, checked in this order: the Azure client is chosen by an "azure-"
# prefix it strips before calling (so "azure-gpt-…" must not fall to OpenAI), then a
# substring of the name. docs/targets.md keeps this table.
_AZURE_PREFIX = "azure-"
_BY_SUBSTRING: tuple[tuple[tuple[str, ...], str], ...] = (
    (("claude",), "anthropic"),
    (("gpt", "openai"), "openai"),
    (("gemini", "google"), "gemini"),
    (("llama", "ollama"), "ollama"),
)
# OpenAI's o-series names carry no "gpt" (o1, o3-mini, o4-mini): the reference's
# OpenAI client serves them; matched as a prefix so no other name is caught.
_OPENAI_PREFIXES = ("o1", "o3", "o4")


def data_path(value: str) -> str:
    """A path of the reference's config as vera reads it. The reference resolves them
    against its checkout, where its files are under `data/`: such a path is read from
    the reference's data folder (`reference:`, i.e. `$VERA_MH_DATA` or
    `--reference-data`); any other relative path against the config's folder."""
    rest = value.removeprefix("./")
    return f"reference:{rest[len('data/') :]}" if rest.startswith("data/") else value


def is_reference_layout(doc: object) -> bool:
    """Whether a decoded JSON config is the reference tool's layout."""
    return isinstance(doc, dict) and any(k in doc for k in SECTIONS)


def provider_for(name: str) -> str | None:
    """The vera model reference (`profile/model`) for a reference model name, or None
    when the reference's own rule would not pick a client for it either. A name that is
    already a vera reference (`openai/gpt-4o`, `offline/best-practice`) is kept."""
    lower = name.lower()
    if lower.startswith(_AZURE_PREFIX):
        return f"azure-openai/{name[len(_AZURE_PREFIX) :]}"
    if "/" in name:
        return name  # vera's own `profile/model` form
    for needles, profile in _BY_SUBSTRING:
        if any(n in lower for n in needles):
            return f"{profile}/{name}"
    if lower.startswith(_OPENAI_PREFIXES):
        return f"openai/{name}"
    return None


class _Reader:
    """Walks the document, collecting vera's keys and the warnings, and failing on the
    first value of the wrong kind with one line naming the file and field."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.out: dict[str, Any] = {}
        self.warnings: list[str] = []

    def fail(self, field: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.where}: {field}: {problem} (the reference tool's config layout)")

    def warn(self, field: str, why: str) -> None:
        self.warnings.append(f"{field}: {why}")

    def section(self, doc: dict[str, Any], name: str) -> dict[str, Any]:
        value = doc.get(name)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(name, "must be an object")
        return value

    def unknown(self, section: dict[str, Any], prefix: str, known: tuple[str, ...]) -> None:
        for key in section:
            if key not in known:
                self.warn(f"{prefix}{key}", "not a field of the reference's config; ignored")

    def integer(self, value: object, field: str, *, least: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(field, f"must be an integer, not {value!r}")
        if value < least:
            raise self.fail(field, f"must be at least {least}, not {value}")
        return value

    def boolean(self, value: object, field: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(field, f"must be true or false, not {value!r}")
        return value

    def text(self, value: object, field: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(field, f"must be a non-empty string, not {value!r}")
        return value

    def model(self, value: object, field: str) -> tuple[str, int, dict[str, Any]]:
        """A reference model entry `{"name", "repeats", ...params}`: vera's model
        reference, the repeats, and the provider parameters."""
        if not isinstance(value, dict):
            raise self.fail(field, 'must be an object {"name": …, "repeats": …}')
        entry = dict(value)
        if "name" not in entry or "repeats" not in entry:
            missing = "name" if "name" not in entry else "repeats"
            raise self.fail(field, f"is missing {missing!r}")
        name = self.text(entry.pop("name"), f"{field}.name")
        repeats = self.integer(entry.pop("repeats"), f"{field}.repeats", least=1)
        ref = provider_for(name)
        if ref is None:
            raise self.fail(
                f"{field}.name",
                f"{name!r}: no provider for this name (the reference picks one from "
                "claude / gpt / o1 / o3 / o4 / openai / gemini / google / llama / ollama / "
                "an azure- prefix); write it as vera's PROFILE/MODEL",
            )
        return ref, repeats, entry

    def models(self, value: object, field: str) -> list[tuple[str, int, dict[str, Any]]]:
        if not isinstance(value, list) or not value:
            raise self.fail(field, "must be a non-empty list of models")
        return [self.model(v, f"{field}[{i}]") for i, v in enumerate(value)]

    def same(self, values: list[Any], field: str, what: str) -> Any:
        """The one value every model of a list shares: vera sets it once per role."""
        if any(v != values[0] for v in values[1:]):
            raise self.fail(field, f"the models differ in {what}; vera sets it once for all of them")
        return values[0]


_GENERATION = (
    "chatbot",
    "user",
    "personas",
    "turns",
    "output",
    "max_concurrent",
    "max_total_words",
    "persona_speaks_first",
    "sessions",
    "persona_context_template",
)
_JUDGING = ("models", "conversations", "rubrics", "output", "max_concurrent", "per_judge")
_SCORING = ("results", "output", "personas", "skip_risk_analysis")
_INVOCATION = ("debug", "sample", "into")


def translate(doc: dict[str, Any], where: str) -> tuple[dict[str, Any], list[str]]:
    """vera's run config keys for a reference-layout document, and the warnings for
    what has no equivalent ("FIELD: why"). `where` names the file in errors."""
    r = _Reader(where)
    out = r.out
    conversation: dict[str, Any] = {}
    for key in doc:
        if key not in TOP_LEVEL:
            r.warn(key, "not a field of the reference's config; ignored")
    if (target := doc.get("target")) is not None:
        name = r.text(target, "target")
        # A bare name is one of the reference checkout's targets (data/NAME/manifest.json);
        # a path is a manifest or its folder, as vera reads either.
        looks_like_path = "/" in name or name.endswith(".json")
        out["target"] = data_path(name) if looks_like_path else f"reference:{name}"

    gen = r.section(doc, "generation")
    r.unknown(gen, "generation.", _GENERATION)
    if "chatbot" in gen:
        ref, repeats, params = r.model(gen["chatbot"], "generation.chatbot")
        if repeats != 1:
            raise r.fail("generation.chatbot.repeats", f"must be 1, not {repeats}")
        out["chatbots"] = [ref]
        if params:
            out["chatbot"] = {"params": params}
    if "user" in gen:
        users = r.models(gen["user"], "generation.user")
        out["user_agents"] = [u[0] for u in users]
        # Each repeat runs the whole persona set again: vera's seeds, shared by every
        # user-agent of the run.
        repeats = r.same([u[1] for u in users], "generation.user", "repeats")
        out["seeds"] = list(range(1, repeats + 1))
        params = r.same([u[2] for u in users], "generation.user", "provider parameters")
        if params:
            out["user_agent"] = {"params": params}
    if (personas := gen.get("personas")) is not None:
        files = [personas] if isinstance(personas, str) else personas
        if not isinstance(files, list) or not files:
            raise r.fail("generation.personas", "must be a file or a non-empty list of files")
        out["personas"] = [data_path(r.text(f, f"generation.personas[{i}]")) for i, f in enumerate(files)]
    if (turns := gen.get("turns")) is not None:
        # A conversation of one message has no chatbot reply to judge: vera's minimum is 2.
        conversation["max_turns"] = r.integer(turns, "generation.turns", least=2)
        # The reference ends a conversation on the persona's end signal at any turn:
        # vera's min_turns (the end marker ignored before it; 10 unless set) is 0.
        conversation["min_turns"] = 0
    if (output := gen.get("output")) is not None:
        out["runs_dir"] = r.text(output, "generation.output")
    # 0 is the reference's "no limit", as is null: vera's default then.
    if (mc := gen.get("max_concurrent")) is not None and r.integer(mc, "generation.max_concurrent", least=0):
        out["max_concurrency"] = mc
    if (words := gen.get("max_total_words")) is not None:
        conversation["max_total_words"] = r.integer(words, "generation.max_total_words", least=1)
    if (first := gen.get("persona_speaks_first")) is not None:
        persona_first = r.boolean(first, "generation.persona_speaks_first")
        conversation["first_speaker"] = "user" if persona_first else "chatbot"
    if (sessions := gen.get("sessions")) is not None:
        if not isinstance(sessions, list) or not sessions:
            raise r.fail("generation.sessions", "must be null or a non-empty list of session types")
        conversation["sessions"] = [r.text(s, f"generation.sessions[{i}]") for i, s in enumerate(sessions)]
    if gen.get("persona_context_template") is not None:
        r.warn(
            "generation.persona_context_template",
            "not read: vera's simulated-user prompt comes from the target (`target`) or "
            "`user_prompts`; ignored",
        )

    judging = r.section(doc, "judging")
    r.unknown(judging, "judging.", _JUDGING)
    judge: dict[str, Any] = {}
    if "models" in judging:
        models = r.models(judging["models"], "judging.models")
        out["judges"] = [m[0] for m in models]
        judge["instances"] = r.same([m[1] for m in models], "judging.models", "repeats")
        if params := r.same([m[2] for m in models], "judging.models", "provider parameters"):
            judge["params"] = params
    if (mc := judging.get("max_concurrent")) is not None and r.integer(mc, "judging.max_concurrent", least=0):
        judge["max_concurrent"] = mc
    if (per := judging.get("per_judge")) is not None and r.boolean(per, "judging.per_judge"):
        judge["per_judge"] = True
    if (rubrics := judging.get("rubrics")) is not None:
        if not isinstance(rubrics, list) or len(rubrics) != 1 or not isinstance(rubrics[0], dict):
            raise r.fail("judging.rubrics", "must be a list of one rubric entry")
        entry = rubrics[0]
        out["rubric"] = data_path(r.text(entry.get("rubric_file"), "judging.rubrics[0].rubric_file"))
        for key in entry:
            if key != "rubric_file":
                r.warn(
                    f"judging.rubrics[0].{key}",
                    "not read: vera's judge prompts come from the target or `judge_prompts`; ignored",
                )
    if judging.get("conversations") is not None:
        r.warn(
            "judging.conversations",
            "not read: this config simulates and judges in one run; to judge existing "
            "transcripts use `vera judge --transcripts DIR`",
        )
    if judging.get("output") is not None:
        r.warn("judging.output", "not read: the judgements are kept in the run's own directory")
    if judge:
        out["judge"] = judge

    scoring = r.section(doc, "scoring")
    r.unknown(scoring, "scoring.", _SCORING)
    if scoring.get("personas") is not None:
        r.text(scoring["personas"], "scoring.personas")
        r.warn(
            "scoring.personas",
            "not read: the card breaks scores down by the run's own personas (risk level for SI)",
        )
    if (skip := scoring.get("skip_risk_analysis")) is not None and r.boolean(
        skip, "scoring.skip_risk_analysis"
    ):
        r.warn("scoring.skip_risk_analysis", "no equivalent: the card always shows the breakdown")
    for key in ("results", "output"):
        if scoring.get(key) is not None:
            r.warn(f"scoring.{key}", "not read: the scores are the run's card.json in its directory")

    invocation = r.section(doc, "invocation")
    r.unknown(invocation, "invocation.", _INVOCATION)
    if (sample := invocation.get("sample")) is not None:
        # The reference loads the first N personas of each file; vera the first N of the set.
        out["persona_limit"] = r.integer(sample, "invocation.sample", least=1)
    if invocation.get("debug") is not None and r.boolean(invocation["debug"], "invocation.debug"):
        r.warn("invocation.debug", "no equivalent: every call is in the run's events.jsonl")
    if invocation.get("into") is not None:
        r.warn("invocation.into", "not read: continue a run with `vera run --resume DIR`")
    if conversation:
        out["conversation"] = conversation
    return out, r.warnings
