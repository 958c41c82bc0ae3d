"""genenv environments over OpenEnv's protocol: the wire types, the server-side environment, the app and the client.

``python -m genenv.serve +bench=NAME`` serves a benchmark with :func:`build_app` through OpenEnv's own server
(``/ws`` sessions, ``/reset``, ``/step``, ``/state``, ``/schema``, ``/health``); :class:`GenEnvClient` is OpenEnv's
``EnvClient`` for it. Each WebSocket session owns one :class:`~genenv.envs.tool_env.ToolEnv` (one episode at a time;
``reset`` starts the next), so sessions never share an episode. An action is the agent's turn as text, exactly what
``ToolEnv.step`` takes; the reward is the benchmark's official score, given when the episode ends.

:class:`SessionGuard` stands between OpenEnv's ``/ws`` handler and the socket: a frame the protocol does not allow
(binary, invalid JSON, JSON that is not an object, an unknown ``type``, fields of the wrong type or unknown) gets an
error reply naming the cause and never reaches the handler, so the session goes on; a client that goes away
mid-episode costs one log line, not a traceback.

Needs the ``openenv`` extra: ``pip install genenv[openenv]``.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

try:
    from fastapi import FastAPI
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient
    from openenv.core.env_server import HTTPEnvServer
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import (
        Action,
        ConcurrencyConfig,
        EnvironmentMetadata,
        Observation,
        State,
        WSCloseMessage,
        WSErrorCode,
        WSErrorResponse,
        WSResetMessage,
        WSStateMessage,
        WSStepMessage,
    )
except ImportError as error:  # pragma: no cover - exercised only without the optional extra
    raise ImportError(
        "genenv's OpenEnv integration needs the openenv extra: pip install 'genenv[openenv]' and then "
        "pip install --no-deps openenv==0.10.0"
    ) from error
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError, create_model

from genenv.benchmarks.base import BenchmarkAdapter, Task
from genenv.envs.tool_env import ToolEnv

__all__ = [
    "ActionTooLongError",
    "GenEnvAction",
    "GenEnvClient",
    "GenEnvObservation",
    "GenEnvReset",
    "GenEnvState",
    "SessionGuard",
    "ToolEnvEnvironment",
    "action_type",
    "build_app",
]


class GenEnvAction(Action):
    """One agent turn: tool calls in the benchmark's format, or the final answer."""

    text: str = Field(description="the agent's turn as text, as ToolEnv.step takes it")


logger = logging.getLogger(__name__)


class GenEnvReset(BaseModel):
    """What a ``reset`` may ask for (the ``data`` of a ``reset`` message); any other field is refused."""

    model_config = ConfigDict(extra="forbid")

    seed: StrictInt | None = Field(default=None, ge=0, description="draws the task when task_id is not given")
    episode_id: StrictStr | None = Field(default=None, description="the episode's name in the session's state")
    task_id: StrictStr | None = Field(default=None, description="the task of the served split to play")


class GenEnvObservation(Observation):
    """What the agent sees after ``reset`` or ``step``; ``reward`` is the official score once ``done``."""

    text: str = Field(description="the prompt (reset), the tool output or the next user message (step)")
    role: str | None = Field(default=None, description="'tool' or 'user': who speaks ``text`` (step, not done)")
    messages: list[dict[str, Any]] | None = Field(default=None, description="reset: the system and user messages")
    tools: list[dict[str, Any]] | None = Field(default=None, description="reset: the tools, OpenAI function schemas")
    task: dict[str, Any] | None = Field(default=None, description="the task, without its gold answer")
    family: str | None = None
    turn: int = 0
    error: str | None = Field(default=None, description="why the turn was refused or a tool failed, if it was")
    truncated: bool = Field(default=False, description="the episode hit its turn limit")
    score_breakdown: dict[str, Any] | None = Field(default=None, description="how the benchmark scored the episode")


class GenEnvState(State):
    """The session's episode: ``episode_id`` and ``step_count`` (OpenEnv's) plus the task being played."""

    benchmark: str = ""
    split: str = ""
    task_id: str | None = None
    family: str | None = None
    done: bool = True


