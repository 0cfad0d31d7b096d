"""The request rules the fake servers enforce, one function per protocol.

Each function returns the problems it found in one request, in the words a real API
would use; an empty list means the real API would accept it. They are written from the
providers' API references (checked with the `search` tool while writing them), on
purpose independently of vera's own family table (`vera/clients/families.py`): a wrong
table in vera must fail here, not agree with itself.

- OpenAI Chat Completions (and Azure OpenAI's deployment URL): known parameter names and
  their types and ranges; reasoning families (o-series, gpt-5) refuse `max_tokens` and any
  temperature/top_p but the default; `reasoning_effort` only for reasoning models, with
  the levels each documents; roles; strict `json_schema` rules (every object
  closed with `additionalProperties: false`, every property required).
- Anthropic Messages: `x-api-key` and `anthropic-version` headers; known parameters;
  `max_tokens` required; the system prompt top-level only; messages open with `user` and
  alternate; temperature 0..1; families that refuse temperature with top_p, or
  temperature at all; extended thinking (a budget of at least 1024 below max_tokens,
  then temperature 1 only, no top_k, top_p >= 0.95, no forced tool; adaptive mode only
  on Opus 4.7, budgets not at all there; none on Claude 3.5 and older); `cache_control` only on content blocks, system blocks and tools,
  at most 4; tools and a forced `tool_choice`.
- Gemini generateContent: the key in `x-goog-api-key` (or `key=`); known top-level
  fields; `contents` open with `user` and alternate between `user` and `model`;
  `systemInstruction` as a content without a model role; camelCase `generationConfig`
  names with their ranges; `responseSchema` only with the OpenAPI subset it documents;
  `thinkingConfig` with thinkingBudget (2.5: per-model range) or thinkingLevel (3 only),
  never both.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# ---------------------------------------------------------------------------------------
# OpenAI Chat Completions
# ---------------------------------------------------------------------------------------

OPENAI_PARAMS = frozenset(
    {
        "model", "messages", "audio", "frequency_penalty", "function_call", "functions",
        "logit_bias", "logprobs", "max_completion_tokens", "max_tokens", "metadata",
        "modalities", "n", "parallel_tool_calls", "prediction", "presence_penalty",
        "prompt_cache_key", "prompt_cache_retention", "reasoning_effort", "response_format",
        "safety_identifier", "seed", "service_tier", "stop", "store", "stream",
        "stream_options", "temperature", "tool_choice", "tools", "top_logprobs", "top_p",
        "user", "verbosity", "web_search_options",
    }
)  # fmt: skip
OPENAI_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
# Reasoning models: max_completion_tokens only, sampling parameters at their defaults.
OPENAI_REASONING = re.compile(r"^(o\d|gpt-5)", re.IGNORECASE)
_SCHEMA_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def openai_effort_levels(model: str) -> tuple[str, ...]:
    """The `reasoning_effort` values a reasoning model documents (OpenAI's model pages:
    o-series low..high; gpt-5 adds minimal; gpt-5.1 has none instead of minimal; gpt-5.2
    on add xhigh). Other reasoning ids get every level."""
    base = model.split("-20")[0]  # drop a date snapshot suffix
    if re.match(r"^o\d", base):
        return ("low", "medium", "high")
    if base in ("gpt-5", "gpt-5-mini", "gpt-5-nano"):
        return ("minimal", "low", "medium", "high")
    version = re.match(r"^gpt-5\.(\d+)(-mini|-nano)?$", base)
    if version and version.group(1) == "1":
        return ("none", "low", "medium", "high")
    if version:
        return ("none", "low", "medium", "high", "xhigh")
    return ("none", "minimal", "low", "medium", "high", "xhigh")


def _number(body: Mapping[str, Any], name: str, low: float, high: float, problems: list[str]) -> None:
    if name not in body:
        return
    value = body[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        problems.append(f"Invalid type for '{name}': expected a number, got {type(value).__name__}")
    elif not low <= value <= high:
        problems.append(f"Invalid '{name}': {value} is outside [{low:g}, {high:g}]")


def _positive_int(body: Mapping[str, Any], name: str, problems: list[str]) -> None:
    if name in body and (isinstance(body[name], bool) or not isinstance(body[name], int) or body[name] < 1):
        problems.append(f"Invalid '{name}': expected a positive integer, got {body[name]!r}")


def openai_problems(body: dict[str, Any], model: str) -> list[str]:
    """Chat Completions body rules for `model` (the body's, or Azure's deployment)."""
    problems = [f"Unrecognized request argument supplied: {k}" for k in body if k not in OPENAI_PARAMS]
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        problems.append("'messages' must be a non-empty array")
        messages = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in OPENAI_ROLES:
            problems.append(
                f"messages[{i}].role: invalid role {m.get('role') if isinstance(m, dict) else m!r}"
            )
            continue
        content = m.get("content")
        if m["role"] in ("system", "developer", "user") and not isinstance(content, str | list):
            problems.append(f"messages[{i}].content: expected a string or an array of parts")
    _number(body, "temperature", 0, 2, problems)
    _number(body, "top_p", 0, 1, problems)
    _number(body, "presence_penalty", -2, 2, problems)
    _number(body, "frequency_penalty", -2, 2, problems)
    _positive_int(body, "max_tokens", problems)
    _positive_int(body, "max_completion_tokens", problems)
    _positive_int(body, "n", problems)
    if "seed" in body and (isinstance(body["seed"], bool) or not isinstance(body["seed"], int)):
        problems.append(f"Invalid type for 'seed': expected an integer, got {body['seed']!r}")
    stop = body.get("stop")
    if stop is not None and not (
        isinstance(stop, str)
        or (isinstance(stop, list) and len(stop) <= 4 and all(isinstance(s, str) for s in stop))
    ):
        problems.append("Invalid 'stop': a string or up to 4 strings")
    if "prompt_cache_key" in body and not isinstance(body["prompt_cache_key"], str):
        problems.append("Invalid type for 'prompt_cache_key': expected a string")
    if OPENAI_REASONING.match(model):
        if "max_tokens" in body:
            problems.append(
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead."
            )
        for name in ("temperature", "top_p"):
            if name in body and body[name] != 1:
                problems.append(
                    f"Unsupported value: '{name}' does not support {body[name]} with this model. "
                    "Only the default (1) value is supported."
                )
    if "reasoning_effort" in body:
        effort = body["reasoning_effort"]
        if not OPENAI_REASONING.match(model):
            problems.append("Unsupported parameter: 'reasoning_effort' is not supported with this model.")
        elif effort not in openai_effort_levels(model):
            levels = ", ".join(f"'{v}'" for v in openai_effort_levels(model))
            problems.append(
                f"Unsupported value: 'reasoning_effort' does not support '{effort}' with this model. "
                f"Supported values are: {levels}."
            )
    fmt = body.get("response_format")
    if fmt is not None:
        problems += _response_format_problems(fmt)
    return problems


def _response_format_problems(fmt: Any) -> list[str]:
    if not isinstance(fmt, dict) or fmt.get("type") not in ("text", "json_object", "json_schema"):
        return [f"Invalid 'response_format': {fmt!r}"]
    if fmt["type"] != "json_schema":
        return []
    spec = fmt.get("json_schema")
    if not isinstance(spec, dict):
        return ["response_format.json_schema is required"]
    problems = []
    name = spec.get("name")
    if not isinstance(name, str) or not _SCHEMA_NAME.match(name):
        problems.append(f"response_format.json_schema.name must match [A-Za-z0-9_-]{{1,64}}, got {name!r}")
    schema = spec.get("schema")
    if not isinstance(schema, dict):
        return [*problems, "response_format.json_schema.schema must be an object"]
    if spec.get("strict"):
        if schema.get("type") != "object":
            problems.append("Invalid schema: the root of a strict schema must be an object")
        problems += _strict_schema_problems(schema, "schema")
    return problems


def _strict_schema_problems(schema: Any, where: str) -> list[str]:
    """Structured Outputs' strict mode: every object closed and every property required."""
    if not isinstance(schema, dict):
        return []
    problems: list[str] = []
    if schema.get("type") == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False:
            problems.append(f"Invalid schema: 'additionalProperties' is required to be false at {where}")
        missing = sorted(set(props) - set(schema.get("required") or []))
        if missing:
            problems.append(
                f"Invalid schema: 'required' must list every property at {where} (missing {missing})"
            )
        for key, sub in props.items():
            problems += _strict_schema_problems(sub, f"{where}.properties.{key}")
    if isinstance(schema.get("items"), dict):
        problems += _strict_schema_problems(schema["items"], f"{where}.items")
    for key in ("anyOf", "allOf"):
        for i, sub in enumerate(schema.get(key) or []):
            problems += _strict_schema_problems(sub, f"{where}.{key}[{i}]")
    return problems


