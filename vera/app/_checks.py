"""The pre-flight: every check a run makes before it opens anything, in one function.

`vera run` and `vera simulate` call `preflight` on the config they will run (after the
options are applied) and stop on its first error; `vera validate config` calls the same
function on the config file and lists every finding. So a config that validates runs,
and one the run refuses does not validate (tests/test_input_checks.py holds the two
together over every config the repository and the test suite use).

A run uses the config, every provider profile in its providers folder, the models its
chatbots, user-agents and judges name (each in a role it can play, at the service tier
and judge mode the config asks for, within its budget), the rubric, the persona set,
both prompt folders and, for a config that reads the reference tool's files, their
pinned hashes. Each is checked the way the run loads it, every problem reported as one
line with its file and, where it can be found, its line. A key variable that is not set
is an error for the run and a warning for `vera validate config`, which can check a
config on a machine without the keys.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import msgspec

from vera.app._stand_ins import dry_run_swap
from vera.clients.pool import budget_problem, tier_problem
from vera.engine import Shard, batch_refusal, flex_refusal, plan_size, role_spec
from vera.errors import ConfigError, DataError, UserError
from vera.inputs import (
    OFFLINE,
    Profile,
    RunConfig,
    check_annotations,
    check_personas,
    check_templates,
    default_grouping,
    find_target,
    keeps_history,
    literal_url_credentials,
    literal_url_password,
    load_config,
    load_judge_prompts,
    load_profile,
    load_target,
    load_user_prompts,
    missing_key,
    persona_header,
    present_annotations,
    reads_reference,
    resolve_ref,
    verify_pins,
)
from vera.records import ConfigSnapshot, ModelSpec, Role
from vera.rubric import load_rubric, validate_rubric
from vera.standins import OFFLINE_MODELS, rubric_refusal, stand_in_role_problem

# An unset key variable: an error where the run needs the key, a warning where a config
# is only checked.
Keys = Literal["require", "warn"]


class Finding(msgspec.Struct, frozen=True):
    where: str  # file or file:line
    message: str
    severity: str = "error"  # or "warning"

    def render(self) -> str:
        return f"{self.where}: {self.severity}: {self.message}"


class ConfigReport(msgspec.Struct):
    findings: list[Finding]
    summary: str = ""
    reference: str = ""  # what the reference data folder holds, for configs that read it
    # The resolved run (`vera validate config --print`): the config as a run's manifest
    # stores it, and every model as the run would send it (profile, model, parameters).
    config: ConfigSnapshot | None = None
    models: list[ModelSpec] = msgspec.field(default_factory=list)

    def resolved(self) -> dict[str, Any]:
        """What `--print` shows: the config and each role's models, no key anywhere
        (profiles name their key variable, never the key)."""
        config = msgspec.to_builtins(self.config) if self.config is not None else {}
        roles: dict[str, list[Any]] = {}
        for role in ("chatbots", "user_agents", "judges"):
            refs = config.get(role, [])
            roles[role] = [msgspec.to_builtins(m) for m in self.models if m.ref in refs]
        return {"config": config, "models": roles}

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    def refuse(self, hint: str = "") -> None:
        """Raise the first error as the run reports it: one line, naming how many more
        there are (and `hint`, where to see them all)."""
        if not self.errors:
            return
        first = self.errors[0]
        more = f" (and {len(self.errors) - 1} more{hint})" if len(self.errors) > 1 else ""
        raise ConfigError(f"{first.where + ': ' if first.where else ''}{first.message}{more}")


def check_config(file: str | Path, *, reference_data: str | None = None) -> ConfigReport:
    """`vera validate config`: the config loaded as `vera run --config FILE` loads it,
    then the run's `preflight`, with an unset key a warning. `reference_data` is the
    reference tool's data folder (`--reference-data`), for configs that read it."""
    # A reference-layout config's fields vera does not use: warnings of the report.
    unused: list[Finding] = []
    try:
        cfg = load_config(
            file,
            reference_data=reference_data,
            warn=lambda where, message: unused.append(Finding(where, message, "warning")),
        )
    except UserError as exc:
        return ConfigReport([*unused, Finding(str(file), str(exc).removeprefix(f"{file}: "))])
    report = preflight(cfg, str(file), keys="warn")
    report.findings[:0] = unused
    return report


