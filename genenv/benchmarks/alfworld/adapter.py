"""ALFWorld (Shridhar et al., ICLR 2021), TextWorld side, as a genenv benchmark.

Splits and tasks
----------------
``train``         the games under ``json_2.1.1/train`` (the shared data holds a 360-game subset)
``valid_seen``    ``eval_in_distribution``: 140 games
``valid_unseen``  ``eval_out_of_distribution``: 134 games

One task per game. ``Task.prompt`` is the game's first observation (room overview and "Your task
is to: ..."; the welcome banner dropped, as ReAct-style agents do), followed by the admissible
commands (``admissible_commands=True``). ``Task.gold`` is ``{"walkthrough": [commands]}`` (the
game file's walkthrough; for a generated task, the planner's plan). ``Task.metadata``: ``game``
(game file, relative to the data dir), ``task_type``, ``object``, ``receptacle`` (the light for
``look_at_obj_in_light``), ``scene``, ``trial``; a generated task also has ``goal`` (the edit).

Playing and scoring
-------------------
One tool, ``act(command)``: the command goes to the game as text, and the observation is the
game's answer ("Nothing happens." for an inadmissible command; the turn still counts), followed
by the admissible commands of the new state, which is how RL-trained LLM agents on ALFWorld
(verl-agent, AgentGym) see them. Each act call is one game step; winning, or ``max_steps`` steps
(alfworld's ``max_nb_steps_per_episode``, 50), ends the episode. The score is the game's ``won``
(1 or 0): success rate, as alfworld's evaluation counts it; :meth:`ALFWorldAdapter.aggregate` adds
success per task type (the ALFWorld paper's table: pick, clean, heat, cool, look, pick_two).

Generated tasks
---------------
The simulator proposes ``{"task_type", "game", "object", "receptacle"}``: a task type (the
family), a train game to play it in (its trial id), an object type and a receptacle (or light)
type of that game's room. :meth:`~ALFWorldAdapter.parse_task` rejects proposals the room cannot
support (``ValueError`` with the reason); :meth:`~ALFWorldAdapter.validate_task` rewrites the
game's PDDL goal (and task sentence) with alfworld's goal library and keeps the task only if
fast-downward finds a plan that wins it; the plan becomes the gold walkthrough.
"""

from __future__ import annotations

import hashlib
import logging
import os
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..base import (
    BenchmarkAdapter,
    DataNotFoundError,
    Score,
    StepResult,
    Task,
    ToolCall,
    Trajectory,
    register_benchmark,
    require_files,
    resolve_data_dir,
    string_tool,
)
from .engine import EnginePool, GameEngine, GameStep
from .games import (
    HOW_TO_GET,
    SHORT_NAMES,
    SPLIT_DIRS,
    TASK_TYPES,
    GameRecord,
    GoalSpec,
    Scene,
    collect_games,
    edit_goal,
    first_observation,
    read_game,
    room_kind,
    strip_banner,
    task_text,
)
from .planner import Planner

logger = logging.getLogger(__name__)

INSTALL_HINT = "ALFWorld needs the alfworld extra: pip install 'genenv[alfworld]' (alfworld==0.4.2, pyyaml)"
MAX_COMMAND_CHARS = 300
TOOL_NAME = "act"


@dataclass
class ALFWorldState:
    """One episode: the engine playing it, the commands played, steps taken, whether the goal was reached.

    A copy (``copy.deepcopy``, ``pickle``) has no engine: the adapter's next ``execute`` on it restarts the game and
    plays ``commands`` again (the game is deterministic), so the copy goes on from where the episode was.
    """

    engine: GameEngine | None
    task: Task
    observation: str  # the engine's first observation (banner dropped)
    admissible: list[str]
    max_steps: int
    steps: int = 0
    won: bool = False
    commands: list[str] = field(default_factory=list)
    release: Any = field(default=None, repr=False)  # weakref.finalize returning the engine to its pool

    @property
    def done(self) -> bool:
        return self.won or self.steps >= self.max_steps

    def close(self) -> None:
        """Give the engine back (also happens when the state is garbage-collected)."""
        if self.release is not None:
            self.release()
        self.engine = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "engine": None, "release": None}