# ---------------------------------------------------------------------------------------
# Anthropic Messages
# ---------------------------------------------------------------------------------------

ANTHROPIC_VERSION = "2023-06-01"
ANTHROPIC_PARAMS = frozenset(
    {
        "model", "messages", "max_tokens", "system", "temperature", "top_p", "top_k",
        "stop_sequences", "stream", "metadata", "tools", "tool_choice", "thinking",
        "service_tier", "container", "mcp_servers", "context_management", "output_config",
    }
)  # fmt: skip
# output_config.effort: how much Claude spends, thinking included (the effort parameter).
ANTHROPIC_EFFORTS = ("low", "medium", "high", "xhigh", "max")
# Claude families that refuse temperature together with top_p (Opus 4.1 on), and those
# that refuse temperature (and the other samplers) altogether (Opus 4.7 on).
# A minor version is followed by the end or by "-" (a date suffix is 8 digits, so
# claude-opus-4-20250514, which is Opus 4.0, is not Opus 4.2).
ANTHROPIC_ONE_SAMPLER = re.compile(
    r"^claude-(opus-4-([1-9]|\d\d)|sonnet-4-([5-9]|\d\d)|haiku-4-([5-9]|\d\d))(-|$)"
)
ANTHROPIC_NO_SAMPLING = re.compile(r"^claude-opus-4-([7-9]|\d\d)(-|$)")
MAX_CACHE_BREAKPOINTS = 4
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def anthropic_problems(body: dict[str, Any], headers: Mapping[str, str]) -> list[str]:
    problems = [f"{k}: Extra inputs are not permitted" for k in body if k not in ANTHROPIC_PARAMS]
    if headers.get("anthropic-version") != ANTHROPIC_VERSION:
        problems.append(f"anthropic-version: header must be {ANTHROPIC_VERSION}")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        problems.append("model: Field required")
        model = ""
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        problems.append("max_tokens: Field required (a positive integer)")
    _number(body, "temperature", 0, 1, problems)
    _number(body, "top_p", 0, 1, problems)
    if "top_k" in body and (not isinstance(body["top_k"], int) or body["top_k"] < 0):
        problems.append("top_k: must be a non-negative integer")
    if ANTHROPIC_NO_SAMPLING.match(model):
        problems += [
            f"`{k}` is deprecated for this model." for k in ("temperature", "top_p", "top_k") if k in body
        ]
    elif ANTHROPIC_ONE_SAMPLER.match(model) and "temperature" in body and "top_p" in body:
        problems.append(
            "`temperature` and `top_p` cannot both be specified for this model. Please use only one."
        )
    stops = body.get("stop_sequences")
    if stops is not None and not (
        isinstance(stops, list) and all(isinstance(s, str) and s.strip() for s in stops)
    ):
        problems.append("stop_sequences: a list of non-blank strings")
    if "thinking" in body:
        problems += _thinking_problems(body, model)
    if "output_config" in body:
        config = body["output_config"]
        effort = config.get("effort") if isinstance(config, dict) else None
        if not isinstance(config, dict) or set(config) - {"effort", "format"}:
            problems.append("output_config: Extra inputs are not permitted")
        elif effort is not None and effort not in ANTHROPIC_EFFORTS:
            problems.append(
                f"output_config.effort: Input should be {', '.join(map(repr, ANTHROPIC_EFFORTS))}"
            )
    breakpoints = [0]
    problems += _system_problems(body.get("system"), breakpoints)
    problems += _anthropic_messages(body.get("messages"), breakpoints)
    problems += _tools_problems(body, breakpoints)
    if breakpoints[0] > MAX_CACHE_BREAKPOINTS:
        problems.append(
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found {breakpoints[0]}."
        )
    return problems