def preflight(
    cfg: RunConfig,
    where: str,
    *,
    keys: Keys = "require",
    judging: bool = True,
    chosen_judges: bool = False,
    shard: Shard | None = None,
    judging_only: bool = False,
) -> ConfigReport:
    """Every problem of the run `cfg` describes, before anything is opened. `where`
    names the config in findings about it; `keys="warn"` reports an unset key variable
    as a warning (`vera validate config`), the run's "require" as an error; `judging`:
    whether the run calls its judges (`vera simulate` only records them, so their keys
    and their budget wait for `vera judge`); `chosen_judges`: the judges were named on the command line (stand-in judges that
    cannot read the rubric are then refused, not replaced by the dry-run judge);
    `judging_only`: `vera judge` (a run's conversations, or imported transcripts), which
    calls only the judges and reads only the rubric and the judge prompts."""
    findings: list[Finding] = []
    reference = _reference(cfg, where, findings)
    profiles, broken, origin = _profiles(cfg, findings)
    roles = ("judges",) if judging_only else ("chatbots", "user_agents", "judges")
    specs = _models(cfg, where, profiles, broken, origin, findings, keys=keys, judging=judging, roles=roles)
    if not judging_only and (warning := shared_cache_warning(cfg, profiles)):
        findings.append(Finding(where, warning, "warning"))
    rubric_key = _rubric(cfg, findings)
    if judging_only:
        _judge_prompts(cfg, findings)
        if rubric_key is not None:
            _stand_in_judges(specs, rubric_key, cfg, chosen_judges, findings)
        return ConfigReport(findings, f"rubric {rubric_key or '?'}, {len(cfg.judges)} judge(s)", reference)
    _target_warnings(cfg, findings)
    n_personas, columns = _personas(cfg, findings)
    _prompts(cfg, columns, findings)
    if rubric_key is not None:
        _stand_in_judges(specs, rubric_key, cfg, chosen_judges, findings)
    if n_personas and (problem := plan_size(cfg, n_personas, shard)[1]) is not None:
        findings.append(Finding(where, problem))
    summary = (
        f"rubric {rubric_key or '?'}, {n_personas} personas, {len(cfg.chatbots)} chatbot(s), "
        f"{len(cfg.user_agents)} user-agent(s), {len(cfg.judges)} judge(s)"
    )
    return ConfigReport(findings, summary, reference, config=cfg.snapshot(), models=specs)


def shared_cache_warning(cfg: RunConfig, profiles: dict[str, Profile]) -> str | None:
    """A response cache shared between runs, with a chatbot that keeps the history by
    session id: the cache answers the turns another run asked without reaching the
    product, so a conversation that run left unfinished goes on, live, in this run's new
    session, which lacks them (docs/protocols.md). A warning, not an error: a run
    replayed whole from the cache is consistent."""
    if not (cfg.cache and cfg.cache_dir):
        return None
    for ref in cfg.chatbots:
        profile = profiles.get(ref.split("/", 1)[0])
        if profile is not None and keeps_history(profile):
            return (
                f"cache_dir {cfg.cache_dir}: chatbot {ref!r} keeps the history itself (its http.body sends "
                "no {{messages}}), so turns answered from the shared cache never reach it and a "
                "conversation another run left unfinished goes on in a new session without them; "
                "run it without --cache-dir"
            )
    return None


def _finding(exc: UserError, where: str) -> Finding:
    """A loading error as a finding: a DataError knows its file:line, others get `where`."""
    if isinstance(exc, DataError):
        return Finding(exc.where, exc.problem)
    return Finding(where, str(exc))


