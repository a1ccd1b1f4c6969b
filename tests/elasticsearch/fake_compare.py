"""Comparing FakeElasticsearch's answers with a real node's, call by call (used by
``test_fake_matches_real.py``; a plain module so that other tests may use it too).

A call is sent, as the operator's client sends it, to both servers; each answer becomes a *view*:
its HTTP status and body flattened to ``{path: value}`` (``status``, ``body.license.type``,
``body.error.root_cause[0].reason``, ``body.persistent["cluster.remote.a.seeds"][0]``: a key with a
dot is quoted, so that flat settings and nested ones differ; empty maps and lists are values,
so that ``{}`` and an absent field differ, as in :mod:`tests.conformance.compare`). A value that legitimately differs between two servers
(a uid, a date, a version, a node count) is *masked by path*: only its JSON type is kept
(``<string>``, ``<int>``…); an object keyed by ids (``GET _nodes``' ``nodes``, keyed by node id)
has its keys compared as ``<id>``, ``<id 2>``… Every other value, and every key, must agree.

What does not agree is either fixed in the fake or a row of
``tests/fakes/FAKE_ELASTICSEARCH_DIFFERENCES.md``: ``| call | field | fake | real | reason |``,
where ``field`` is a path of the view (``*`` stands for any text). A row tolerates exactly the
fields it names of exactly that call; a row that no longer matches a difference is stale and
fails too, so the table cannot outlive what it documents. A row naming one field (no ``*``)
shows both values as the view renders them (:func:`render`), and those must be the values seen.
"""

from __future__ import annotations

import base64
import json
import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from stackflow.elastic.client import ElasticsearchApi
from tests.conformance.compare import path_pattern

DOCUMENT = Path(__file__).resolve().parents[1] / "fakes" / "FAKE_ELASTICSEARCH_DIFFERENCES.md"
ABSENT = "<absent>"
#: The credentials a call is made with.
USER = "the user"
WRONG_PASSWORD = "a wrong password"
UNKNOWN_API_KEY = "an unknown API key"


@dataclass(frozen=True)
class Request:
    """One HTTP request: method, path, query parameters and JSON body, as the client sends them."""

    method: str
    path: str
    params: Mapping[str, str] = field(default_factory=dict)
    body: Any = None

    def __str__(self) -> str:
        query = "&".join(f"{name}={value}" for name, value in self.params.items())
        return f"{self.method} {self.path}{'?' + query if query else ''}"


#: How the operator's client makes a call (given a client with the call's credentials).
OperatorCall = Callable[[ElasticsearchApi], Awaitable[object]]


@dataclass(frozen=True)
class Call:
    """A call compared on both servers.

    ``before`` brings both servers to the state the call needs and ``after`` undoes it (each
    must answer 200); ``masks`` are the view paths whose values legitimately differ;
    ``id_keys`` the paths of objects keyed by ids (``body.nodes``, keyed by node id), whose keys
    are compared as ``<id>``, ``<id 2>``… in the answer's order; ``operator`` is how the
    operator's client sends ``request`` (None for a call it never makes, such as reading the
    cluster settings nested; the comparison is then about the fake alone).
    """

    name: str
    request: Request
    operator: OperatorCall | None = None
    credentials: str = USER
    masks: tuple[str, ...] = ()
    id_keys: tuple[str, ...] = ()
    before: tuple[Request, ...] = ()
    after: tuple[Request, ...] = ()


@dataclass(frozen=True)
class Answer:
    """An HTTP answer: status and decoded JSON body (the text when it is not JSON)."""

    status: int
    body: Any


@dataclass(frozen=True)
class Server:
    """Where and how to send requests: base URL, TLS, and the user's credentials."""

    url: str
    user: str
    password: str
    ssl_context: ssl.SSLContext | None = None
    server_hostname: str | None = None

    def authorization(self, credentials: str) -> str:
        """The Authorization header for ``credentials``."""
        if credentials == UNKNOWN_API_KEY:
            return f"ApiKey {_b64('no-such-key:no-such-secret')}"
        password = "not-the-password" if credentials == WRONG_PASSWORD else self.password
        return f"Basic {_b64(f'{self.user}:{password}')}"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