# Extended thinking: Claude 3.7 Sonnet and the Claude 4 models; adaptive thinking from the
# 4.6 models on, and the only mode of Opus 4.7 (which refuses budgets).
ANTHROPIC_NO_THINKING = re.compile(r"^claude-(instant|2|3-[0-6]|3-(opus|sonnet|haiku))")
ANTHROPIC_ADAPTIVE = re.compile(r"^claude-(opus|sonnet|haiku)-(4-([6-9]|\d\d)|[5-9])(-|$)")
MIN_THINKING_BUDGET = 1024


def claude_thinking_on(body: dict[str, Any]) -> bool:
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


def _thinking_problems(body: dict[str, Any], model: str) -> list[str]:
    thinking = body["thinking"]
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    if kind not in ("enabled", "adaptive", "disabled"):
        return [f"thinking.type: Input tag {kind!r} does not match 'enabled', 'adaptive' or 'disabled'"]
    if kind == "disabled":
        return []
    if ANTHROPIC_NO_THINKING.match(model):
        return [f"thinking: extended thinking is not supported by {model}"]
    problems: list[str] = []
    if kind == "adaptive" and not ANTHROPIC_ADAPTIVE.match(model):
        problems.append(f"thinking.type: 'adaptive' is not supported by {model}")
    if kind == "enabled":
        budget = thinking.get("budget_tokens")
        if ANTHROPIC_NO_SAMPLING.match(model):
            problems.append(
                "thinking.type.enabled is not supported for this model. Use thinking.type.adaptive instead."
            )
        elif isinstance(budget, bool) or not isinstance(budget, int):
            problems.append("thinking.enabled.budget_tokens: Field required")
        else:
            if budget < MIN_THINKING_BUDGET:
                problems.append(
                    f"thinking.enabled.budget_tokens: Input should be greater than or equal to {MIN_THINKING_BUDGET}"
                )
            max_tokens = body.get("max_tokens")
            if isinstance(max_tokens, int) and max_tokens <= budget:
                problems.append("`max_tokens` must be greater than `thinking.budget_tokens`.")
    if "temperature" in body and body["temperature"] != 1:
        problems.append("`temperature` may only be set to 1 when thinking is enabled.")
    if "top_k" in body:
        problems.append("`top_k` is not supported when thinking is enabled.")
    if "top_p" in body and isinstance(body["top_p"], int | float) and body["top_p"] < 0.95:
        problems.append("`top_p` must be at least 0.95 when thinking is enabled.")
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") in ("any", "tool"):
        problems.append("Thinking may not be enabled when tool_choice forces tool use.")
    return problems


