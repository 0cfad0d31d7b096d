"""Parameters fitted to the model's family: what each family refuses is not sent, a token
limit goes under the name the family wants."""

from __future__ import annotations

import pytest

from vera.clients.families import family_of, fit_params


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
