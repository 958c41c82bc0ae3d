"""The TextWorld engine that plays ALFWorld games, and a pool that reuses engines across episodes.

An engine is textworld's ``PddlEnv`` (the back-end alfworld's ``AlfredTWEnv`` picks for a
``.tw-pddl`` game) wrapped in alfworld's ``AlfredDemangler`` (entity names such as "desk 1"), with
``won`` and ``admissible_commands`` requested, as ``AlfredTWEnv.init_env`` does. Each engine holds
its own copy of fast-downward's library (its state lives there), so one engine serves one episode
at a time. Unloading such a copy (``fast_downward.close_lib``) makes loading the next one crash, so
engines are never closed: the pool hands them out and takes them back (it grows to the most
episodes played at once), and an engine that already has a game loaded restarts it without
loading it again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class GameStep:
    """What the game answered: its text, whether the goal holds, the commands it accepts next."""

    feedback: str
    won: bool
    admissible: list[str]


class GameEngine:
    """One TextWorld PDDL game engine (alfworld's wrappers); ``planner=True`` also asks for the
    planner's plan (``policy_commands``) when the game starts."""

    def __init__(self, planner: bool = False) -> None:
        import textworld
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler
        from textworld.envs.pddl import PddlEnv

        infos = textworld.EnvInfos(won=True, admissible_commands=True, policy_commands=planner)
        self.env = AlfredDemangler(PddlEnv(infos), shuffle=False)
        self.key: str | None = None

    def start(self, key: str | None, load: Callable[[], dict[str, Any]]) -> tuple[GameStep, Any]:
        """(Re)start the game ``key``; ``load()`` gives its game data when it is not loaded already
        (always when ``key`` is ``None``). Returns the first step and textworld's state (with
        ``policy_commands`` when planning)."""
        if key is None or self.key != key:
            self.key = None
            self.env.load(load())
            self.key = key
        state = self.env.reset()
        return GameStep(state.feedback, bool(state["won"]), list(state["admissible_commands"])), state

    def step(self, command: str) -> GameStep:
        """Play one text command (an inadmissible one gets the game's "Nothing happens.")."""
        state, _, _ = self.env.step(command)
        return GameStep(state.feedback, bool(state["won"]), list(state["admissible_commands"]))

    def stop_planning(self) -> None:
        """Stop asking for a plan after every step (the planner is slow on large scenes)."""
        self.env.request_infos.policy_commands = False


class EnginePool:
    """Engines not playing an episode right now, kept for the next ones."""

    def __init__(self) -> None:
        self._idle: list[GameEngine] = []

    def acquire(self, key: str) -> GameEngine:
        """An idle engine, preferably one that has game ``key`` loaded, else a new one."""
        for index, engine in enumerate(self._idle):
            if engine.key == key:
                return self._idle.pop(index)
        return self._idle.pop() if self._idle else GameEngine()

    def release(self, engine: GameEngine) -> None:
        self._idle.append(engine)

    def __len__(self) -> int:
        return len(self._idle)

    def __getstate__(self) -> dict[str, Any]:
        """A copy starts empty: engines are not copied, new ones are made on demand."""
        return {"_idle": []}