def _cache_mark(block: dict[str, Any], where: str, breakpoints: list[int]) -> list[str]:
    mark = block.get("cache_control")
    if mark is None:
        return []
    breakpoints[0] += 1
    if not isinstance(mark, dict) or mark.get("type") != "ephemeral" or set(mark) - {"type", "ttl"}:
        return [f"{where}.cache_control: expected {{'type': 'ephemeral'}} (optionally a ttl), got {mark!r}"]
    if "ttl" in mark and mark["ttl"] not in ("5m", "1h"):
        return [f"{where}.cache_control.ttl: one of '5m', '1h'"]
    return []


def _text_block(block: Any, where: str, breakpoints: list[int]) -> list[str]:
    if not isinstance(block, dict) or block.get("type") != "text":
        return [f"{where}: expected a text block"]
    problems = []
    if not isinstance(block.get("text"), str) or not block["text"]:
        problems.append(f"{where}.text: text content blocks must be non-empty")
    extra = set(block) - {"type", "text", "cache_control", "citations"}
    if extra:
        problems.append(f"{where}: Extra inputs are not permitted ({sorted(extra)})")
    return problems + _cache_mark(block, where, breakpoints)


def _system_problems(system: Any, breakpoints: list[int]) -> list[str]:
    if system is None:
        return []
    if isinstance(system, str):
        return [] if system else ["system: must not be empty"]
    if not isinstance(system, list) or not system:
        return ["system: a string or a non-empty list of text blocks"]
    return [p for i, b in enumerate(system) for p in _text_block(b, f"system.{i}", breakpoints)]


def _anthropic_messages(messages: Any, breakpoints: list[int]) -> list[str]:
    if not isinstance(messages, list) or not messages:
        return ["messages: at least one message is required"]
    problems: list[str] = []
    previous = None
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in ("user", "assistant"):
            problems.append(
                f"messages.{i}.role: Unexpected role {role!r}. Use the top-level `system` parameter "
                "for a system prompt"
            )
            continue
        if i == 0 and role != "user":
            problems.append('messages.0.role: first message must use the "user" role')
        if role == previous:
            problems.append(f"messages.{i}: roles must alternate between 'user' and 'assistant'")
        previous = role
        content = m.get("content")
        if isinstance(content, str):
            if not content:
                problems.append(f"messages.{i}.content: must not be empty")
        elif isinstance(content, list) and content:
            for j, block in enumerate(content):
                problems += _text_block(block, f"messages.{i}.content.{j}", breakpoints)
        else:
            problems.append(f"messages.{i}.content: a string or a non-empty list of blocks")
        if set(m) - {"role", "content"}:
            problems.append(
                f"messages.{i}: Extra inputs are not permitted ({sorted(set(m) - {'role', 'content'})})"
            )
    return problems