async def send(server: Server, request: Request, *, credentials: str = USER) -> Answer:
    """Send ``request`` as ``AiohttpElasticsearchClient`` sends its requests (query parameters,
    a JSON body) and return the answer."""
    async with (
        aiohttp.ClientSession(
            headers={"Authorization": server.authorization(credentials)},
            timeout=aiohttp.ClientTimeout(total=60),
        ) as session,
        session.request(
            request.method,
            f"{server.url}{request.path}",
            params=dict(request.params) or None,
            json=request.body,
            ssl=server.ssl_context if server.ssl_context is not None else False,
            server_hostname=server.server_hostname,
        ) as response,
    ):
        text = await response.text()
        status = response.status
    try:
        return Answer(status, json.loads(text))
    except ValueError:
        return Answer(status, text)


def type_name(value: Any) -> str:
    """A JSON value's type, as a masked value shows it."""
    if value is None:
        return "<null>"
    if isinstance(value, bool):
        return "<bool>"
    if isinstance(value, int):
        return "<int>"
    if isinstance(value, float):
        return "<float>"
    if isinstance(value, str):
        return "<string>"
    return "<object>" if isinstance(value, dict) else "<list>"


def _key(name: str) -> str:
    return f"[{json.dumps(name)}]" if any(mark in name for mark in '.[]"') else f".{name}"


def flatten(value: Any, prefix: str) -> dict[str, Any]:
    """``{path: scalar}`` for a JSON value (empty containers are scalars)."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for name, item in value.items():
            out.update(flatten(item, f"{prefix}{_key(str(name))}"))
        return out
    if isinstance(value, list) and value:
        out = {}
        for index, item in enumerate(value):
            out.update(flatten(item, f"{prefix}[{index}]"))
        return out
    return {prefix: value}


def rekeyed(body: Any, path: str) -> Any:
    """``body`` with the keys of the object at view path ``path`` (``body.nodes``; plain keys
    only) replaced by ``<id>``, ``<id 2>``… in the answer's order (anything else as it is)."""

    def walk(value: Any, rest: list[str]) -> Any:
        if not isinstance(value, dict):
            return value
        if not rest:
            return {
                "<id>" if number == 1 else f"<id {number}>": item
                for number, item in enumerate(value.values(), start=1)
            }
        return {
            key: walk(item, rest[1:]) if key == rest[0] else item for key, item in value.items()
        }

    return walk(body, path.split(".")[1:])


