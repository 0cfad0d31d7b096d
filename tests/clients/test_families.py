"""Parameters fitted to the model's family: what each family refuses is not sent, a token
limit goes under the name the family wants."""

from __future__ import annotations

import pytest

from vera.clients.families import family_of, fit_params, reasoning_problem


@pytest.mark.parametrize(
    ("protocol", "model", "given", "sent", "dropped"),
    [
        ("openai", "gpt-4o", {"temperature": 0, "max_tokens": 9}, {"temperature": 0, "max_tokens": 9}, []),
        (
            "openai",
            "gpt-5-mini",
            {"temperature": 0, "max_tokens": 9},
            {"max_completion_tokens": 9},
            ["temperature"],
        ),
        ("azure_openai", "o3-mini", {"top_p": 0.5, "seed": 3}, {"seed": 3}, ["top_p"]),
        ("openai", "gpt-4o", {"temperature": 2.5}, {}, ["temperature=2.5"]),
        (
            "anthropic",
            "claude-sonnet-4-5",
            {"temperature": 0.2, "top_p": 0.9},
            {"temperature": 0.2},
            ["top_p"],
        ),
        (
            "anthropic",
            "claude-opus-4-20250514",
            {"temperature": 0.2, "top_p": 0.9},
            {"temperature": 0.2, "top_p": 0.9},
            [],
        ),
        (
            "anthropic",
            "claude-opus-4-7",
            {"temperature": 0, "max_tokens": 5},
            {"max_tokens": 5},
            ["temperature"],
        ),
        ("anthropic", "claude-3-5-haiku-latest", {"temperature": 1.5}, {}, ["temperature=1.5"]),
        (
            "gemini",
            "gemini-2.5-flash",
            {"temperature": 0.7, "max_tokens": 5},
            {"temperature": 0.7, "max_tokens": 5},
            [],
        ),
    ],
)
def test_fit_params(protocol: str, model: str, given: dict, sent: dict, dropped: list[str]) -> None:
    fitted, said = fit_params(protocol, model, given)
    assert fitted == sent
    assert [s.split(" ")[0] for s in said] == dropped


def test_a_server_of_another_protocol_gets_its_parameters_as_given() -> None:
    assert family_of("http", "anything") is None
    assert fit_params("http", "x", {"temperature": 9}) == ({"temperature": 9}, [])


# ---------------------------------------------------------------------------------------
# Reasoning settings
# ---------------------------------------------------------------------------------------

ENABLED = {"type": "enabled", "budget_tokens": 2048}


@pytest.mark.parametrize(
    ("protocol", "model", "params"),
    [
        ("openai", "gpt-5.4", {"reasoning_effort": "low"}),
        ("openai", "gpt-5.2-2025-12-11", {"reasoning_effort": "xhigh"}),
        ("openai", "gpt-5-mini", {"reasoning_effort": "minimal"}),
        ("azure_openai", "o3-mini", {"reasoning_effort": "high"}),
        ("openai", "gpt-oss-20b", {"reasoning_effort": "low"}),  # a compatible server decides
        ("anthropic", "claude-sonnet-4-5", {"thinking": ENABLED, "max_tokens": 4096}),
        ("anthropic", "claude-3-7-sonnet-20250219", {"thinking": ENABLED, "max_tokens": 4096}),
        ("anthropic", "claude-opus-4-7", {"thinking": {"type": "adaptive"}}),
        ("anthropic", "claude-3-5-haiku-latest", {"thinking": {"type": "disabled"}}),
        ("gemini", "gemini-2.5-flash", {"thinkingConfig": {"thinkingBudget": 0}}),
        ("gemini", "gemini-2.5-pro", {"thinkingConfig": {"thinkingBudget": -1, "includeThoughts": True}}),
        ("gemini", "gemini-3-pro-preview", {"thinkingConfig": {"thinkingLevel": "low"}}),
        ("gemini", "gemini-3-flash-preview", {"thinkingConfig": {"thinkingLevel": "minimal"}}),
    ],
)
def test_documented_reasoning_settings_pass(protocol: str, model: str, params: dict) -> None:
    assert reasoning_problem(protocol, model, params) is None


