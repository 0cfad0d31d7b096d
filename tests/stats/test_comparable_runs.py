"""Runs made with different rubric, persona or prompt versions are not comparable."""

from __future__ import annotations

import copy

from vera.records import ArtifactVersion, ConfigSnapshot, ModelSpec, RunManifest
from vera.stats import check_comparable

BASE = {
    "rubric": {"version": "1.1", "sha256": "a" * 64},
    "personas": {"version": "1.1", "sha256": "b" * 64},
    "user_prompts": {"version": "1", "sha256": "c" * 64},
    "judge_prompts": {"version": "1", "sha256": "d" * 64},
}


def test_identical_versions_are_comparable() -> None:
    assert check_comparable([BASE, copy.deepcopy(BASE), copy.deepcopy(BASE)]) == []


def test_a_different_rubric_version_is_named() -> None:
    other = copy.deepcopy(BASE)
    other["rubric"] = {"version": "1.2", "sha256": "e" * 64}
    [problem] = check_comparable([BASE, other], names=["runs/old", "runs/new"])
    assert problem.startswith("rubric differs")
    assert "runs/old used version 1.1" in problem and "runs/new used version 1.2" in problem


def test_edited_content_under_the_same_version_is_caught() -> None:
    other = copy.deepcopy(BASE)
    other["personas"]["sha256"] = "f" * 64
    [problem] = check_comparable([BASE, other])
    assert "personas differs" in problem and "ffffffffffff" in problem


def test_every_difference_is_listed_and_missing_records_are_reported() -> None:
    other = copy.deepcopy(BASE)
    other["user_prompts"]["version"] = "2"
    del other["judge_prompts"]
    problems = check_comparable([BASE, other])
    assert [p.split()[0] for p in problems] == ["user_prompts", "judge_prompts"]
    assert "no recorded version" in problems[1]


def test_run_manifest_records_are_accepted() -> None:
    def manifest(rubric_version: str) -> RunManifest:
        def artifact(name: str, version: str) -> ArtifactVersion:
            return ArtifactVersion(name=name, version=version, path=f"{name}.tsv", sha256="0" * 64)

        model = ModelSpec(ref="m", provider="p", protocol="openai", model="m")
        return RunManifest(
            vera_version="0.1.0",
            run_id="r",
            rubric=artifact("rubric", rubric_version),
            personas=artifact("personas", "1"),
            user_prompts=artifact("user_prompts", "1"),
            judge_prompts=artifact("judge_prompts", "1"),
            config_sha256="",
            config=ConfigSnapshot(),
            chatbots=[model],
            user_agents=[model],
            judges=[model],
            judge_instances=1,
            seeds=[0],
            offline=True,
            created_at="",
            updated_at="",
        )

    assert check_comparable([manifest("1"), manifest("1")]) == []
    assert len(check_comparable([manifest("1"), manifest("2")])) == 1


def test_a_different_locale_pack_is_named_first_with_each_file_s_name() -> None:
    # An English run beside a zh-CN run: the cause is the pack; the files then differ by
    # name (vera-si, vera-si-zh-CN) under the same version, which the message must show.
    en = {key: {"name": f"vera-{key}", **entry} for key, entry in BASE.items()}
    zh = {key: {"name": f"vera-{key}-zh-CN", **entry, "sha256": "9" * 64} for key, entry in BASE.items()}
    zh["locale"] = {"tag": "zh-CN", "version": "1.2.0", "path": "locales/zh-CN"}
    problems = check_comparable([en, zh], names=["en", "zh"])
    assert (
        problems[0]
        == "locale differs: en used no locale pack (vera's English base), zh used locale pack zh-CN 1.2.0"
    )
    assert problems[1] == (
        "rubric differs: en used vera-rubric version 1.1 (sha256 aaaaaaaaaaaa), "
        "zh used vera-rubric-zh-CN version 1.1 (sha256 999999999999)"
    )
    assert len(problems) == 5


def test_the_same_pack_and_names_keep_the_message_as_it_was() -> None:
    one = {key: {"name": f"vera-{key}", **entry} for key, entry in BASE.items()}
    two = copy.deepcopy(one)
    two["rubric"]["version"] = "1.2"
    for m in (one, two):
        m["locale"] = {"tag": "zh-CN", "version": "1.2.0"}
    [problem] = check_comparable([one, two], names=["a", "b"])
    assert (
        problem
        == "rubric differs: a used version 1.1 (sha256 aaaaaaaaaaaa), b used version 1.2 (sha256 aaaaaaaaaaaa)"
    )