def view(
    answer: Answer, masks: tuple[str, ...] = (), id_keys: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The answer flattened to ``{path: value}``, the keys of ``id_keys`` objects replaced
    (:func:`rekeyed`), masked paths reduced to their JSON type."""
    body = answer.body
    for path in id_keys:
        body = rekeyed(body, path)
    flat = {**flatten(answer.status, "status"), **flatten(body, "body")}
    patterns = [path_pattern(mask) for mask in masks]
    return {
        path: type_name(value) if any(p.match(path) for p in patterns) else value
        for path, value in flat.items()
    }


def render(value: Any) -> str:
    """A view's value as the differences table shows it (JSON, or ``<absent>``)."""
    return value if value == ABSENT else json.dumps(value)


# -- the table of differences ----------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """A documented difference: the call, the view path (``*`` for any text), what the fake and
    the real node answer there, and why it is left."""

    call: str
    field: str
    fake: str
    real: str
    reason: str

    @property
    def exact(self) -> bool:
        """Whether the row names one field (its values are then checked)."""
        return "*" not in self.field

    def covers(self, call: str, path: str) -> bool:
        """Whether the row tolerates ``path`` of ``call``."""
        return self.call == call and path_pattern(self.field).match(path) is not None


TABLE_HEADER = "| call | field | fake | real | reason |"


def _unquote(cell: str) -> str:
    """A cell that is one code span, without its backticks (any other cell as it is)."""
    cell = cell.strip()
    one_span = len(cell) >= 2 and cell[0] == cell[-1] == "`" and cell.count("`") == 2
    return cell[1:-1] if one_span else cell


def read_rows(text: str) -> list[Row]:
    """The rows of the differences table in ``text`` (the markdown document)."""
    lines = text.splitlines()
    if TABLE_HEADER not in lines:
        raise ValueError(f"no table headed {TABLE_HEADER!r}")
    rows: list[Row] = []
    for line in lines[lines.index(TABLE_HEADER) + 2 :]:
        if not line.startswith("|"):
            break
        cells = line.strip().removeprefix("|").removesuffix("|").split(" | ")
        if len(cells) != 5:
            raise ValueError(f"a row of the differences table has {len(cells)} cells: {line}")
        call, path, fake, real, reason = (cell.strip() for cell in cells)
        rows.append(Row(_unquote(call), _unquote(path), _unquote(fake), _unquote(real), reason))
    return rows


# -- comparing ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldDiff:
    """One path whose value differs (``<absent>`` when a side lacks it)."""

    path: str
    fake: Any
    real: Any

    def render(self) -> str:
        """``path`` with both values."""
        return f"  {self.path}\n      fake: {render(self.fake)}\n      real: {render(self.real)}"


@dataclass
class Comparison:
    """The outcome for one call."""

    call: Call
    fake: Answer
    real: Answer
    #: Differences no row documents.
    failures: list[FieldDiff] = field(default_factory=list)
    #: Rows of this call that matched no difference (stale documentation).
    stale: list[Row] = field(default_factory=list)
    #: Rows naming one field whose fake or real value is not what was seen.
    untrue: list[tuple[Row, FieldDiff]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Every difference documented, every row of the call still a true difference."""
        return not (self.failures or self.stale or self.untrue)

    def report(self) -> str:
        """A field-by-field account of what failed."""
        lines = [f"{self.call.name}: {self.call.request}"]
        if self.failures:
            lines.append(
                f"{len(self.failures)} difference(s) neither fixed in the fake nor in "
                f"{DOCUMENT.name}:"
            )
            lines += [diff.render() for diff in self.failures]
        for row in self.stale:
            lines.append(f"documented difference no longer seen (remove its row): {row.field}")
        for row, diff in self.untrue:
            lines.append(
                f"the row of {row.field} says fake {row.fake}, real {row.real}; "
                f"seen: fake {render(diff.fake)}, real {render(diff.real)}"
            )
        lines.append(f"fake answered {self.fake.status}: {json.dumps(self.fake.body)[:600]}")
        lines.append(f"real answered {self.real.status}: {json.dumps(self.real.body)[:600]}")
        return "\n".join(lines)


def _same(left: Any, right: Any) -> bool:
    # 1 and 1.0 are the same JSON number, True and 1 are not.
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    return bool(left == right)


def compare(call: Call, fake: Answer, real: Answer, rows: list[Row]) -> Comparison:
    """Compare the two answers to ``call`` under the documented ``rows``."""
    result = Comparison(call, fake, real)
    fake_view = view(fake, call.masks, call.id_keys)
    real_view = view(real, call.masks, call.id_keys)
    used: list[Row] = []
    for path in list(dict.fromkeys([*fake_view, *real_view])):
        diff = FieldDiff(path, fake_view.get(path, ABSENT), real_view.get(path, ABSENT))
        if _same(diff.fake, diff.real):
            continue
        covering = [row for row in rows if row.covers(call.name, path)]
        if not covering:
            result.failures.append(diff)
        for row in covering:
            if row not in used:
                used.append(row)
            if row.exact and (row.fake, row.real) != (render(diff.fake), render(diff.real)):
                result.untrue.append((row, diff))
    result.stale = [row for row in rows if row.call == call.name and row not in used]
    return result
