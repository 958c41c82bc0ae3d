"""ALFWorld game files: which games a split holds, what a scene contains, and goal edits.

A game is ``json_2.1.1/<split>/<task dir>/<trial>/game.tw-pddl`` (JSON: ``pddl_domain``, ``grammar``,
``pddl_problem``, ``solvable``, ``walkthrough``). Games are collected the way alfworld's
``AlfredTWEnv.collect_game_files`` does. The first observation is rebuilt from the PDDL problem
without starting the engine (``tests/test_alfworld.py`` checks it against the engine), so loading a
split stays fast. Goals come from alfworld's own goal library (``alfworld.gen.goal_library``), the
templates its game generator used for every game of the data set.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ..base import read_data_json, require_files

HOW_TO_GET = (
    "the ALFWorld game files (json_2.1.1/<split>/<task>/<trial>/{game.tw-pddl,traj_data.json}), e.g. from "
    "`alfworld-download` of the alfworld package (pip install 'genenv[alfworld]'), which fills $ALFWORLD_DATA; "
    "point GENENV_DATA_DIR at a folder holding it as 'alfworld/', or pass data_dir= (the $ALFWORLD_DATA folder)."
)
#: the six ALFWorld task types (alfworld's ``TASK_TYPES``), in the paper's order
TASK_TYPES = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)
#: column names of the ALFWorld paper's results table
SHORT_NAMES = {
    "pick_and_place_simple": "pick",
    "look_at_obj_in_light": "look",
    "pick_clean_then_place_in_recep": "clean",
    "pick_heat_then_place_in_recep": "heat",
    "pick_cool_then_place_in_recep": "cool",
    "pick_two_obj_and_place": "pick_two",
}
#: split -> folder under the data dir (alfworld's train / eval_in_distribution / eval_out_of_distribution)
SPLIT_DIRS = {
    "train": "json_2.1.1/train",
    "valid_seen": "json_2.1.1/valid_seen",
    "valid_unseen": "json_2.1.1/valid_unseen",
}
GAME_FILE = "game.tw-pddl"
TRAJ_FILE = "traj_data.json"
BANNER = "-= Welcome to TextWorld, ALFRED! =-\n\n"
#: the receptacle type each state-changing task type needs (the PDDL domain's Clean/Heat/CoolObject)
APPLIANCE = {
    "pick_clean_then_place_in_recep": ("SinkBasin", "cleanable"),
    "pick_heat_then_place_in_recep": ("Microwave", "heatable"),
    "pick_cool_then_place_in_recep": ("Fridge", "coolable"),
}
_ROOMS = {0: "kitchen", 2: "living room", 3: "bedroom", 4: "bathroom"}
_TASK_RULE = re.compile(r'("task"\s*:\s*\[\s*\{\s*"rhs"\s*:\s*)"((?:[^"\\]|\\.)*)"')
_FACT = re.compile(r"\((\w+)((?:\s+[^\s()]+)+)\s*\)")
_DECLARATION = re.compile(r"([^\s()]+)\s+-\s+([^\s()]+)")


@dataclass(frozen=True)
class GameRecord:
    """One game of a split: where it is and what its directory name says."""

    split: str
    rel_dir: str  # folder of the trial, relative to the data dir (posix)
    task_type: str
    object: str  # object target type (e.g. "AlarmClock")
    receptacle: str  # parent receptacle type, or the light for look_at_obj_in_light
    mrecep: str
    scene: int
    trial: str

    @property
    def game_file(self) -> str:
        return f"{self.rel_dir}/{GAME_FILE}"

    @property
    def task_dir(self) -> str:
        return self.rel_dir.split("/")[-2]


def room_kind(scene: int) -> str:
    """The AI2-THOR room type of a floor plan number (1-30 kitchens, 2xx living rooms, ...)."""
    return _ROOMS.get(scene // 100, "room")


def collect_games(data_dir: Path, split: str) -> list[GameRecord]:
    """The games of ``split``, selected like ``AlfredTWEnv.collect_game_files``: a trial folder with
    ``traj_data.json``, not 'movable' or 'Sliced', of one of the six task types. Such a trial without its
    ``game.tw-pddl`` raises :class:`~genenv.benchmarks.base.DataNotFoundError` naming every missing file
    (alfworld skips it: a split would silently shrink)."""
    root = data_dir / SPLIT_DIRS[split]
    games, missing = [], []
    for dirpath, _, files in os.walk(root, followlinks=True):
        if TRAJ_FILE not in files or "movable" in dirpath or "Sliced" in dirpath:
            continue
        path = Path(dirpath)
        task_type = read_data_json(path / TRAJ_FILE, "alfworld", HOW_TO_GET).get("task_type")
        if task_type not in TASK_TYPES:
            continue
        rel = path.relative_to(data_dir).as_posix()
        if GAME_FILE in files:
            games.append(_record(split, rel, task_type))
        else:
            missing.append(f"{rel}/{GAME_FILE}")
    require_files(data_dir, sorted(missing), "alfworld", HOW_TO_GET)
    return sorted(games, key=lambda g: g.rel_dir)


def _record(split: str, rel_dir: str, task_type: str) -> GameRecord:
    task_dir, trial = rel_dir.split("/")[-2:]
    parts = task_dir.split("-")
    obj, mrecep, recep = (parts[1], parts[2], parts[3]) if len(parts) >= 5 else ("", "", "")
    scene = int(parts[-1]) if parts[-1].isdigit() else 0
    return GameRecord(split, rel_dir, task_type, obj, recep, "" if mrecep == "None" else mrecep, scene, trial)


def read_game(path: Path) -> dict[str, Any]:
    return read_data_json(path, "alfworld", HOW_TO_GET)


# -- the scene --------------------------------------------------------------------------------


@dataclass
class Scene:
    """What a game's PDDL problem declares: object and receptacle instances by type, their
    properties, which receptacle types can hold which object types, and the names the game shows."""

    objects: dict[str, list[str]] = field(default_factory=dict)  # type -> instance ids
    receptacles: dict[str, list[str]] = field(default_factory=dict)
    properties: dict[str, set[str]] = field(default_factory=dict)  # predicate -> instance ids
    can_contain: set[tuple[str, str]] = field(default_factory=set)  # (receptacle type, object type)
    names: dict[str, str] = field(default_factory=dict)  # lower-cased id -> "desk 1"
    receptacle_ids: list[str] = field(default_factory=list)  # lower-cased, in id order

    @classmethod
    def from_problem(cls, problem: str) -> Scene:
        from alfworld.agents.utils.misc import Demangler

        head, _, rest = problem.partition("(:init")
        init = rest.partition("(:goal")[0]
        declared = {name.lower(): kind.lower() for name, kind in _DECLARATION.findall(head)}
        scene = cls()
        for predicate, args in _FACT.findall(init):
            values = args.split()
            if predicate in ("objectType", "receptacleType") and len(values) == 2:
                target = scene.objects if predicate == "objectType" else scene.receptacles
                target.setdefault(_type_name(values[1]), []).append(values[0])
            elif predicate == "canContain" and len(values) == 2:
                scene.can_contain.add((_type_name(values[0]), _type_name(values[1])))
            elif len(values) == 1:
                scene.properties.setdefault(predicate, set()).add(values[0])
        # alfworld's AlfredDemangler numbers entities from their sorted ids; the engine lower-cases ids
        demangler = Demangler(game_infos={k: SimpleNamespace(id=k) for k in declared})
        scene.names = {k: demangler.demangle_alfred_name(k).strip() for k in declared}
        scene.receptacle_ids = sorted(k for k, kind in declared.items() if kind == "receptacle")
        return scene

    def lookup(self, name: str, kinds: dict[str, list[str]]) -> str | None:
        """The scene's type for a type name written any way ('DeskLamp', 'desk lamp', 'desklamp')."""
        key = _norm(name)
        return next((t for t in kinds if _norm(t) == key), None)

    def having(self, prop: str, types: dict[str, list[str]] | None = None) -> list[str]:
        """Types with at least one instance that has ``prop`` (e.g. 'pickupable', 'heatable')."""
        ids = self.properties.get(prop, set())
        return sorted(t for t, inst in (types or self.objects).items() if any(i in ids for i in inst))

    def candidates(self, task_type: str) -> tuple[list[str], list[str]]:
        """(object types, receptacle types) a task of ``task_type`` could use in this scene."""
        objects = self.having("pickupable")
        if task_type == "look_at_obj_in_light":
            return objects, self.having("toggleable")
        if task_type in APPLIANCE:
            appliance, prop = APPLIANCE[task_type]
            if appliance not in self.receptacles:
                return [], []
            objects = [t for t in objects if t in self.having(prop)]
        if task_type == "pick_two_obj_and_place":
            pickable = self.properties.get("pickupable", set())
            objects = [t for t in objects if sum(i in pickable for i in self.objects[t]) >= 2]
        receptacles = sorted(r for r in self.receptacles if any((r, o) in self.can_contain for o in objects))
        return (objects, receptacles) if receptacles else ([], [])

    def check(self, task_type: str, obj: str, recep: str) -> str | None:
        """Why ``(task_type, obj, recep)`` cannot be a task here, or ``None`` if the scene allows it."""
        objects, receptacles = self.candidates(task_type)
        if task_type in APPLIANCE and APPLIANCE[task_type][0] not in self.receptacles:
            return f"{task_type} needs a {APPLIANCE[task_type][0].lower()}, and this room has none"
        if obj not in objects:
            what = {
                "pick_clean_then_place_in_recep": "cleanable",
                "pick_heat_then_place_in_recep": "heatable",
                "pick_cool_then_place_in_recep": "coolable",
                "pick_two_obj_and_place": "a pickupable object with two instances",
            }.get(task_type, "pickupable")
            return f"{obj.lower()} is not {what} in this room"
        if task_type == "look_at_obj_in_light":
            return None if recep in receptacles else f"{recep.lower()} is not a light that can be turned on here"
        if recep not in self.receptacles:
            return f"there is no {recep.lower()} in this room"
        if (recep, obj) not in self.can_contain:
            return f"{recep.lower()} cannot hold {obj.lower()} (no canContain fact)"
        return None

    def receptacle_names(self) -> list[str]:
        """What the game calls the receptacles, in the order its room description lists them."""
        return [self.names[r] for r in self.receptacle_ids]