def _tools_problems(body: dict[str, Any], breakpoints: list[int]) -> list[str]:
    problems: list[str] = []
    tools = body.get("tools")
    names: list[str] = []
    if tools is not None:
        if not isinstance(tools, list):
            return ["tools: a list"]
        for i, tool in enumerate(tools):
            name = tool.get("name")
            if not isinstance(name, str) or not _TOOL_NAME.match(name):
                problems.append(f"tools.{i}.name: must match [A-Za-z0-9_-]{{1,64}}")
            names.append(name)
            schema = tool.get("input_schema")
            if not isinstance(schema, dict) or schema.get("type") != "object":
                problems.append(f"tools.{i}.input_schema: must be a JSON schema of type 'object'")
            extra = set(tool) - {"name", "description", "input_schema", "cache_control", "type", "strict"}
            if extra:
                problems.append(f"tools.{i}: Extra inputs are not permitted ({sorted(extra)})")
            problems += _cache_mark(tool, f"tools.{i}", breakpoints)
    choice = body.get("tool_choice")
    if choice is not None:
        kind = choice.get("type") if isinstance(choice, dict) else None
        if kind not in ("auto", "any", "tool", "none"):
            problems.append(f"tool_choice.type: one of auto, any, tool, none (got {kind!r})")
        elif kind == "tool" and choice.get("name") not in names:
            problems.append("tool_choice.name must name one of the tools")
        elif kind in ("any", "tool") and not names:
            problems.append("tool_choice requires tools")
    return problems


# ---------------------------------------------------------------------------------------
# Gemini generateContent
# ---------------------------------------------------------------------------------------

GEMINI_FIELDS = frozenset(
    {
        "contents",
        "systemInstruction",
        "generationConfig",
        "safetySettings",
        "tools",
        "toolConfig",
        "cachedContent",
    }
)
GEMINI_CONFIG = frozenset(
    {
        "stopSequences", "responseMimeType", "responseSchema", "responseJsonSchema",
        "responseModalities", "candidateCount", "maxOutputTokens", "temperature", "topP",
        "topK", "seed", "presencePenalty", "frequencyPenalty", "responseLogprobs",
        "logprobs", "enableEnhancedCivicAnswers", "speechConfig", "thinkingConfig",
        "mediaResolution",
    }
)  # fmt: skip
# The OpenAPI subset `responseSchema` documents; anything else is an unknown name there
# (`responseJsonSchema` takes JSON Schema, `additionalProperties` included).
GEMINI_SCHEMA_FIELDS = frozenset(
    {
        "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
        "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
        "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum",
        "maximum",
    }
)  # fmt: skip


def gemini_problems(body: dict[str, Any]) -> list[str]:
    problems = [f'Invalid JSON payload received. Unknown name "{k}"' for k in body if k not in GEMINI_FIELDS]
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        problems.append("* GenerateContentRequest.contents: contents is not specified")
        contents = []
    previous = None
    for i, c in enumerate(contents):
        role = c.get("role") if isinstance(c, dict) else None
        if role not in ("user", "model"):
            problems.append(f"contents[{i}].role: Please use a valid role: user, model (got {role!r})")
            continue
        if i == 0 and role != "user":
            problems.append("contents[0].role: the conversation must start with a user turn")
        if role == previous:
            problems.append(f"contents[{i}]: roles must alternate between user and model")
        previous = role
        problems += _parts_problems(c.get("parts"), f"contents[{i}]")
    system = body.get("systemInstruction")
    if system is not None:
        if not isinstance(system, dict):
            problems.append("systemInstruction: a Content object")
        else:
            if system.get("role") not in (None, "user", "system"):
                problems.append("systemInstruction.role: must not be a model turn")
            problems += _parts_problems(system.get("parts"), "systemInstruction")
    config = body.get("generationConfig")
    if config is not None:
        problems += _config_problems(config)
    return problems


def _parts_problems(parts: Any, where: str) -> list[str]:
    if not isinstance(parts, list) or not parts:
        return [f"{where}.parts: must contain at least one part"]
    return [
        f"{where}.parts[{j}]: a text part must have non-empty text"
        for j, p in enumerate(parts)
        if not isinstance(p, dict) or not isinstance(p.get("text"), str) or not p["text"]
    ]