@register_benchmark("alfworld")
class ALFWorldAdapter(BenchmarkAdapter):
    """ALFWorld text games on the TextWorld engine; success = the game's ``won``.

    Args:
        data_dir: the ``$ALFWORLD_DATA`` folder (default ``$GENENV_DATA_DIR/alfworld``, else ``$ALFWORLD_DATA``).
        max_steps: game steps (act calls) per episode, alfworld's ``max_nb_steps_per_episode``.
        admissible_commands: append the admissible commands to the prompt and to every observation.
        planner_timeout: seconds fast-downward may search when a generated task is validated.
    """

    name = "alfworld"
    max_turns = 50  # alfworld's max_nb_steps_per_episode
    default_split = "valid_unseen"  # eval_out_of_distribution (134 games); valid_seen = eval_in_distribution (140)
    validation_split = "valid_seen"
    base_split = "train"  # expert traces: the train games' walkthroughs
    base_limit = 60  # 10 per task type: each trace replays its whole game in the engine
    splits = ("train", "valid_seen", "valid_unseen")
    task_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "task_type": {"type": "string", "enum": list(TASK_TYPES)},
            "game": {"type": "string", "description": "trial id of the train game to play the task in"},
            "object": {"type": "string", "description": "object type in that game's room, e.g. 'apple'"},
            "receptacle": {
                "type": "string",
                "description": "receptacle type to put the object in/on (for look_at_obj_in_light: the lamp)",
            },
        },
        "required": ["task_type", "game", "object", "receptacle"],
    }

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        max_steps: int = 50,
        admissible_commands: bool = True,
        planner_timeout: float = 120.0,
    ) -> None:
        alfworld_data = os.environ.get("ALFWORLD_DATA")  # read first: importing alfworld sets a default
        try:
            import alfworld  # noqa: F401
            import textworld  # noqa: F401
        except ImportError as error:
            raise ImportError(f"{INSTALL_HINT} ({error})") from error
        if data_dir is None and alfworld_data and not resolve_data_dir(self.name).exists():
            data_dir = alfworld_data
        super().__init__(data_dir)
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self.max_steps = max_steps
        self.admissible_commands = admissible_commands
        self.planner = Planner(planner_timeout)
        self.engines = EnginePool()
        self._tasks: dict[str, list[Task]] = {}
        self._train: dict[str, GameRecord] | None = None
        self._scenes: dict[str, Scene] = {}
        self._family_games: dict[str, list[str]] = {}

    # -- data ---------------------------------------------------------------------------
    def load_tasks(self, split: str) -> list[Task]:
        if split not in SPLIT_DIRS:
            raise ValueError(f"unknown split {split!r}; choose from {', '.join(self.splits)}")
        if split not in self._tasks:
            require_files(self.data_dir, [SPLIT_DIRS[split]], self.name, HOW_TO_GET)
            games = collect_games(self.data_dir, split)
            if not games:
                raise DataNotFoundError(
                    f"no ALFWorld games under {self.data_dir / SPLIT_DIRS[split]} (expected "
                    f"<task>/<trial>/game.tw-pddl with traj_data.json). How to get the data: {HOW_TO_GET}"
                )
            self._tasks[split] = [self._benchmark_task(record) for record in games]
        return list(self._tasks[split])

    def _benchmark_task(self, record: GameRecord) -> Task:
        game = read_game(self.data_dir / record.game_file)
        scene = Scene.from_problem(game["pddl_problem"])
        observation, admissible = first_observation(scene, task_text(game["grammar"]))
        return Task(
            task_id=f"alfworld/{record.split}/{record.task_dir}/{record.trial}",
            benchmark=self.name,
            prompt=self._with_admissible(observation, admissible),
            gold={"walkthrough": list(game.get("walkthrough") or [])},
            split=record.split,
            metadata={
                "game": record.game_file,
                "task_type": record.task_type,
                "object": record.object,
                "receptacle": record.receptacle,
                "scene": record.scene,
                "trial": record.trial,
            },
        )

    def _with_admissible(self, observation: str, admissible: list[str]) -> str:
        if not self.admissible_commands:
            return observation
        return f"{observation}\n\nAdmissible commands: {', '.join(admissible)}"

    def _game_data(self, task: Task) -> dict[str, Any]:
        """The game file of ``task``, its goal edited when the task is a generated one."""
        path = self.data_dir / task.metadata["game"]
        if not path.exists():
            require_files(self.data_dir, [task.metadata["game"]], self.name, HOW_TO_GET)
        game = read_game(path)
        goal = task.metadata.get("goal")
        if goal:
            game = edit_goal(game, GoalSpec(goal["task_type"], goal["object"], goal["receptacle"]))
        return game

    # -- tools and execution ------------------------------------------------------------
    def tools(self, task: Task) -> list[dict[str, Any]]:
        description = (
            "Send one text command to the household game and get what happens, e.g. "
            "'go to desk 1', 'open drawer 2', 'take mug 1 from desk 1', 'move mug 1 to shelf 1', "
            "'heat mug 1 with microwave 1', 'clean mug 1 with sinkbasin 1', 'cool mug 1 with fridge 1', "
            "'use desklamp 1', 'examine mug 1', 'look', 'inventory'. Only admissible commands "
            "change anything; any other text gets 'Nothing happens.'"
        )
        return [string_tool(TOOL_NAME, description, {"command": "one admissible command, exactly as listed"})]

    def gold_actions(self, task: Task) -> list[list[str]]:
        """The gold walkthrough (the game file's, or the planner's plan for a generated task) as one ``act`` call a
        turn; the winning command ends the episode. None without a walkthrough, or when it is longer than
        ``max_steps``."""
        walkthrough = task.gold.get("walkthrough") if isinstance(task.gold, dict) else None
        if not walkthrough or len(walkthrough) > self.max_steps:
            return []
        return [[self.format_call(TOOL_NAME, {"command": c}) for c in walkthrough]]

    def system_prompt(self, task: Task) -> str:
        return "\n".join(
            [
                "You are an agent in a household text game (ALFWorld). Reach the goal stated after "
                "'Your task is to:' by sending one command per turn with the act tool, as",
                '<tool_call>{"name": "act", "arguments": {"command": "go to desk 1"}}</tool_call>',
                "Use the admissible commands listed after each observation, exactly as written. The game "
                f"ends when the task is done or after {self.max_steps} commands. A message without a tool "
                "call ends the game too.",
            ]
        )

    def start(self, task: Task) -> ALFWorldState:
        engine, first = self._play(task, [])
        observation = strip_banner(first.feedback)
        if not task.prompt.startswith(observation):
            logger.warning("alfworld %s: the engine's first observation differs from the prompt", task.task_id)
        state = ALFWorldState(engine, task, observation, first.admissible, self.max_steps, won=first.won)
        state.release = weakref.finalize(state, self.engines.release, engine)
        return state

    def _play(self, task: Task, commands: list[str]) -> tuple[GameEngine, GameStep]:
        """An engine with ``task``'s game restarted and ``commands`` played; the first step, or the last command's."""
        engine = self.engines.acquire(task.task_id)
        try:
            step, _ = engine.start(task.task_id, lambda: self._game_data(task))
            for command in commands:
                step = engine.step(command)
        except Exception:
            self.engines.release(engine)
            raise
        return engine, step

    def _resume(self, state: ALFWorldState) -> None:
        """Give a copied episode an engine where the episode was: its game restarted and its commands played again."""
        state.engine, step = self._play(state.task, state.commands)
        state.release = weakref.finalize(state, self.engines.release, state.engine)
        if step.admissible != state.admissible:
            logger.warning("alfworld %s: the replayed game differs from the copied episode", state.task.task_id)

    def execute(self, state: ALFWorldState, call: ToolCall) -> StepResult:
        name = getattr(call, "name", None)
        arguments = getattr(call, "arguments", None)
        if name != TOOL_NAME:
            return StepResult(
                f"Error (unknown_tool): there is no tool {str(name)[:80]!r}; the only tool is {TOOL_NAME}(command).",
                error="unknown_tool",
            )
        if not isinstance(arguments, dict) or "command" not in arguments:
            return StepResult(
                f'Error (missing_argument): {TOOL_NAME} needs a \'command\' string, e.g. {{"command": "look"}}.',
                error="missing_argument",
            )
        unknown = sorted(str(k) for k in arguments if k != "command")
        if unknown:
            return StepResult(
                f"Error (unknown_argument): {TOOL_NAME} takes only 'command', not {', '.join(unknown)[:120]}.",
                error="unknown_argument",
            )
        command = arguments["command"]
        if not isinstance(command, str):
            return StepResult(
                f"Error (wrong_type): 'command' must be a string, not {type(command).__name__}.",
                error="wrong_type",
            )
        if state.done:
            return StepResult("The game is over.", output=self._output(state, command), error="episode_over", done=True)
        if state.engine is None:
            self._resume(state)
        command = command.strip()[:MAX_COMMAND_CHARS]
        admissible = command in state.admissible
        step = state.engine.step(command)
        state.commands.append(command)
        state.steps += 1
        state.won = state.won or step.won
        state.admissible = step.admissible
        observation = step.feedback
        if state.done:
            if not state.won:
                observation += f"\n\n(The step limit of {state.max_steps} commands is reached.)"
            state.close()
        elif self.admissible_commands:
            observation = self._with_admissible(observation, step.admissible)
        return StepResult(
            observation,
            output=self._output(state, command),
            error=None if admissible else "inadmissible_command",
            done=state.done,
        )

    @staticmethod
    def _output(state: ALFWorldState, command: str) -> dict[str, Any]:
        return {"command": command, "won": state.won, "step": state.steps}

    # -- scoring ------------------------------------------------------------------------
    def score(self, task: Task, trajectory: Trajectory) -> Score:
        """1.0 if the game was won within ``max_steps`` act calls (the game's ``won``), else 0.0."""
        results = trajectory.results
        if len(results) == len(trajectory.calls):
            steps = [r.output for r in results if isinstance(r.output, dict) and "won" in r.output]
            steps = [o for o in steps if o["step"] <= self.max_steps]
            won = any(o["won"] for o in steps)
            n_steps = max((o["step"] for o in steps), default=0)
        else:  # results missing (a stored trajectory): replay its commands on a fresh game
            won, n_steps = self._replay(task, trajectory.calls)
        breakdown = {"won": won, "steps": n_steps, "task_type": task.metadata.get("task_type", "")}
        return Score(1.0 if won else 0.0, breakdown)

    def _replay(self, task: Task, calls: list[ToolCall]) -> tuple[bool, int]:
        state = self.start(task)
        try:
            for call in calls:
                if state.done:
                    break
                self.execute(state, call)
            return state.won, state.steps
        finally:
            state.close()

    def aggregate(self, tasks: list[Task], scores: list[Score]) -> dict[str, float]:
        """Success rate overall and per task type (the ALFWorld paper's table), mean steps."""
        metrics: dict[str, float] = {"n": float(len(scores))}
        if not scores:
            return metrics
        metrics["success"] = metrics["score"] = sum(s.value for s in scores) / len(scores)
        metrics["steps"] = sum(float(s.breakdown.get("steps", 0)) for s in scores) / len(scores)
        for task_type in TASK_TYPES:
            values = [s.value for t, s in zip(tasks, scores) if self.family(t) == task_type]
            if values:
                short = SHORT_NAMES[task_type]
                metrics[f"success/{short}"] = sum(values) / len(values)
                metrics[f"n/{short}"] = float(len(values))
        return metrics

    def family(self, task: Task) -> str:
        return str(task.metadata.get("task_type", "unknown"))

    # -- generated tasks ----------------------------------------------------------------
    def families(self) -> list[str]:
        return list(TASK_TYPES)

    def _train_games(self) -> dict[str, GameRecord]:
        if self._train is None:
            require_files(self.data_dir, [SPLIT_DIRS["train"]], self.name, HOW_TO_GET)
            self._train = {g.trial: g for g in collect_games(self.data_dir, "train")}
            if not self._train:
                raise DataNotFoundError(f"no ALFWorld train games under {self.data_dir / SPLIT_DIRS['train']}")
        return self._train

    def _scene(self, trial: str) -> Scene:
        if trial not in self._scenes:
            record = self._train_games()[trial]
            self._scenes[trial] = Scene.from_problem(read_game(self.data_dir / record.game_file)["pddl_problem"])
        return self._scenes[trial]

    def _games_for(self, family: str) -> list[str]:
        """Train games whose room supports a task of ``family``."""
        if family not in self._family_games:
            trials = sorted(self._train_games())
            self._family_games[family] = [t for t in trials if self._scene(t).candidates(family)[0]]
        return self._family_games[family]

    def generation_context(self, family: str, rng: Any, success: Mapping[str, float] | None = None) -> str:
        if family not in TASK_TYPES:
            raise ValueError(f"unknown task type {family!r}; choose from {', '.join(TASK_TYPES)}")
        games = self._games_for(family)
        if not games:
            raise ValueError(f"no train game supports {family}")
        trial = games[int(rng.integers(len(games)))]
        record, scene = self._train_games()[trial], self._scene(trial)
        objects, receptacles = scene.candidates(family)
        pickable = scene.properties.get("pickupable", set())
        counts = {t.lower(): sum(i in pickable for i in inst) for t, inst in scene.objects.items()}
        described = ", ".join(f"{name} ({n})" for name, n in sorted(counts.items()) if n)
        receps = ", ".join(f"{t.lower()} ({len(inst)})" for t, inst in sorted(scene.receptacles.items()))
        lines = [
            f"Game: {trial} (a {room_kind(record.scene)})",
            f"Receptacles in the room: {receps}",
            f"Objects that can be picked up: {described}",
            f"Task type {family}: {_family_text(family)}",
            f"Objects this task type can use here: {', '.join(t.lower() for t in objects)}",
            ("Lights that can be turned on here: " if family == "look_at_obj_in_light" else "Receptacles for it: ")
            + ", ".join(t.lower() for t in receptacles),
            f'Answer with {{"task_type": "{family}", "game": "{trial}", "object": ..., "receptacle": ...}}.',
        ]
        return "\n".join(lines)

    def generation_schema(self, family: str) -> dict[str, Any]:
        """``task_schema`` for ``family``: the task type fixed, object and receptacle restricted to the
        types that can make such a task in some train game. The game stays a bounded string (the
        context names it): an enum of every train game would slow constrained decoding down."""
        games = self._games_for(family)
        objects: set[str] = set()
        receptacles: set[str] = set()
        for trial in games:
            objs, receps = self._scene(trial).candidates(family)
            objects.update(t.lower() for t in objs)
            receptacles.update(t.lower() for t in receps)
        return {
            "type": "object",
            "properties": {
                "task_type": {"type": "string", "enum": [family]},
                "game": {"type": "string", "maxLength": 40},
                "object": {"type": "string", "enum": sorted(objects)},
                "receptacle": {"type": "string", "enum": sorted(receptacles)},
            },
            "required": ["task_type", "game", "object", "receptacle"],
            "additionalProperties": False,
        }

    def generation_examples(self, family: str, k: int, rng: Any) -> list[dict[str, Any]]:
        """Real train tasks of ``family`` in ``task_schema`` form."""
        same = [g for g in self._train_games().values() if g.task_type == family]
        picks = rng.permutation(len(same))[:k] if len(same) else []
        return [
            {
                "task_type": same[int(i)].task_type,
                "game": same[int(i)].trial,
                "object": same[int(i)].object.lower(),
                "receptacle": same[int(i)].receptacle.lower(),
            }
            for i in picks
        ]

    def parse_task(self, obj: dict[str, Any], family: str | None = None) -> Task:
        if not isinstance(obj, dict):
            raise ValueError("a task must be a JSON object")
        fields = {}
        for key in ("task_type", "game", "object", "receptacle"):
            value = obj.get(key)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"'{key}' must be a non-empty string")
            fields[key] = value.strip()
        task_type = fields["task_type"]
        if task_type not in TASK_TYPES:
            raise ValueError(f"unknown task_type {task_type!r}; choose from {', '.join(TASK_TYPES)}")
        if family is not None and task_type != family:
            raise ValueError(f"task_type {task_type!r} is not the requested family {family!r}")
        trial = fields["game"].rstrip("/").split("/")[-1]
        if trial not in self._train_games():
            raise ValueError(f"unknown game {fields['game'][:80]!r}: give the trial id of a train game")
        record, scene = self._train_games()[trial], self._scene(trial)
        obj_type = scene.lookup(fields["object"], scene.objects)
        if obj_type is None:
            raise ValueError(f"there is no {fields['object'][:40]!r} in game {trial}")
        kinds = scene.objects if task_type == "look_at_obj_in_light" else scene.receptacles
        recep_type = scene.lookup(fields["receptacle"], kinds)
        if recep_type is None:
            raise ValueError(f"there is no {fields['receptacle'][:40]!r} in game {trial}")
        reason = scene.check(task_type, obj_type, recep_type)
        if reason is not None:
            raise ValueError(reason)
        spec = GoalSpec(task_type, obj_type, recep_type)
        observation, admissible = first_observation(scene, spec.sentence())
        digest = hashlib.sha1(f"{trial}|{task_type}|{obj_type}|{recep_type}".encode()).hexdigest()[:10]
        return Task(
            task_id=f"alfworld/generated/{task_type}-{obj_type}-{recep_type}/{trial}-{digest}",
            benchmark=self.name,
            prompt=self._with_admissible(observation, admissible),
            gold={"walkthrough": None},
            split="train",
            source="generated",
            metadata={
                "game": record.game_file,
                "task_type": task_type,
                "object": obj_type,
                "receptacle": recep_type,
                "scene": record.scene,
                "trial": trial,
                "goal": {"task_type": task_type, "object": obj_type, "receptacle": recep_type},
            },
        )

    def validate_task(self, task: Task) -> tuple[bool, str]:
        """Keep a generated task only if fast-downward finds a plan that wins its edited game; the
        plan becomes ``task.gold["walkthrough"]``."""
        try:
            goal = task.metadata["goal"]
            trial = task.metadata["trial"]
            scene = self._scene(trial)
            reason = scene.check(goal["task_type"], goal["object"], goal["receptacle"])
            if reason is not None:
                return False, reason
            game = self._game_data(task)
        except (KeyError, TypeError, ValueError, OSError) as error:
            return False, f"not a playable generated task: {type(error).__name__}: {error}"
        result = self.planner.solve(game)
        if result.plan is None:
            return False, result.reason
        task.gold = {**(task.gold if isinstance(task.gold, dict) else {}), "walkthrough": result.plan}
        return True, "ok"

    def close(self) -> None:
        """Stop the planner worker."""
        self.planner.close()


def _family_text(family: str) -> str:
    from alfworld.gen.goal_library import gdict

    examples = " / ".join(f"'{t}'" for t in gdict[family]["templates"])
    needs = {
        "pick_and_place_simple": "pick up an object and put it in/on a receptacle",
        "look_at_obj_in_light": "hold an object and turn on a lamp to look at it",
        "pick_clean_then_place_in_recep": "clean an object in the sinkbasin, then put it in/on a receptacle",
        "pick_heat_then_place_in_recep": "heat an object in the microwave, then put it in/on a receptacle",
        "pick_cool_then_place_in_recep": "cool an object in the fridge, then put it in/on a receptacle",
        "pick_two_obj_and_place": "put two objects of one type in/on a receptacle",
    }[family]
    return f"{needs} ({examples})"


__all__ = ["ALFWorldAdapter", "ALFWorldState"]