def _type_name(value: str) -> str:
    return value[:-4] if value.endswith("Type") else value


def _norm(name: str) -> str:
    key = re.sub(r"[\s_\-]", "", str(name)).lower()
    return key[:-4] if key.endswith("type") and len(key) > 4 else key


# -- the first observation ------------------------------------------------------------------


def task_text(grammar: str) -> str:
    """The goal sentence of a game ("Your task is to: ..."), as its grammar states it."""
    match = _TASK_RULE.search(grammar)
    if match is None:
        raise ValueError("the game grammar has no 'task' rule")
    return json.loads(f'"{match.group(2)}"')


def first_observation(scene: Scene, task_line: str) -> tuple[str, list[str]]:
    """The engine's first observation (welcome banner dropped, as ReAct-style agents do) and the
    admissible commands at the start: the room overview, then the task."""
    names = scene.receptacle_names()
    items = [f"a {name}" for name in names]
    if len(items) > 1:
        listing = ", ".join(items[:-1]) + ", and " + items[-1]
    else:
        listing = items[0] if items else "nothing"
    text = f"You are in the middle of a room. Looking quickly around you, you see {listing}.\n\n{task_line}"
    admissible = sorted({f"go to {name}" for name in names} | {"help", "inventory", "look"})
    return text, admissible


