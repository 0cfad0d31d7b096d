"""The error tree. Callers branch on types, never on message strings.

VeraError
├── Interrupted          Ctrl-C where vera can say what to do next: one line, exit code 130
├── BudgetReached        the run's --max-cost would be passed by the next call: it is not
│                        sent, the work it belonged to is left undone (never failed)
├── WaitLimitReached     the run waited --max-wait for its batches: the work waiting on
│                        them is left undone (never failed), the batches kept for a resume
├── LimitsLost           the Redis holding the shards' shared limits stopped answering:
│                        the run stops, the work in flight is left undone (never failed)
├── UserError            bad input from the user: one clear line, exit code 1
│   ├── DataError        a data file (rubric, personas, transcripts) is wrong; names file:line
│   ├── ConfigError      a run config, provider profile or command-line value is wrong
│   └── StorageError     a file or folder vera must write cannot be written (read-only,
│                        full disk, no permission); names the path and what it is
└── ProviderError        a call to a model endpoint failed; names the provider profile
    ├── TransientError   worth retrying
    │   ├── RateLimitError       HTTP 429 (carries Retry-After when the server sent one)
    │   ├── ServerError          HTTP 5xx
    │   ├── CallTimeoutError     no complete answer within the profile's timeout
    │   ├── ConnectError         connection refused / reset / DNS
    │   └── BadResponseError     malformed body, or no text where text was expected
    └── FatalProviderError  will never succeed by retrying
        ├── AuthError            401/403, missing key
        └── RequestError         other 4xx (bad request, unknown model, ...)
"""

from __future__ import annotations


class VeraError(Exception):
    """Base of every error vera raises on purpose."""


class Interrupted(VeraError):
    """Ctrl-C at a point where the message can say what is saved and how to go on."""


class BudgetReached(VeraError):
    """A call was not sent: its worst-case cost would take the run past its budget
    (vera.clients.budget). The work it belonged to stays undone, to be resumed with a
    larger budget; it is neither a provider failure nor the chatbot's. Its message, and
    the reason a run stopped on its budget, start with `PREFIX` (the run status reads it:
    vera.report.shared._outcome)."""

    PREFIX = "budget reached: "


class WaitLimitReached(VeraError):
    """The run has waited its `--max-wait` for pending batches (vera.clients.batching).
    The work waiting on them stays undone, to be resumed (the batches stay in the run's
    journal, so a resume polls them and submits nothing twice); it is neither a provider
    failure nor the chatbot's. Its message, and the reason the run stopped, start with
    `PREFIX` (the run status reads it: vera.report.shared._outcome)."""

    PREFIX = "waited for batches: "


class LimitsLost(VeraError):
    """The Redis server that holds the shards' shared account limits (`--limits-url`)
    stayed away longer than a run waits for it (vera.clients.shared_limits). No call can
    be admitted without it, so the run stops as on a fatal error; the work in flight is
    left undone for a resume: infrastructure, neither a provider failure nor the
    chatbot's."""


class UserError(VeraError):
    """A mistake in the user's input; reported as one line without a traceback."""


class DataError(UserError):
    """A data file is malformed. `where` is "file" or "file:line"."""

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}")


class ConfigError(UserError):
    """A run configuration, provider profile or command-line value is wrong."""


class StorageError(UserError):
    """A file or folder vera must write cannot be written: a read-only or full disk, or
    no permission. The message names the path and what could not be written."""


def storage_error(path: object, what: str, exc: BaseException) -> StorageError:
    """One line for an OSError (or SQLite error) met while writing `what` at `path`."""
    reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return StorageError(f"{path}: cannot write {what}: {reason}")


class ProviderError(VeraError):
    """A call to a model endpoint failed. `provider` is the profile name."""

    def __init__(self, provider: str, message: str, *, status: int | None = None) -> None:
        self.provider = provider
        self.status = status
        self.message = message
        super().__init__(f"[{provider}] {message}")


class TransientError(ProviderError):
    """Retrying may succeed. `retry_after` is the wait the server named (Retry-After,
    a rate-limit reset header), in seconds; it pauses the whole account."""

    def __init__(
        self,
        provider: str,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(provider, message, status=status)
        self.retry_after = retry_after


class RateLimitError(TransientError):
    def __init__(
        self,
        provider: str,
        message: str,
        *,
        status: int | None = 429,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(provider, message, status=status, retry_after=retry_after)


class ServerError(TransientError):
    pass


class CallTimeoutError(TransientError):
    pass


class CallCancelledError(ProviderError):
    """The run stopped (a second Ctrl-C, the grace period's end, a failure beside it)
    while the call was sent and unanswered: the provider may bill it all the same, so it
    is recorded, at its worst case where one is known (vera.clients.limits)."""


class ConnectError(TransientError):
    """`sent` is False when the connection was never made, so the request cannot have
    been processed (or billed)."""

    def __init__(self, provider: str, message: str, *, sent: bool = True) -> None:
        super().__init__(provider, message)
        self.sent = sent


class BadResponseError(TransientError):
    pass


class FatalProviderError(ProviderError):
    """Retrying will not help (bad key, bad request, unknown model)."""


class AuthError(FatalProviderError):
    pass


class RequestError(FatalProviderError):
    pass
