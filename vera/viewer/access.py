"""Who may talk to `vera view` and `vera review`: the Host names they answer to, and the
access key they ask for when serving the network.

DNS rebinding is the attack these guard against: a web page on attacker.example points
its own name at the machine running the server, and the victim's browser, which thinks
it is still talking to attacker.example, lets that page read the answers. The browser
then sends `Host: attacker.example:PORT`, so a server that accepts only the names it was
given refuses it. On loopback those names are the loopback ones; with `--allow-remote`
they are `--host` (unless it is a wildcard such as 0.0.0.0) and every `--allowed-host`,
and a wildcard with no name given is refused at start (it would answer to no one, or,
if it answered to any name, to the attacker).

With `--allow-remote` anyone on the network can reach the port, so the server also asks
for a key: a fresh random one each start, printed in the address (`?key=...`). The first
request carrying it gets a cookie (HttpOnly, SameSite=Strict, this server's own name)
and is redirected to the same address without it; every later request must carry the
cookie. A request without either is refused with 401 and one line saying why.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
import socket
from collections.abc import Awaitable, Callable, MutableMapping, Sequence

from aiohttp import web

from vera.errors import UserError

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

ALLOWED_HOSTS = web.AppKey("allowed_hosts", frozenset)
ACCESS_KEY = web.AppKey("access_key", str)

KEY_PARAM = "key"
_NAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}))*\.?$"
)


def is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def is_wildcard(address: str) -> bool:
    """0.0.0.0 or :: (every address of the machine): not a name anyone reaches it by."""
    try:
        return ipaddress.ip_address(address).is_unspecified
    except ValueError:
        return False


def check_name(name: str) -> str:
    """A `--allowed-host` value, lower-case, or a UserError: a host name or an address,
    no port, no scheme, no path."""
    bare = name.strip().lower()
    inner = bare[1:-1] if bare.startswith("[") and bare.endswith("]") else bare
    try:
        ipaddress.ip_address(inner)
    except ValueError:
        if not _NAME.match(bare):
            raise UserError(
                f"--allowed-host {name!r}: give a host name or an address (such as "
                "review.lab.example or 192.168.1.20), without a port or http://"
            ) from None
        return bare.rstrip(".")
    return inner


def check_names(host: str, names: Sequence[str], *, allow_remote: bool) -> tuple[str, ...]:
    """The checked `--allowed-host` names. With `--allow-remote` and a wildcard `--host`,
    at least one is needed: the server must know which names it is reached by."""
    checked = tuple(dict.fromkeys(check_name(n) for n in names))
    if allow_remote and is_wildcard(host) and not checked:
        raise UserError(
            f"--host {host} --allow-remote: name the host names other machines will use to reach it "
            "with --allowed-host NAME (repeatable); requests naming any other host are refused, so a "
            "web page elsewhere cannot reach it by DNS rebinding"
        )
    return checked


def _shown(name: str) -> str:
    return f"[{name}]" if ":" in name else name


def host_names(sock: socket.socket, host: str = "", names: Sequence[str] = ()) -> tuple[str, frozenset[str]]:
    """The URL to print for a socket, and the Host headers to accept: the loopback names,
    the address bound (unless a wildcard), `host` as given (unless a wildcard) and `names`,
    each with the port (and bare on port 80, where browsers leave the port out)."""
    address, port = sock.getsockname()[:2]
    accepted: list[str] = []
    if not is_wildcard(address):
        accepted.append(address)
    if host and not is_wildcard(host):
        accepted.append(host.strip().lower())
    accepted += names
    accepted += ["localhost", "127.0.0.1", "::1"]
    allowed = {f"{_shown(n)}:{port}" for n in accepted}
    if port == 80:
        allowed |= {_shown(n) for n in accepted}
    # The printed address is one a browser can use: a wildcard bind prints the first name.
    first = address if not is_wildcard(address) else (names[0] if names else address)
    return f"http://{_shown(first)}:{port}/", frozenset(allowed)


def new_key() -> str:
    return secrets.token_urlsafe(24)


def key_cookie(key: str) -> str:
    """The cookie's name: one per key, so two servers on one machine (a viewer and a
    review, on two ports: cookies ignore ports) do not overwrite each other's."""
    return "vera_key_" + hashlib.sha256(key.encode()).hexdigest()[:12]


# ---------------------------------------------------------------------------------------
# Middlewares
# ---------------------------------------------------------------------------------------


@web.middleware
async def known_host(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refuse a request whose Host header is not one of the server's names (400)."""
    allowed: frozenset[str] = request.app[ALLOWED_HOSTS]
    if request.headers.get("Host", "").lower().rstrip(".") not in allowed:
        raise web.HTTPBadRequest(text="unexpected Host header")
    return await handler(request)


@web.middleware
async def key_required(request: web.Request, handler: Handler) -> web.StreamResponse:
    """With an access key set (remote mode): the key in the address once, the cookie after."""
    key = request.app.get(ACCESS_KEY, "")
    if not key:
        return await handler(request)
    cookie = key_cookie(key)
    if hmac.compare_digest(request.cookies.get(cookie, "").encode(), key.encode()):
        return await handler(request)
    given = request.query.get(KEY_PARAM, "")
    if given and hmac.compare_digest(given.encode(), key.encode()):
        # Set the cookie and drop the key from the address (history, bookmarks, screen).
        query = request.rel_url.query.copy()
        query.popall(KEY_PARAM)
        response = web.HTTPSeeOther(location=str(request.rel_url.with_query(query)))
        response.set_cookie(cookie, key, httponly=True, samesite="Strict", path="/")
        raise response
    raise web.HTTPUnauthorized(
        text="this server was started with --allow-remote: open it with the address it printed "
        "(the one with ?key=...)"
    )


# The list page runs its own script and nothing else; pages and the card run none.
LIST_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


@web.middleware
async def _read_only(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.method not in ("GET", "HEAD"):
        raise web.HTTPMethodNotAllowed(request.method, ["GET", "HEAD"])
    return await handler(request)


@web.middleware
async def _safe_headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        _add_safe_headers(exc.headers)
        raise
    _add_safe_headers(response.headers)
    return response


# For the runs list of `vera view FOLDER` (vera.viewer.runs), which wraps the run viewers.
SAFE_HEADERS = _safe_headers


READ_ONLY = _read_only


def _add_safe_headers(headers: MutableMapping[str, str]) -> None:
    headers.setdefault("Content-Security-Policy", LIST_CSP)
    headers["X-Content-Type-Options"] = "nosniff"
    headers["X-Frame-Options"] = "DENY"
    headers["Referrer-Policy"] = "no-referrer"
    headers["Cross-Origin-Resource-Policy"] = "same-origin"
    # Transcripts must not linger in a browser's disk cache.
    headers["Cache-Control"] = "no-store"
