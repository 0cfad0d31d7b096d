"""What every wire-protocol client has in common: an aiohttp session, an endpoint, its
headers (the key among them), and one HTTP request per call.

A protocol says only how a `ChatRequest` becomes a request body (`encode_request`) and
how a response body becomes a `Completion` (`decode_reply`); the transport, the mapping
of HTTP errors onto vera's error tree (vera.clients._transport) and the repr that never
shows a header are here, once. Usage comes back in each `Completion`; what it costs is
the limits' business (vera.clients.limits.Prices), not the protocol's.
"""

from __future__ import annotations

from typing import Any

import aiohttp

from vera.clients._transport import encode, error_from_response, transport_error
from vera.clients.base import ChatRequest
from vera.clients.meter import METER
from vera.errors import ProviderError
from vera.inputs import redact
from vera.records import Completion, WireRequest


class ProviderClient:
    """The base of the protocol clients; a `ChatClient` once a protocol fills in the
    two hooks."""

    __slots__ = ("_headers", "_session", "_url", "model", "name")

    method = "POST"
    # Whether the recorder keeps the request as sent (`WireRequest`): only for a protocol
    # whose body is rendered from a user's template, which vera's kept messages do not show.
    keeps_wire = False

    def __init__(
        self, session: aiohttp.ClientSession, *, name: str, model: str, url: str, headers: dict[str, str]
    ) -> None:
        self.name = name
        self.model = model
        self._session = session
        self._url = url
        self._headers = headers  # holds the key: never in a repr, an error or a log

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, model={self.model!r}, url={self._url!r})"

    async def chat(self, request: ChatRequest) -> Completion:
        # `send`'s body, written out here: one coroutine less for every call (each
        # resume of the call passes through every coroutine it is awaited in).
        body = encode(self.encode_request(request))
        url = self.url_for(request)
        if self.keeps_wire and (meter := METER.get()) is not None:
            # Before the send: a call that fails was sent all the same. Redacted: a
            # template may put a `${VAR}` token in the URL's query or the body.
            meter.wire = WireRequest(self.method, redact(url), redact(body.decode("utf-8", "replace")))
        try:
            async with self._session.request(self.method, url, data=body, headers=self._headers) as response:
                raw = await response.read()
                status = response.status
                if status >= 300:
                    raise error_from_response(self.name, status, response.headers, raw)
        except ProviderError:
            raise
        except (aiohttp.ClientError, OSError) as exc:
            raise transport_error(self.name, exc) from None
        return self.decode_reply(raw, request)

    def headers(self) -> dict[str, str]:
        """A copy of the request headers (the key among them), for a client of the same
        provider's other endpoints (its batch API); never for a log."""
        return dict(self._headers)

    def url_for(self, request: ChatRequest) -> str:
        """Where this request goes (the endpoint; the HTTP chatbot adds a session id)."""
        return self._url

    def encode_request(self, request: ChatRequest) -> Any:
        """The JSON body of the protocol's request for `request`."""
        raise NotImplementedError

    def decode_reply(self, raw: bytes, request: ChatRequest) -> Completion:
        """The `Completion` in the body of a successful response."""
        raise NotImplementedError