def action_type(max_chars: int) -> type[GenEnvAction]:
    """:class:`GenEnvAction` whose schema states the server's limit of ``max_chars`` characters on ``text`` (the
    environment enforces it, so OpenEnv's client shows the refusal's message)."""
    if max_chars < 1:
        raise ValueError(f"max_action_chars must be at least 1, got {max_chars}")
    description = f"the agent's turn as text, at most {max_chars} characters"
    text = (str, Field(description=description, json_schema_extra={"maxLength": max_chars}))
    return create_model("GenEnvAction", __base__=GenEnvAction, text=text)


class ActionTooLongError(ValueError):
    """An action over the server's ``max_action_chars``: refused before it reaches the episode (no turn is spent)."""


class ToolEnvEnvironment(Environment[GenEnvAction, GenEnvObservation, GenEnvState]):
    """OpenEnv's ``Environment`` over a fresh :class:`ToolEnv` of ``adapter`` playing ``tasks``."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(
        self,
        adapter: BenchmarkAdapter,
        tasks: Sequence[Task],
        split: str,
        *,
        max_action_chars: int = 32_768,
        **env_kwargs: Any,
    ) -> None:
        super().__init__()
        self._env = ToolEnv(adapter, tasks=list(tasks), split=split, max_action_chars=max_action_chars, **env_kwargs)
        self.max_action_chars = max_action_chars
        self._by_id = {task.task_id: task for task in tasks}
        self._state = GenEnvState(benchmark=adapter.name, split=split)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, task_id: str | None = None, **extra: Any
    ) -> GenEnvObservation:
        """Start an episode: the task ``task_id`` of the served split, or one drawn with ``seed``. A field of the wrong
        type or one :class:`GenEnvReset` does not know raises ``ValueError`` naming it."""
        try:
            GenEnvReset(seed=seed, episode_id=episode_id, task_id=task_id, **extra)
        except ValidationError as error:
            raise ValueError(f"invalid reset: {_summary(error)}") from None
        options = None
        if task_id is not None:
            if task_id not in self._by_id:
                raise ValueError(
                    f"unknown task_id {task_id!r}: the served split {self._state.split!r} has {len(self._by_id)} tasks"
                )
            options = {"task": self._by_id[task_id]}
        text, info = self._env.reset(seed=seed, options=options)
        self._state = GenEnvState(
            episode_id=episode_id,
            step_count=0,
            benchmark=self._state.benchmark,
            split=self._state.split,
            task_id=self._env.task.task_id,
            family=info["family"],
            done=False,
        )
        return GenEnvObservation(
            text=text,
            messages=info["messages"],
            tools=info["tools"],
            task=info["task"],
            family=info["family"],
        )

    def step(self, action: GenEnvAction, **_: Any) -> GenEnvObservation:
        """Play one turn; after the last, ``done`` is set and ``reward`` is the episode's official score. An action
        over ``max_action_chars`` raises :class:`ActionTooLongError` and leaves the episode as it was."""
        if len(action.text) > self.max_action_chars:
            raise ActionTooLongError(
                f"the action has {len(action.text)} characters; this server takes at most {self.max_action_chars} "
                "(max_action_chars)"
            )
        text, reward, terminated, truncated, info = self._env.step(action.text)
        done = terminated or truncated
        self._state.step_count += 1
        self._state.done = done
        return GenEnvObservation(
            text=text,
            role=None if done else self._env.messages[-1]["role"],
            task=info["task"],
            family=info["family"],
            turn=info["turn"],
            error=info["error"],
            truncated=truncated,
            score_breakdown=info.get("score_breakdown"),
            done=done,
            reward=reward if done else 0.0,
        )

    @property
    def state(self) -> GenEnvState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        name = self._state.benchmark
        return EnvironmentMetadata(
            name=f"genenv-{name}",
            description=f"genenv's {name} tool-use episodes ({self._state.split}), scored by the official evaluator",
        )


def build_app(
    adapter: BenchmarkAdapter,
    *,
    split: str | None = None,
    max_sessions: int = 64,
    max_action_chars: int = 32_768,
    idle_timeout_s: float | None = 300.0,
    **env_kwargs: Any,
) -> FastAPI:
    """OpenEnv's FastAPI app serving ``adapter``'s ``split`` (default: its first), one :class:`ToolEnv` per session.

    At most ``max_sessions`` sessions at once; an action longer than ``max_action_chars`` is refused with a
    validation error naming the limit; a session created over HTTP and idle for ``idle_timeout_s`` is closed
    (WebSocket sessions close with their connection: see :mod:`genenv.serve`). ``GET /sessions`` counts the open
    sessions. ``env_kwargs`` go to every ``ToolEnv`` (``max_turns``, ``max_observation_chars``, ...).
    """
    split = adapter.split_or_default(split)
    if split not in adapter.splits:
        raise ValueError(f"{adapter.name} has splits {adapter.splits}, not {split!r}")
    tasks = adapter.load_tasks(split)
    if not tasks:
        raise ValueError(f"{adapter.name} split {split!r} has no tasks")
    factory = functools.partial(
        ToolEnvEnvironment, adapter, tasks, split, max_action_chars=max_action_chars, **env_kwargs
    )
    server = HTTPEnvServer(
        factory,
        action_type(max_action_chars),
        GenEnvObservation,
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=idle_timeout_s),
        env_name=f"genenv-{adapter.name}",
        state_cls=GenEnvState,
    )
    app = FastAPI(title=f"genenv {adapter.name} ({split}) over OpenEnv")
    server.register_routes(app)
    app.add_middleware(SessionGuard, action_cls=action_type(max_action_chars))

    @app.get("/sessions", tags=["Health"], summary="Open sessions and the limit")
    def sessions() -> dict[str, int]:
        return {"active": server.active_sessions, "max": server.max_concurrent_envs}

    return app


Scope = MutableMapping[str, Any]
ASGIMessage = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[ASGIMessage]]
Send = Callable[[ASGIMessage], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: the messages a session takes, by ``type`` (OpenEnv's protocol; ``mcp`` goes to OpenEnv, which says it is not served)
MESSAGES: dict[str, type[BaseModel]] = {
    "reset": WSResetMessage,
    "step": WSStepMessage,
    "state": WSStateMessage,
    "close": WSCloseMessage,
}
#: close codes of a client that closed its session itself (normal, going away, no status given)
CLEAN_CLOSE_CODES = frozenset({1000, 1001, 1005})


class SessionGuard:
    """ASGI middleware over OpenEnv's WebSocket sessions (``path``): each text frame is checked against the protocol
    before OpenEnv's handler sees it, and a client that is gone is never written to.

    A malformed frame gets an OpenEnv error message (``INVALID_JSON``, ``UNKNOWN_TYPE`` or ``VALIDATION_ERROR``, with
    ``message`` naming the cause and, for a schema violation, pydantic's ``errors``) and the session waits for the next
    frame: binary frames, invalid JSON, JSON that is not an object, a ``type`` that is not one of ``reset``, ``step``,
    ``state``, ``close``, ``mcp``, and a message its model refuses (a ``reset`` by :class:`GenEnvReset`, a ``step``'s
    data by ``action_cls``). Once the client has gone (its connection dropped, a reply could not be sent), further
    replies are dropped and OpenEnv's handler ends the session as for a normal close; the connection logs one INFO
    line when it ended without a clean close.
    """

    def __init__(self, app: ASGIApp, action_cls: type[Action], path: str = "/ws") -> None:
        self.app = app
        self.action_cls = action_cls
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        client = "{}:{}".format(*scope["client"]) if scope.get("client") else "a client"
        gone = False

        def went_away(reason: str | None) -> None:
            """Drop every later reply; log ``reason`` (``None``: a clean close) once."""
            nonlocal gone
            if not gone and reason is not None:
                logger.info("session of %s closed: %s", client, reason)
            gone = True

        async def guarded_send(message: ASGIMessage) -> None:
            if gone:
                return
            try:
                await send(message)
            except OSError:  # uvicorn's ClientDisconnected: the connection is closed
                went_away("the client went away before a reply" if message["type"] == "websocket.send" else None)

        async def guarded_receive() -> ASGIMessage:
            while True:
                message = await receive()
                if message["type"] == "websocket.disconnect":
                    code = message.get("code", 1000)
                    went_away(None if code in CLEAN_CLOSE_CODES else f"the connection ended unclosed (code {code})")
                if message["type"] != "websocket.receive" or (error := self.frame_error(message)) is None:
                    return message
                await guarded_send({"type": "websocket.send", "text": error})

        await self.app(scope, guarded_receive, guarded_send)

    def frame_error(self, frame: ASGIMessage) -> str | None:
        """The error reply (JSON text) to a received WebSocket ``frame`` the protocol does not allow; ``None`` for one
        it does."""
        text = frame.get("text")
        if text is None:
            return _error_reply(WSErrorCode.INVALID_JSON, "binary frame: send each message as JSON text")
        try:
            payload = json.loads(text)
        except json.JSONDecodeError as error:
            return _error_reply(WSErrorCode.INVALID_JSON, f"Invalid JSON: {error}")
        except RecursionError:
            return _error_reply(WSErrorCode.INVALID_JSON, "Invalid JSON: nested too deeply to parse")
        if not isinstance(payload, dict):
            return _error_reply(
                WSErrorCode.VALIDATION_ERROR,
                f"a message must be a JSON object with a 'type' ({', '.join(MESSAGES)}), got {_json_kind(payload)}",
            )
        kind = payload.get("type")
        if kind == "mcp":
            return None
        if not isinstance(kind, str) or kind not in MESSAGES:
            return _error_reply(
                WSErrorCode.UNKNOWN_TYPE,
                f"unknown message type {kind!r}: a message's 'type' is one of {', '.join(MESSAGES)}",
            )
        try:
            message = MESSAGES[kind].model_validate(payload)
        except ValidationError as error:
            return _validation_reply(kind, error)
        data_model = GenEnvReset if kind == "reset" else self.action_cls if kind == "step" else None
        if data_model is not None:
            try:
                data_model.model_validate(message.data)
            except ValidationError as error:
                return _validation_reply(kind, error, inside="data")
        return None


def _error_reply(code: WSErrorCode, message: str, **fields: Any) -> str:
    return WSErrorResponse(data={"message": message, "code": code, **fields}).model_dump_json()


def _validation_reply(kind: str, error: ValidationError, inside: str | None = None) -> str:
    """The ``VALIDATION_ERROR`` reply to a ``kind`` message ``error`` refused (the fields of its ``inside``)."""
    errors = error.errors(include_url=False, include_context=False, include_input=False)
    if inside is not None:
        errors = [{**item, "loc": (inside, *item["loc"])} for item in errors]
    summary = "; ".join(f"{'.'.join(map(str, item['loc'])) or 'message'}: {item['msg']}" for item in errors)
    return _error_reply(WSErrorCode.VALIDATION_ERROR, f"invalid {kind} message: {summary}", errors=errors)


def _json_kind(value: Any) -> str:
    kinds = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return "null" if value is None else kinds[type(value)]


def _summary(error: ValidationError) -> str:
    """Each of ``error``'s problems as ``field: what is wrong``, joined."""
    return "; ".join(f"{'.'.join(map(str, item['loc']))}: {item['msg']}" for item in error.errors())


class GenEnvClient(EnvClient[GenEnvAction, GenEnvObservation, GenEnvState]):
    """OpenEnv's WebSocket client for a genenv server: ``reset(task_id=..., seed=...)``, ``step(text)``, ``state()``.

    ``step`` takes a :class:`GenEnvAction` or the turn's text. Use it as OpenEnv's clients are used:
    ``async with GenEnvClient(base_url=URL) as env`` or ``with GenEnvClient(base_url=URL).sync() as env``.
    """

    def _step_payload(self, action: GenEnvAction | str) -> dict[str, Any]:
        text = action if isinstance(action, str) else action.text
        return {"text": text}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[GenEnvObservation]:
        fields = dict(payload.get("observation", {}))
        fields.update(done=payload.get("done", False), reward=payload.get("reward"))
        observation = GenEnvObservation.model_validate(fields)
        return StepResult(observation=observation, reward=observation.reward, done=observation.done)

    def _parse_state(self, payload: dict[str, Any]) -> GenEnvState:
        return GenEnvState.model_validate(payload)