def _reference(cfg: RunConfig, file: str, findings: list[Finding]) -> str:
    """For a config that reads the reference tool's files: the folder is there and every
    file the config pins has the pinned hash. A line for the report, or ""."""
    if not (reads_reference(cfg) or cfg.reference.sha256):
        return ""
    try:
        verify_pins(cfg)
        folder = cfg.reference_dir()
    except UserError as exc:
        findings.append(_finding(exc, file))
        return ""
    ref = cfg.reference
    pins = (
        f"{len(ref.sha256)} file(s) pinned by the config, every one matches"
        if ref.sha256
        else "files not pinned by the config"
    )
    return f"reference data: {ref.name or 'reference'} {ref.version} in {folder}: {pins}"


def _profiles(
    cfg: RunConfig, findings: list[Finding]
) -> tuple[dict[str, Profile], dict[str, str], dict[str, Path]]:
    """The profiles that load, {name: file} of those that do not, and where each loaded
    profile comes from."""
    folder = cfg.path(cfg.providers)
    profiles: dict[str, Profile] = {OFFLINE.name: OFFLINE}
    broken: dict[str, str] = {}
    if not folder.is_dir():
        if any(not r.startswith(f"{OFFLINE.name}/") for r in (*cfg.chatbots, *cfg.user_agents, *cfg.judges)):
            findings.append(Finding(str(folder), "providers folder does not exist"))
        return profiles, broken, {}
    origin: dict[str, Path] = {}
    try:  # as load_profiles lists it: a folder it may not read is said, not taken for empty
        names = sorted(e.name for e in os.scandir(folder) if e.name.endswith(".toml"))
    except OSError as exc:
        findings.append(Finding(str(folder), f"cannot read the providers folder: {exc.strerror or exc}"))
        return profiles, broken, {}
    for path in (folder / n for n in names):
        try:
            p = load_profile(path)
        except DataError as exc:
            findings.append(Finding(exc.where, exc.problem))
            broken[path.stem] = str(path)
            continue
        if p.name == OFFLINE.name:
            findings.append(Finding(str(path), "the name 'offline' is reserved for the built-in stand-ins"))
        elif p.name in origin:
            findings.append(
                Finding(str(path), f"profile name {p.name!r} is already used by {origin[p.name]}")
            )
        else:
            origin[p.name] = path
            profiles[p.name] = p
            findings += _literal_credentials(p, path)
    return profiles, broken, origin


def _literal_credentials(profile: Profile, path: Path) -> list[Finding]:
    """A key written into a profile's URL: sent as it must be, masked in every record,
    but saved in a file that is shared and committed; a warning a line per field."""
    found = []
    urls = (("base_url", profile.base_url), ("http.url", profile.http.url if profile.http else ""))
    for field, url in urls:
        if literal_url_password(url):
            found.append(
                Finding(
                    str(path),
                    f"{field}: the password in its user information (user:password@) is written "
                    "literally; write ${VAR} in its place and set VAR in the environment or .env "
                    "(records show ****)",
                    "warning",
                )
            )
        if names := literal_url_credentials(url):
            params = ", ".join(repr(n) for n in names)
            what = (
                f"parameter {params} holds a literal credential"
                if len(names) == 1
                else (f"parameters {params} hold literal credentials")
            )
            found.append(
                Finding(
                    str(path),
                    f"{field}: query {what}; write ${{VAR}} in {'its' if len(names) == 1 else 'their'} place "
                    "and set VAR in the environment or .env (records show ****)",
                    "warning",
                )
            )
    return found