@pytest.mark.parametrize(
    ("protocol", "model", "params", "field", "says"),
    [
        ("openai", "gpt-4o", {"reasoning_effort": "low"}, "reasoning_effort", "not a reasoning model"),
        ("openai", "o3", {"reasoning_effort": "minimal"}, "reasoning_effort", "'low', 'medium', 'high'"),
        ("openai", "gpt-5", {"reasoning_effort": "none"}, "reasoning_effort", "not accepted by gpt-5"),
        ("openai", "gpt-5.1", {"reasoning_effort": "xhigh"}, "reasoning_effort", "not accepted"),
        ("openai", "gpt-5.4", {"thinking": ENABLED}, "thinking", "Anthropic"),
        ("anthropic", "claude-sonnet-4-5", {"reasoning_effort": "low"}, "reasoning_effort", "OpenAI"),
        ("gemini", "gemini-2.5-pro", {"reasoning_effort": "low"}, "reasoning_effort", "thinkingConfig"),
        (
            "anthropic",
            "claude-sonnet-4-5",
            {"thinking": {"type": "enabled", "budget_tokens": 512}, "max_tokens": 4096},
            "thinking.budget_tokens",
            "at least 1024",
        ),
        (
            "anthropic",
            "claude-sonnet-4-5",
            {"thinking": ENABLED, "max_tokens": 2048},
            "thinking.budget_tokens",
            "less than max_tokens (2048)",
        ),
        # no max_tokens: the client sends 2048, which the budget must stay below
        ("anthropic", "claude-sonnet-4-5", {"thinking": ENABLED}, "thinking.budget_tokens", "(2048)"),
        ("anthropic", "claude-3-5-sonnet-latest", {"thinking": ENABLED}, "thinking", "no extended thinking"),
        ("anthropic", "claude-opus-4-7", {"thinking": ENABLED, "max_tokens": 9000}, "thinking", "adaptive"),
        ("anthropic", "claude-sonnet-4-5", {"thinking": {"type": "adaptive"}}, "thinking", "no adaptive"),
        ("anthropic", "claude-sonnet-4-5", {"thinking": True}, "thinking", "a table"),
        (
            "gemini",
            "gemini-3-pro-preview",
            {"thinkingConfig": {"thinkingLevel": "low", "thinkingBudget": 1024}},
            "thinkingConfig",
            "cannot both",
        ),
        (
            "gemini",
            "gemini-2.5-flash",
            {"thinkingConfig": {"thinkingLevel": "low"}},
            "thinkingConfig.thinkingLevel",
            "takes thinkingBudget",
        ),
        (
            "gemini",
            "gemini-3-pro-preview",
            {"thinkingConfig": {"thinkingLevel": "medium"}},
            "thinkingConfig.thinkingLevel",
            "'low', 'high'",
        ),
        (
            "gemini",
            "gemini-2.5-pro",
            {"thinkingConfig": {"thinkingBudget": 0}},
            "thinkingConfig.thinkingBudget",
            "128..32768",
        ),
        (
            "gemini",
            "gemini-2.0-flash",
            {"thinkingConfig": {"thinkingBudget": 1024}},
            "thinkingConfig",
            "does not think",
        ),
        (
            "gemini",
            "gemini-2.5-flash",
            {"thinkingConfig": {"budget": 5}},
            "thinkingConfig.budget",
            "not known",
        ),
    ],
)
def test_bad_reasoning_settings_name_the_field(
    protocol: str, model: str, params: dict, field: str, says: str
) -> None:
    problem = reasoning_problem(protocol, model, params)
    assert problem is not None and problem.startswith(f"{field}: ") and says in problem, problem


@pytest.mark.parametrize(
    ("given", "sent", "dropped"),
    [
        ({"temperature": 0, "max_tokens": 4096}, {"max_tokens": 4096}, ["temperature=0"]),
        ({"temperature": 1, "max_tokens": 4096}, {"temperature": 1, "max_tokens": 4096}, []),
        ({"top_k": 5, "top_p": 0.97}, {"top_p": 0.97}, ["top_k=5"]),
        ({"top_p": 0.5}, {}, ["top_p=0.5"]),
    ],
)
def test_claude_thinking_fits_the_samplers(given: dict, sent: dict, dropped: list[str]) -> None:
    fitted, said = fit_params("anthropic", "claude-opus-4-20250514", {"thinking": ENABLED, **given})
    assert fitted == {"thinking": ENABLED, **sent}
    assert [s.split(" ")[0] for s in said] == dropped
    # without thinking the same samplers pass
    assert fit_params("anthropic", "claude-opus-4-20250514", given)[1] == []


# ---------------------------------------------------------------------------------------
# The reference's shorthands and the parameters newer models refuse
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("protocol", "model", "params", "problem"),
    [
        (
            "anthropic",
            "claude-3-5-sonnet-20241022",
            {"thinking_effort": "low"},
            "thinking_effort: claude-3-5-sonnet-20241022 has no extended thinking",
        ),
        (
            "anthropic",
            "claude-sonnet-4-5",
            {"thinking_effort": "huge"},
            "thinking_effort: 'huge' is not one of 'low', 'medium', 'high', 'max'",
        ),
        (
            "openai",
            "gpt-5.4",
            {"thinking_effort": "low"},
            "thinking_effort: is the reference's shorthand for thinking (Anthropic)",
        ),
        (
            "anthropic",
            "claude-sonnet-4-5",
            {"thinking_level": "low"},
            "thinking_level: is the reference's shorthand for thinkingConfig (Gemini)",
        ),
        (
            "gemini",
            "gemini-2.5-flash",
            {"thinking_level": "low"},
            "thinkingConfig.thinkingLevel: gemini-2.5-flash takes thinkingBudget",
        ),
        (
            "gemini",
            "gemini-3-pro-preview",
            {"thinking_level": "minimal"},
            "thinkingConfig.thinkingLevel: 'minimal' is not accepted",
        ),
    ],
)
def test_a_shorthand_the_model_cannot_take_is_one_line(protocol, model, params, problem):
    fitted, _ = fit_params(protocol, model, params)
    said = reasoning_problem(protocol, model, fitted)
    assert said is not None and said.startswith(problem), said


def test_gemini_3_sampling_parameters_are_dropped_saying_why():
    fitted, dropped = fit_params(
        "gemini", "gemini-3-flash-preview", {"temperature": 0, "top_k": 5, "maxOutputTokens": 100}
    )
    assert fitted == {"maxOutputTokens": 100}
    assert [d.split(" ")[0] for d in dropped] == ["temperature", "top_k"]
    assert "Gemini 3 and later" in dropped[0]
    # Gemini 2.5 keeps them.
    assert fit_params("gemini", "gemini-2.5-flash", {"temperature": 0})[0] == {"temperature": 0}
