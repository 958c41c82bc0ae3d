"""fast-downward, the planner alfworld ships, run in a worker process so a long search can be stopped.

:class:`Planner` starts a Python process running :func:`serve` once and sends it games
(one JSON object per line); the worker starts each game with textworld's planner on (the
``policy_commands`` that alfworld's ``AlfredExpert`` uses in planner mode), replays the plan and
answers with the plan and whether it wins. A search that outlives ``timeout`` seconds gets the worker
killed (a new one starts on the next request): the search runs in C and cannot be interrupted.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from dataclasses import dataclass
from typing import Any


@dataclass
class PlanResult:
    """A plan that wins the game (text commands), or ``None`` and why not."""

    plan: list[str] | None
    reason: str


_ENGINE = None  # the worker's engine, reused for every game it plans


def solve(game: dict[str, Any]) -> PlanResult:
    """Plan ``game`` (game-file data) and check the plan by playing it."""
    global _ENGINE
    from genenv.benchmarks.alfworld.engine import GameEngine

    if _ENGINE is None:
        _ENGINE = GameEngine(planner=True)
    engine = _ENGINE
    engine.env.request_infos.policy_commands = True
    first, state = engine.start(None, lambda: game)
    if first.won:
        return PlanResult(None, "the goal already holds when the game starts")
    plan = list(state["policy_commands"] or [])
    if not plan:
        return PlanResult(None, "the planner found no plan (the goal cannot be reached in this game)")
    engine.stop_planning()
    for command in plan:
        if engine.step(command).won:
            return PlanResult(plan, "ok")
    return PlanResult(None, "the planner's plan does not win the game when played")


class Planner:
    """A planning worker process with a per-game time limit."""

    def __init__(self, timeout: float = 120.0) -> None:
        self.timeout = timeout
        self._proc: subprocess.Popen | None = None

    def solve(self, game: dict[str, Any]) -> PlanResult:
        """Plan ``game`` in the worker; never raises on a slow, failed or crashed search."""
        try:
            proc = self._worker()
            proc.stdin.write(json.dumps(game) + "\n")
            proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], self.timeout)
            if not ready:
                self.close()
                return PlanResult(None, f"the planner found no plan within {self.timeout:g} s")
            line = proc.stdout.readline()
            answer = json.loads(line) if line else None
        except (OSError, ValueError) as error:
            self.close()
            return PlanResult(None, f"the planner process failed: {error}")
        if not isinstance(answer, dict):
            self.close()
            return PlanResult(None, "the planner process died")
        return PlanResult(answer.get("plan"), str(answer.get("reason", "")))

    def _worker(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", f"from {__name__} import serve; serve()"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                bufsize=1,
            )
        return self._proc

    def __getstate__(self) -> dict[str, Any]:
        """A copy has no worker process yet: it starts one on its first request."""
        return {**self.__dict__, "_proc": None}

    def close(self) -> None:
        """Stop the worker (it is restarted on demand)."""
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
            for stream in (self._proc.stdin, self._proc.stdout):
                stream.close()
            self._proc = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def serve() -> None:
    """Worker loop: one game per input line, one JSON answer per output line. The engine's own
    prints (fast-downward writes to the C stdout) go to stderr so they cannot garble answers."""
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for line in sys.stdin:
        try:
            result = solve(json.loads(line))
        except Exception as error:  # noqa: BLE001 - a bad game is an answer, not a dead worker
            result = PlanResult(None, f"the game could not be planned: {type(error).__name__}: {error}")
        answers.write(json.dumps({"plan": result.plan, "reason": result.reason}) + "\n")