def _models(
    cfg: RunConfig,
    file: str,
    profiles: dict[str, Profile],
    broken: dict[str, str],
    origin: dict[str, Path],
    findings: list[Finding],
    *,
    keys: Keys,
    judging: bool,
    roles: tuple[str, ...] = ("chatbots", "user_agents", "judges"),
) -> list[ModelSpec]:
    """Every model reference resolves to a profile that loads, an offline stand-in
    exists and plays its role, the model takes the role's settings (reasoning, service
    tier, judge mode, budget), and the keys it needs are set."""
    specs: list[ModelSpec] = []
    warned: set[str] = set()
    for role in roles:
        for ref in getattr(cfg, role):
            prefix = ref.split("/", 1)[0]
            if ref in broken or prefix in broken:
                name = ref if ref in broken else prefix
                findings.append(
                    Finding(file, f"{role}: {ref!r} uses profile {broken[name]}, which has errors")
                )
                continue
            try:
                profile, model = resolve_ref(ref, profiles)
            except UserError as exc:
                findings.append(Finding(file, f"{role}: {exc}"))
                continue
            if profile.protocol == "offline" and model not in OFFLINE_MODELS:
                known = ", ".join(f"offline/{m}" for m in OFFLINE_MODELS)
                findings.append(Finding(file, f"{role}: no offline stand-in {ref!r} (there are: {known})"))
                continue
            if profile.protocol == "offline" and (problem := stand_in_role_problem(model, _ROLE[role])):
                findings.append(Finding(file, f"{role}: {problem}"))
                continue
            if role == "chatbots" and (problem := _unsent_system_prompt(cfg, ref, profile)):
                findings.append(Finding(file, problem))
            if profile.protocol not in ("http", "offline") and not model:
                findings.append(Finding(file, f"{role}: {ref!r} names no model (write profile/model)"))
            var = missing_key(profile)
            if var is not None and profile.name not in warned:
                warned.add(profile.name)
                where = str(origin.get(profile.name, cfg.path(cfg.providers)))
                findings.append(
                    Finding(
                        where,
                        f"environment variable {var} is not set ({ref} needs it; export it or put it in .env)",
                        "error" if keys == "require" and (judging or role != "judges") else "warning",
                    )
                )
            spec = ModelSpec(
                ref=ref,
                provider=profile.name,
                protocol=profile.protocol,
                model=model or profile.name,
                params=dict(profile.params),
            )
            try:
                fitted, _ = role_spec(spec, _ROLE[role], cfg)  # the reasoning settings, as a run checks them
            except UserError as exc:
                in_profile = "[params] of provider profile" in str(exc)
                where = str(origin.get(profile.name, file)) if in_profile else file
                findings.append(Finding(where, str(exc)))
                fitted = spec
            if (finding := _tier(cfg, role, ref, profile, model, file, origin)) is not None:
                findings.append(finding)
            budgeted = cfg.max_cost_usd and (judging or role != "judges")
            if budgeted and (problem := budget_problem(profile, ref, _ROLE[role], fitted.params)):
                findings.append(Finding(file, problem))
            specs.append(fitted)
    return specs


_ROLE: dict[str, Role] = {"chatbots": "chatbot", "user_agents": "user_agent", "judges": "judge"}


def _tier(
    cfg: RunConfig, role: str, ref: str, profile: Profile, model: str, file: str, origin: dict[str, Path]
) -> Finding | None:
    """A price tier the role asks for (the judge's batch mode, a role's flex tier) that
    this model cannot work at, as the start of a run refuses it."""
    if role == "judges" and cfg.judge.mode == "batch":
        if (why := tier_problem(profile, model, "batch")) is not None:
            # a missing Global-Batch deployment is the profile's to fix
            where = str(origin.get(profile.name, file)) if "[azure]" in why else file
            return Finding(where, batch_refusal(ref, why))
    elif (
        role in ("chatbots", "user_agents")
        and getattr(cfg, _ROLE[role]).service_tier == "flex"
        and (why := tier_problem(profile, model, "flex")) is not None
    ):
        return Finding(file, flex_refusal(_ROLE[role], ref, why))
    return None


def _rubric(cfg: RunConfig, findings: list[Finding]) -> str | None:
    try:
        rubric = load_rubric(cfg.path(cfg.rubric))
    except UserError as exc:
        findings.append(_finding(exc, cfg.rubric))
        return None
    for p in validate_rubric(rubric):
        findings.append(Finding(f"{rubric.path}:{p.line}" if p.line else rubric.path, p.message))
    return rubric.key