def strip_banner(observation: str) -> str:
    return observation[len(BANNER) :] if observation.startswith(BANNER) else observation


# -- goal edits -------------------------------------------------------------------------------


@dataclass(frozen=True)
class GoalSpec:
    """A task to play in an existing game: task type, object type, receptacle (or light) type."""

    task_type: str
    object: str
    receptacle: str

    def goal_pddl(self) -> str:
        """The ``(:goal ...)`` section alfworld's game generator writes for this task (its goal library)."""
        from alfworld.gen.goal_library import gdict

        template = gdict[self.task_type]["pddl"]
        return template.format(obj=self.object, recep=self.receptacle, toggle=self.receptacle, mrecep="").replace(
            "#", "-"
        )

    def sentence(self) -> str:
        """The task sentence, from one of alfworld's two templates for the type (chosen by a hash)."""
        from alfworld.gen.goal_library import gdict

        templates = gdict[self.task_type]["templates"]
        digest = hashlib.sha1(f"{self.task_type}|{self.object}|{self.receptacle}".encode()).digest()
        template = templates[digest[0] % len(templates)]
        obj, recep = self.object.lower(), self.receptacle.lower()
        return f"Your task is to: {template.format(obj=obj, recep=recep, toggle=recep, mrecep='')}."


def edit_goal(game: dict[str, Any], spec: GoalSpec) -> dict[str, Any]:
    """A copy of ``game`` whose PDDL goal and task sentence are ``spec``'s (no walkthrough: the
    planner writes one)."""
    problem = game["pddl_problem"]
    start = problem.find("(:goal")
    if start < 0:
        raise ValueError("the game's PDDL problem has no (:goal ...) section")
    grammar, count = _TASK_RULE.subn(lambda m: m.group(1) + json.dumps(spec.sentence()), game["grammar"], count=1)
    if count != 1:
        raise ValueError("the game grammar has no 'task' rule")
    edited = {k: v for k, v in game.items() if k != "walkthrough"}
    edited.update(pddl_problem=problem[:start] + spec.goal_pddl().lstrip(), grammar=grammar)
    return edited


def normalize_pddl(text: str) -> str:
    """PDDL text with whitespace and case normalised (for comparing goals)."""
    return " ".join(text.replace("(", " ( ").replace(")", " ) ").split()).lower()
