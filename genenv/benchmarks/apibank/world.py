"""Per-episode back-end state and the API registry machinery shared by both API levels.

A :class:`World` holds the episode's databases. The init databases are loaded once per
adapter (read-only, shared by every episode) and a world copies a database lazily, the
first time an API of the episode may write to it (copy-on-write), so starting an episode
is cheap even though ``ImageCaptioning.json`` is 2.5 MB. The shared init databases are
never mutated; API outputs are deep-copied before they leave the back-end.

An :class:`ApiImpl` is one API: its name, its Python implementation (a function of the
world and the coerced keyword arguments that returns the output or raises), its parameter
list and the shape of its result dict. :func:`run_api` reproduces the upstream
``API.call`` contract: ``{'api_name', 'input', 'output', 'exception'}`` where any error
inside the API becomes ``output=None, exception=str(error)``.
"""

from __future__ import annotations

import copy
import datetime
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .calls import ArgumentError


@dataclass
class World:
    """Databases of one episode (copy-on-write over the shared init databases)."""

    init_db: dict[str, Any]
    level: str = "level-1"
    db: dict[str, Any] = field(default_factory=dict)
    #: per-tool state that upstream keeps on the tool instance (ForgotPassword, OpenBankAccount)
    tool_state: dict[str, Any] = field(default_factory=dict)

    def read(self, name: str) -> Any:
        """The database ``name`` for reading (callers must not mutate it)."""
        if name in self.db:
            return self.db[name]
        return self.init_db.get(name, {})

    def write(self, name: str) -> Any:
        """The episode's private, mutable copy of database ``name``."""
        if name not in self.db:
            self.db[name] = copy.deepcopy(self.init_db.get(name, {}))
        return self.db[name]

    def check_token(self, token: Any) -> str:
        """Token -> username via the Account database (upstream CheckToken)."""
        accounts = self.read("Account")
        for username, record in accounts.items():
            if isinstance(record, dict) and record.get("token") == token:
                return username
        raise Exception("The token is invalid.")


ApiFunc = Callable[..., Any]


@dataclass(frozen=True)
class ApiImpl:
    """One API: implementation and call contract."""

    name: str
    func: ApiFunc
    #: parameter names in signature order
    params: tuple[str, ...]
    #: optional parameters and their defaults (upstream keyword defaults)
    defaults: dict[str, Any] = field(default_factory=dict)
    #: ``call(self, status, **kwargs)`` style: ``input`` holds only the given arguments
    kwargs_style: bool = False
    #: whether the result dict carries ``api_name`` (CheckToken, DeleteAccount,
    #: ForgotPassword and RegisterUser omit it upstream)
    with_api_name: bool = True
    #: ``input`` is always ``None`` (GetToday)
    input_none: bool = False
    #: calls ignore unknown keyword arguments (GetToday takes ``**kwargs``)
    accepts_any: bool = False

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(p for p in self.params if p not in self.defaults)


def run_api(impl: ApiImpl, world: World, args: dict[str, Any]) -> dict[str, Any]:
    """Execute ``impl`` with already-coerced ``args``; returns the upstream result dict.

    Raises :class:`ArgumentError` (``missing_argument``) when a required parameter is
    absent - upstream this is a ``TypeError`` before the API body runs.
    """
    if impl.kwargs_style:
        first = impl.params[0]
        if first not in args:
            raise ArgumentError(
                "missing_argument",
                f"call() missing 1 required positional argument: '{first}'",
            )
        call_args = dict(args)
        input_parameters: Any = {first: args[first]}
        input_parameters.update({k: v for k, v in args.items() if k != first})
    elif impl.input_none:
        call_args = {}
        input_parameters = None
    else:
        missing = [p for p in impl.required if p not in args]
        if missing:
            names = " and ".join(f"'{m}'" for m in missing)
            plural = "s" if len(missing) > 1 else ""
            raise ArgumentError(
                "missing_argument",
                f"call() missing {len(missing)} required positional argument{plural}: {names}",
            )
        call_args = {p: args.get(p, impl.defaults.get(p)) for p in impl.params}
        input_parameters = dict(call_args)
    try:
        output = impl.func(world, **call_args)
        exception = None
    except RecursionError:
        output, exception = None, "maximum recursion depth exceeded"
    except Exception as exc:  # noqa: BLE001 - upstream turns every API error into text
        output, exception = None, str(exc)
    result: dict[str, Any] = {}
    if impl.with_api_name:
        result["api_name"] = impl.name
    result["input"] = _plain(input_parameters)
    result["output"] = _plain(output)
    result["exception"] = exception
    return result


def _plain(value: Any) -> Any:
    """Deep, JSON-like copy (tuples become lists) so results never alias state."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# -- helpers shared by the API implementations --------------------------------------------


def strptime(text: Any, fmt: str) -> datetime.datetime:
    """``datetime.strptime`` (same error texts as upstream); non-strings raise TypeError."""
    return datetime.datetime.strptime(text, fmt)


def pad_year(text: str) -> str:
    """Upstream ``format_check`` prelude: strip and left-pad a short year with zeros."""
    text = text.strip()
    parts = text.split("-")
    if len(parts) == 3 and len(parts[0]) != 4:
        parts[0] = parts[0].zfill(4)
        text = "-".join(parts)
    return text


def normalize_datetime(text: Any, fmt: str) -> str | Exception:
    """Upstream ``format_check``: normalised text, or the parsing exception (not raised)."""
    try:
        return strptime(pad_year(text), fmt).strftime(fmt)
    except Exception as exc:  # noqa: BLE001
        return exc


def load_json(path) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


__all__ = [
    "ApiImpl",
    "World",
    "load_json",
    "normalize_datetime",
    "pad_year",
    "run_api",
    "strptime",
]