def _config_problems(config: Any) -> list[str]:
    if not isinstance(config, dict):
        return ["generationConfig: an object"]
    problems = [
        f"Invalid JSON payload received. Unknown name \"{k}\" at 'generation_config'"
        for k in config
        if k not in GEMINI_CONFIG
    ]
    _number(config, "temperature", 0, 2, problems)
    _number(config, "topP", 0, 1, problems)
    _positive_int(config, "maxOutputTokens", problems)
    stops = config.get("stopSequences")
    if stops is not None and not (isinstance(stops, list) and len(stops) <= 5):
        problems.append("generationConfig.stopSequences: at most 5 strings")
    has_schema = "responseSchema" in config or "responseJsonSchema" in config
    if "responseSchema" in config and "responseJsonSchema" in config:
        problems.append("responseSchema and responseJsonSchema cannot both be set")
    if has_schema and config.get("responseMimeType") != "application/json":
        problems.append("responseMimeType must be application/json with a response schema")
    if "responseSchema" in config:
        problems += _openapi_subset_problems(config["responseSchema"], "responseSchema")
    return problems


# Thinking budgets of the 2.5 models (lowest, highest, whether 0 turns thinking off);
# -1 asks for a dynamic budget everywhere. Levels of the 3 models.
GEMINI_BUDGETS = (
    ("gemini-2.5-pro", 128, 32768, False),
    ("gemini-2.5-flash-lite", 512, 24576, True),
    ("gemini-2.5-flash", 0, 24576, True),
)
GEMINI_LEVELS = {"pro": ("low", "high"), "flash": ("minimal", "low", "medium", "high")}


def gemini_thinking_problems(config: dict[str, Any], model: str) -> list[str]:
    """`generationConfig.thinkingConfig` for `model` (the model id of the URL)."""
    thinking = config.get("thinkingConfig")
    if thinking is None:
        return []
    if not isinstance(thinking, dict):
        return ["generationConfig.thinkingConfig: a ThinkingConfig object"]
    problems = [
        f"Invalid JSON payload received. Unknown name \"{k}\" at 'generation_config.thinking_config'"
        for k in thinking
        if k not in ("thinkingBudget", "thinkingLevel", "includeThoughts")
    ]
    if model.startswith(("gemini-1", "gemini-2.0")):
        return [*problems, "Thinking is not supported for this model."]
    level, budget = thinking.get("thinkingLevel"), thinking.get("thinkingBudget")
    if level is not None and budget is not None:
        problems.append("thinking_budget and thinking_level are not supported together.")
    gemini3 = re.match(r"^gemini-3(\.\d+)?-(pro|flash)", model)
    if level is not None:
        if not model.startswith("gemini-3"):
            problems.append("Thinking level is not supported for this model.")
        elif level not in GEMINI_LEVELS.get(gemini3.group(2) if gemini3 else "flash", ()):
            problems.append(
                f"Invalid value at 'generation_config.thinking_config.thinking_level' ({level!r})"
            )
    if isinstance(budget, int) and not isinstance(budget, bool) and budget != -1:
        for prefix, low, high, off in GEMINI_BUDGETS:
            if model.startswith(prefix):
                if not (low <= budget <= high) or (budget == 0 and not off):
                    problems.append(
                        f"The thinking budget {budget} is invalid. Please choose a value between {low} and {high}."
                    )
                break
    elif budget is not None and budget != -1:
        problems.append("generationConfig.thinkingConfig.thinkingBudget: an integer")
    return problems


def _openapi_subset_problems(schema: Any, where: str) -> list[str]:
    if not isinstance(schema, dict):
        return [f"{where}: a Schema object"]
    problems = [
        f"Invalid JSON payload received. Unknown name \"{k}\" at 'generation_config.{where}'"
        for k in schema
        if k not in GEMINI_SCHEMA_FIELDS
    ]
    for key, sub in (schema.get("properties") or {}).items():
        problems += _openapi_subset_problems(sub, f"{where}.properties[{key}]")
    if "items" in schema:
        problems += _openapi_subset_problems(schema["items"], f"{where}.items")
    for i, sub in enumerate(schema.get("anyOf") or []):
        problems += _openapi_subset_problems(sub, f"{where}.anyOf[{i}]")
    return problems
