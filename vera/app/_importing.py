"""`vera judge --transcripts`: import conversations vera did not make into a new run
directory and judge them."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

from vera.app._checks import preflight
from vera.app._judging import judge, judged
from vera.app._options import JudgeOptions, configure
from vera.app._result import RunOutcome
from vera.app._resume import existing_run, resume_command
from vera.app._run import new_run_dir
from vera.app._session import RunSession
from vera.app._stand_ins import fit_stand_in_judges
from vera.engine import Inputs, digest
from vera.errors import UserError
from vera.inputs import PERSONAS_NOT_FOUND, PersonaSet, load_config, personas_not_found, read_transcripts
from vera.records import Conversation, ImportInfo
from vera.store import RunStore, atomic_write


async def import_and_judge(opts: JudgeOptions) -> RunOutcome:
    cfg = configure(load_config(opts.config_path, reference_data=opts.reference_data), opts)
    # The checks `vera run` makes, of what judging uses: the judges, rubric and prompts.
    hint = f"; `vera validate config {opts.config_path}` lists them" if opts.config_path else ""
    preflight(cfg, opts.config_path or "", chosen_judges=bool(opts.judges), judging_only=True).refuse(hint)
    inputs = Inputs.load(cfg)
    stand_in = fit_stand_in_judges(inputs, chosen=bool(opts.judges))
    personas = inputs.personas if opts.personas else None
    conversations = read_transcripts(opts.transcripts or "", personas)
    run_dir = (
        Path(opts.out) if opts.out else new_run_dir(cfg, digest("import", [c.id for c in conversations]))
    )
    manifest = existing_run(run_dir, resume=False)
    chatbots = sorted({c.chatbot for c in conversations})
    agents = sorted({c.user_agent for c in conversations})
    cfg.chatbots, cfg.user_agents, cfg.seeds = chatbots, agents, [0]
    resume = resume_command("judge", run_dir)
    async with RunSession(
        run_dir, resume=resume, grace_s=cfg.grace_s, call_bodies=cfg.call_bodies is not False
    ) as session:
        store = session.store
        if manifest is not None and any(c.id not in store.conversations for c in conversations):
            raise UserError(
                f"{run_dir}: holds another run; import these transcripts into a new folder "
                f"(to continue judging that run: {resume})"
            )
        added = 0
        for c in conversations:
            if c.id not in store.conversations:  # a rerun on the same --out records nothing twice
                store.add_conversation(c)
                added += 1
        info, notes = _import_info(opts, conversations, personas, store)
        notes = [*([stand_in] if stand_in else []), *notes]
        done = await judge(
            session,
            cfg,
            inputs,
            manifest,
            conversations,
            imported=(chatbots, agents, info),
            max_wait_s=opts.max_wait_s,
        )
    outcome = judged(done, run_dir, resume, cfg.allow_failures)
    result = dataclasses.replace(
        outcome.result,
        conversations=added,
        conversations_reused=len(conversations) - added,
        conversations_failed=info.failed,
    )
    return dataclasses.replace(outcome, result=result, notes=[*notes, *outcome.notes])


def _import_info(
    opts: JudgeOptions, conversations: list[Conversation], personas: PersonaSet | None, store: RunStore
) -> tuple[ImportInfo, list[str]]:
    """What the import found, for the manifest and card, and what the terminal must
    say about it: conversations not judged for lack of a speaker, and persona names the
    persona file does not know (listed in the run directory)."""
    failed = [c for c in conversations if c.status == "failed"]
    missing = personas_not_found(conversations, personas) if personas is not None else Counter()
    notes = [
        f"{n} of {len(conversations)} imported conversation(s): {reason}"
        for reason, n in sorted(Counter(c.error for c in failed).items())
    ]
    stale = store.root / PERSONAS_NOT_FOUND
    if not missing and stale.exists():
        stale.unlink()  # from an earlier import into this directory with another persona file
    if missing:
        atomic_write(
            store.root / PERSONAS_NOT_FOUND,
            "".join(f"{name}\t{n}\n" for name, n in sorted(missing.items())).encode(),
            what="the list of persona names not found",
        )
        notes.append(
            f"warning: {sum(missing.values())} of {len(conversations)} conversation(s) name a persona that "
            f"{opts.personas} does not have ({len(missing)} name(s), listed in "
            f"{store.root / PERSONAS_NOT_FOUND}); their risk level is Unknown"
        )
    info = ImportInfo(
        source=str(Path(opts.transcripts or "").resolve()),
        conversations=len(conversations),
        failed=len(failed),
        personas=str(Path(opts.personas).resolve()) if opts.personas else None,
        personas_not_found=dict(sorted(missing.items())),
    )
    return info, notes