def _personas(cfg: RunConfig, findings: list[Finding]) -> tuple[int, tuple[str, ...]]:
    files = cfg.persona_files()
    where = str(files[0])
    try:
        for i in check_annotations(files, cfg.annotation_columns, _target_file(cfg) or "annotation_columns"):
            findings.append(Finding(i.path, i.message, i.severity))
        present, _ = present_annotations(files, cfg.annotation_columns)
        group_by = cfg.group_by or default_grouping(persona_header(files[0]), present)
        pset, issues = check_personas(files, group_by=group_by)
    except UserError as exc:
        findings.append(_finding(exc, where))
        return 0, ()
    for i in issues:
        at = i.path or where
        findings.append(Finding(f"{at}:{i.line}" if i.line else at, i.message, i.severity))
    if pset is None:
        return 0, ()
    n = len(pset.personas)
    if cfg.persona_limit > n:
        findings.append(
            Finding(where, f"persona_limit {cfg.persona_limit} is more than the {n} personas here", "warning")
        )
    return min(n, cfg.persona_limit or n), pset.columns


def _unsent_system_prompt(cfg: RunConfig, ref: str, profile: Profile) -> str | None:
    """A chatbot system prompt the config sets that an http chatbot's profile would drop
    (`[http.roles] system = ""`): the run would go on as if the product had it, and its
    call bodies would show it as sent."""
    if profile.http is None or profile.http.roles.system:
        return None
    c = cfg.conversation
    prompts: list[tuple[str, str | None]] = [("conversation.chatbot_system_prompt", c.chatbot_system_prompt)]
    prompts += [
        (f"conversation.session.{t}.chatbot_system_prompt", s.chatbot_system_prompt)
        for t, s in c.session.items()
    ]
    for field, text in prompts:
        if text:
            return (
                f"{field} is set, but chatbot {ref!r} sends no system turn ([http.roles] system is empty in "
                "its profile): the product would never get it; give the role its API takes for one "
                '([http.roles] system = "system"), or leave the prompt out (the product brings its own)'
            )
    return None


def _target_warnings(cfg: RunConfig, findings: list[Finding]) -> None:
    """What a target's manifest holds that vera does not read (a warning each)."""
    where = _target_file(cfg)
    if not where:
        return
    try:
        warnings = load_target(where).warnings
    except UserError:
        return  # named where the target's files are checked
    for w in warnings:
        at, _, message = w.partition(": ")
        findings.append(Finding(at, message, "warning"))


def _target_file(cfg: RunConfig) -> str:
    if not cfg.target:
        return ""
    try:
        return str(find_target(cfg.target, base=Path(cfg.base_dir), reference=cfg.reference_dir))
    except UserError:
        return ""


def _prompts(cfg: RunConfig, columns: tuple[str, ...], findings: list[Finding]) -> None:
    try:
        up = load_user_prompts(cfg.path(cfg.user_prompts), cfg.reference_dir)
        if columns:
            for i in check_templates(up, columns):
                findings.append(Finding(f"{i.path}:{i.line}" if i.line else i.path, i.message))
    except UserError as exc:
        findings.append(_finding(exc, cfg.user_prompts))
    _judge_prompts(cfg, findings)


def _judge_prompts(cfg: RunConfig, findings: list[Finding]) -> None:
    try:
        load_judge_prompts(cfg.path(cfg.judge_prompts), cfg.reference_dir)
    except UserError as exc:
        findings.append(_finding(exc, cfg.judge_prompts))


def _stand_in_judges(
    specs: list[ModelSpec], rubric_key: str, cfg: RunConfig, chosen: bool, findings: list[Finding]
) -> None:
    """A stand-in judge that cannot read the rubric is refused, unless the run would
    replace every judge of the config by the dry-run judge (`dry_run_swap`)."""
    if dry_run_swap(cfg.judges, rubric_key, chosen=chosen):
        return
    judges = set(cfg.judges)
    for s in specs:
        if s.ref not in judges or s.protocol != "offline":
            continue
        if (reason := rubric_refusal(s.model, rubric_key)) is not None:
            findings.append(Finding(str(cfg.path(cfg.rubric)), f"{reason}; choose a model judge"))
