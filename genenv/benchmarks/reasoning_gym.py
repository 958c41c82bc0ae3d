"""reasoning-gym (open-thought/reasoning-gym) as a genenv benchmark: procedural tasks with verifiable answers.

reasoning-gym generates items of about 100 task families (arithmetic, counting, string puzzles, logic, ...)
from a seed, and each family has a curriculum (attributes with difficulty levels) and its own
``score_answer``. Items are generated, never read from disk: this benchmark needs no data folder.

Families and levels
-------------------
The adapter option ``families`` lists what is used, each entry ``name`` (every level of the family's
curriculum), ``name@L`` (level ``L`` only) or ``name@A-B`` (levels ``A`` to ``B``). A level is
reasoning-gym's *global* curriculum level: ``set_global_level(L)`` puts every attribute of the family's
curriculum at level ``L`` (clamped to that attribute's own range), and ``generate_configuration()``
turns the levels into the dataset config, as reasoning-gym's curriculum code does. The curriculum
unit (``family(task)``, the key of the agent's success statistics) is ``name@L``.

Splits (deterministic)
----------------------
Per configured family and level: ``test`` = ``test_per_level`` items with reasoning-gym seeds
``10**9 + i``; ``validation`` = ``validation_per_level`` items with seeds ``1.5 * 10**9 + i``;
``train`` = ``train_per_level`` items with seeds ``0, 1, 2, ...``. Test and validation questions are
held out: a train item or a generated task whose question equals one of them is skipped / rejected.

Generated tasks
---------------
The simulator writes a spec ``{"family": name, "level": L, "seed": s}``. Asked for family key
``name@L`` (the "current level" its difficulty instruction is about), it may pick any configured level within
``level_step`` steps of ``L`` (``generation_schema`` enumerates them; ``level_step=None``: any configured level), so
"write a harder task" means a higher level. With ``requests="families"`` it is asked for a family ``name`` and
chooses the level itself; its prompt shows the agent's success per level. ``seed`` is the reasoning-gym seed, an
integer below ``10**9``, never a held-out seed (``generation_schema`` bounds it, so constrained decoding writes at most
nine digits, without a sign; the schema shown in the simulator's prompt says "any integer"). ``parse_task`` checks
the spec against the family's curriculum and generates the item with the family's own generator, so the gold answer
is reasoning-gym's; ``validate_task`` checks that ``score_answer`` gives that answer 1.0 and that the
question is not held out.

Written expressions (``task_spec="expression"``)
-----------------------------------------------
A seed is blind: it picks the item, so the simulator controls only the level, and within a level the agent solves
most items in all attempts or in none. For the arithmetic families (``basic_arithmetic``, ``chain_sum``,
``products``) the option ``task_spec="expression"`` has the simulator write the item itself,
``{"family": name, "expression": "37 * 12"}``: :mod:`~genenv.benchmarks.reasoning_gym_expressions` parses it in the
family's grammar, evaluates it exactly and writes the family's question around it. The task's level is measured, not
requested: the lowest configured level whose ranges of terms and digits hold the expression; it must lie within
``level_step`` of the requested key's level, as a seed spec's level must. Such a task scores with the family's own
``score_answer``, like the family's items; train and held-out items are the family's generated items either way.

Answers and scoring
-------------------
No tools: the agent's plain-text final answer ends the episode. :func:`extract_answer` takes the last
``<answer>...</answer>`` if there is one; else the text after the last ``Answer:`` / ``Final answer:`` /
``The answer is`` / ``The result (of ...) is``; else, when the reply's last line is an equation
``... = value``, the value; else the whole reply. It then strips surrounding whitespace, quotes,
backticks and ``**``, and a trailing period when the answer is one word. The score is the family's own
``score_answer(extracted, entry)`` (1.0 exact, some families give partial credit); ``solved`` in the
breakdown is 1.0 only for a full score.

Worked answers (``answer_format="worked"``)
-------------------------------------------
With ``answer_format="answer"`` the prompt asks for only the final answer, and the expert trace of an
arithmetic item is ``expression = answer``: one line with nothing to reason over, so a small agent's attempts at a
task mostly all agree, and GRPO has few groups whose rewards differ. ``answer_format="worked"`` (the default) asks the
agent to work
the problem out and to give the answer as ``<answer>...</answer>``, as reasoning-gym's own default system prompt
does, and reads the reply the way reasoning-gym's ``extract_answer`` does: the text of the last
``<answer>...</answer>`` (stripped), and no answer without one; the scorer sees only that text. The expert trace of an
arithmetic item then carries the working, one operation a step
(:func:`~genenv.benchmarks.reasoning_gym_expressions.worked_steps`): ``12 + 34 - 5`` becomes
``12 + 34 - 5 = 46 - 5 = 41`` and then ``<answer>41</answer>``.

Partial credit (a deviation, switchable)
----------------------------------------
The official ``score_answer`` of many families (``basic_arithmetic`` among them) gives ``len(gold) / len(answer)``
when the gold answer is a substring of a wrong one: gold ``7`` earns 0.5 for the answer ``17``, and hedging with
several numbers earns a share. That is a reward a model can earn without solving the task, so by default
(``partial_credit=False``) the reward is 1.0 for a full official score and 0 otherwise (and ``p_hat`` is the success
rate, as in the paper). ``partial_credit=True`` rewards the official score itself. Whatever the setting, the
breakdown keeps the official score (``official``) and :meth:`ReasoningGymAdapter.reporting_adapter` scores held-out
tasks officially, so reported scores are the official ones.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
from collections import defaultdict
from collections.abc import Mapping
from functools import lru_cache
from importlib.metadata import version
from typing import Any, ClassVar

from .base import BenchmarkAdapter, Score, StepResult, Task, ToolCall, Trajectory, register_benchmark
from .reasoning_gym_expressions import FAMILIES as EXPRESSION_FAMILIES
from .reasoning_gym_expressions import expression_pattern, parse_expression, worked_steps


@lru_cache(maxsize=1)
def _reasoning_gym() -> Any:
    """reasoning-gym's factory module, imported on first use (``import genenv`` stays light without the extra)."""
    try:
        import reasoning_gym  # noqa: F401  (registers the datasets)
        from reasoning_gym import factory
    except ImportError as error:  # pragma: no cover - exercised only without the optional extra
        raise ImportError(
            "the reasoning_gym benchmark needs the reasoning-gym package: pip install 'genenv[reasoning-gym]'"
        ) from error
    return factory


def create_curriculum(family: str) -> Any:
    return _reasoning_gym().create_curriculum(family)


def _datasets() -> dict[str, Any]:
    return _reasoning_gym().DATASETS


logger = logging.getLogger(__name__)

BENCHMARK = "reasoning_gym"
SPLITS = ("test", "validation", "train")
#: reasoning-gym seeds: train items and generated tasks lie below ``HELD_OUT_SEED``.
HELD_OUT_SEED = 10**9
SPLIT_SEED_BASE = {"train": 0, "test": HELD_OUT_SEED, "validation": HELD_OUT_SEED + HELD_OUT_SEED // 2}
#: train items tried per wanted item before a (family, level) gives up (held-out collisions).
TRAIN_ATTEMPTS = 4
#: the families and levels the embedded SmolLM2 solves zero-shot sometimes but not always, at some level
#: (``experiments/curriculum/reasoning_gym_zero_shot.py``; measured: ``results/README.md``)
DEFAULT_FAMILIES = ("basic_arithmetic@0-2", "chain_sum@0-2", "products@0-2")
MAX_EXAMPLE_CHARS = 160
#: what the simulator writes for a generated task: a seed that picks an item, or the item's expression
TASK_SPECS = ("seed", "expression")
#: what a simulator request names: a family key ``name@L`` (the level near ``L``) or a family (the level its choice)
REQUESTS = ("levels", "families")
#: what the agent is asked to write: only the final answer, or its working and then ``<answer>...</answer>``
ANSWER_FORMATS = ("answer", "worked")
EXPRESSION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "family": {"type": "string", "description": "reasoning-gym task family"},
        "expression": {"type": "string", "description": "the arithmetic expression the agent evaluates"},
    },
    "required": ["family", "expression"],
    "additionalProperties": False,
}

_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
#: reasoning-gym's own pattern (``reasoning_gym.utils.extract_answer``): case-sensitive, the last match counts
_REASONING_GYM_TAG = re.compile(r"<answer>\s?(.*?)\s?</answer>", re.DOTALL)
_ANSWER_OPEN = re.compile(r"<answer>(.*)$", re.DOTALL | re.IGNORECASE)
_ANSWER_LEAD = re.compile(
    r"\banswer\s*\**\s*[:=]|\bthe (?:final )?(?:answer|result)\b[^\n.=]{0,80}?\bis\b:?", re.IGNORECASE
)
_FAMILY_ENTRY = re.compile(r"^([a-z0-9_]+)(?:@(\d+)(?:-(\d+))?)?$")


# -- reasoning-gym access ---------------------------------------------------------------------


def max_level(family: str) -> int:
    """The highest global level of ``family``'s curriculum (over its attributes)."""
    return max(len(attr.levels) for attr in create_curriculum(family).attributes.values()) - 1


def _configuration(family: str, level: int, seed: int) -> Any:
    curriculum = create_curriculum(family)
    curriculum.set_global_level(level)
    return curriculum.generate_configuration({"seed": seed, "size": 1})


@lru_cache(maxsize=8192)
def generate_entry(family: str, level: int, seed: int) -> dict[str, Any]:
    """Item 0 of ``family`` at global ``level`` with reasoning-gym seed ``seed`` (deterministic).

    Raises whatever reasoning-gym raises for a configuration it cannot generate.
    """
    dataset_cls = _datasets()[family][0]
    return dataset_cls(_configuration(family, level, seed))[0]


@lru_cache(maxsize=256)
def _scorer(family: str, level: int) -> Any:
    """A dataset of ``family`` at ``level`` whose ``score_answer`` scores that level's items."""
    return _datasets()[family][0](_configuration(family, level, 0))


@lru_cache(maxsize=1024)
def level_ranges(family: str, level: int) -> tuple[int, int, int, int]:
    """(min terms, max terms, min digits, max digits) of an arithmetic family's level."""
    config = _configuration(family, level, 0)
    return config.min_terms, config.max_terms, config.min_digits, config.max_digits


@lru_cache(maxsize=1024)
def level_description(family: str, level: int) -> str:
    """The dataset settings a level stands for, e.g. ``num_terms=2-3, num_digits=1-2``."""
    from reasoning_gym.coaching.attributes import RangeAttributeDefinition

    config = dataclasses.asdict(_configuration(family, level, 0))
    parts = []
    for attr in create_curriculum(family).attributes.values():
        if isinstance(attr, RangeAttributeDefinition):
            lo, hi = config[attr.lower_field_name], config[attr.upper_field_name]
            parts.append(f"{attr.name}={lo}" if lo == hi else f"{attr.name}={lo}-{hi}")
        else:
            parts.append(f"{attr.name}={config[attr.field_name]}")
    return ", ".join(parts)


def parse_family_entry(entry: str) -> tuple[str, list[int]]:
    """``name`` / ``name@L`` / ``name@A-B`` -> (name, levels); ``ValueError`` says what is wrong."""
    match = _FAMILY_ENTRY.match(entry.strip()) if isinstance(entry, str) else None
    if match is None:
        raise ValueError(f"family entry {entry!r} is not 'name', 'name@L' or 'name@A-B'")
    name, first, last = match.groups()
    if name not in _datasets():
        raise ValueError(f"unknown reasoning-gym family {name!r}")
    if name not in _reasoning_gym().CURRICULA:
        raise ValueError(f"reasoning-gym family {name!r} has no curriculum (no difficulty levels)")
    top = max_level(name)
    lo = 0 if first is None else int(first)
    hi = top if first is None else int(last if last is not None else first)
    if not 0 <= lo <= hi <= top:
        raise ValueError(f"levels {lo}-{hi} of {name!r} are out of range: its curriculum has levels 0-{top}")
    return name, list(range(lo, hi + 1))


def extract_answer(text: str | None) -> str | None:
    """The answer in a final reply (see the module docstring); ``None`` when there is none."""
    if not isinstance(text, str) or not text.strip():
        return None
    tags = _ANSWER_TAG.findall(text)
    if tags:
        answer = tags[-1]
    elif (opened := _ANSWER_OPEN.search(text)) is not None:  # cut off before the closing tag
        answer = opened.group(1)
    else:
        leads = list(_ANSWER_LEAD.finditer(text))
        answer = text
        last_line = text.strip().splitlines()[-1]
        if leads:  # the rest of that line, or the lines below when the line ends there
            first, _, below = text[leads[-1].end() :].lstrip("* \t").partition("\n")
            answer = first if first.strip() else below
        elif "=" in last_line and last_line.rpartition("=")[2].strip():  # "2 + 3 = 5": the result
            answer = last_line.rpartition("=")[2]
    answer = answer.strip()
    for left, right in (("**", "**"), ("`", "`"), ('"', '"'), ("'", "'")):
        if len(answer) > len(left) + len(right) and answer.startswith(left) and answer.endswith(right):
            answer = answer[len(left) : -len(right)].strip()
    if answer.endswith(".") and not any(c.isspace() for c in answer):
        answer = answer[:-1]
    return answer or None


def extract_tagged_answer(text: str | None) -> str | None:
    """The text of the last ``<answer>...</answer>`` in ``text``, stripped, as reasoning-gym's ``extract_answer``
    reads it; ``None`` without one."""
    if not isinstance(text, str):
        return None
    tags = _REASONING_GYM_TAG.findall(text)
    return tags[-1].strip() if tags else None


def _key(family: str, level: int) -> str:
    return f"{family}@{level}"


# -- the adapter --------------------------------------------------------------------------------


@register_benchmark(BENCHMARK)
class ReasoningGymAdapter(BenchmarkAdapter):
    """reasoning-gym task families at chosen curriculum levels, scored by each family's ``score_answer``.

    Args:
        data_dir: unused (items are generated); accepted like every adapter's.
        families: entries ``name``, ``name@L`` or ``name@A-B`` (default :data:`DEFAULT_FAMILIES`).
        test_per_level: held-out test items per family and level.
        validation_per_level: held-out validation items per family and level.
        train_per_level: training (base data) items per family and level.
        partial_credit: reward the official partial credit (see the module docstring; default: 1.0 only if solved).
        level_step: how many levels from the requested key's level a generated task may be (None: any level).
        requests: what the simulator is asked for: ``"levels"`` (a family key ``name@L``; the level within
            ``level_step`` of ``L``) or ``"families"`` (a family; the simulator chooses any configured level, the
            agent's success per level shown in its prompt; ``level_step`` is not used). The agent's success is kept
            per key ``name@L`` either way.
        task_spec: what the simulator writes: ``"seed"`` (family, level, seed) or ``"expression"`` (family and the
            item's expression; the arithmetic families only; see the module docstring).
        answer_format: ``"answer"`` (only the final answer) or ``"worked"`` (working, then ``<answer>...</answer>``,
            read as reasoning-gym reads it; see the module docstring).
    """

    name = BENCHMARK
    splits = SPLITS
    max_turns = 2
    has_tools = False
    default_split = "test"
    validation_split = "validation"  # held out like test (its own seeds)
    base_split = "train"  # expert traces of the gold answers, seeds disjoint from the others
    task_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "family": {"type": "string", "description": "reasoning-gym task family"},
            "level": {"type": "integer", "minimum": 0, "description": "curriculum level (higher is harder)"},
            "seed": {"type": "integer", "description": "any integer; picks the item"},
        },
        "required": ["family", "level", "seed"],
        "additionalProperties": False,
    }

    def __init__(
        self,
        data_dir=None,
        families: list[str] | tuple[str, ...] | str | None = DEFAULT_FAMILIES,
        test_per_level: int = 16,
        validation_per_level: int = 8,
        train_per_level: int = 64,
        partial_credit: bool = False,
        level_step: int | None = 1,
        task_spec: str = "seed",
        answer_format: str = "worked",
        requests: str = "levels",
    ) -> None:
        super().__init__(data_dir)
        if requests not in REQUESTS:
            raise ValueError(f"requests must be one of {', '.join(REQUESTS)}, got {requests!r}")
        self.requests = requests
        if task_spec not in TASK_SPECS:
            raise ValueError(f"task_spec must be one of {', '.join(TASK_SPECS)}, got {task_spec!r}")
        if answer_format not in ANSWER_FORMATS:
            raise ValueError(f"answer_format must be one of {', '.join(ANSWER_FORMATS)}, got {answer_format!r}")
        self.answer_format = answer_format
        self.task_spec = task_spec
        self.partial_credit = partial_credit
        if level_step is not None and (type(level_step) is not int or level_step < 0):
            raise ValueError(f"level_step must be an integer >= 0 or None (any level), got {level_step!r}")
        self.level_step = level_step
        self._options = {"families": families, "test_per_level": test_per_level,
                         "validation_per_level": validation_per_level, "train_per_level": train_per_level,
                         "level_step": level_step, "task_spec": task_spec,
                         "answer_format": answer_format, "requests": requests}  # fmt: skip
        self._reporting: ReasoningGymAdapter | None = None
        entries = [families] if isinstance(families, str) else list(families or DEFAULT_FAMILIES)
        if not entries:
            raise ValueError("families is empty: name at least one reasoning-gym family")
        self.levels: dict[str, list[int]] = {}
        for entry in entries:
            name, levels = parse_family_entry(entry)
            self.levels[name] = sorted(set(self.levels.get(name, [])) | set(levels))
        for name, levels in self.levels.items():
            for level in levels:  # some curricula define levels their generator rejects
                try:
                    generate_entry(name, level, SPLIT_SEED_BASE["test"])
                except Exception as error:  # noqa: BLE001
                    raise ValueError(
                        f"reasoning-gym cannot generate {_key(name, level)} ({type(error).__name__}: {error}); "
                        f"choose other levels with '{name}@A-B'"
                    ) from None
        if task_spec == "expression":
            unwritable = [name for name in self.levels if name not in EXPRESSION_FAMILIES]
            if unwritable:
                raise ValueError(
                    f"task_spec='expression' needs families whose items are one expression "
                    f"({', '.join(EXPRESSION_FAMILIES)}); not: {', '.join(unwritable)}"
                )
            self.task_schema = EXPRESSION_SCHEMA
        self.per_level = {"test": test_per_level, "validation": validation_per_level, "train": train_per_level}
        if any(n < 0 for n in self.per_level.values()):
            raise ValueError("items per level must be >= 0")
        self.version = version("reasoning-gym")
        self._tasks: dict[str, list[Task]] = {}
        self._held_out: frozenset[str] | None = None

    # -- data ---------------------------------------------------------------------------
    def load_tasks(self, split: str) -> list[Task]:
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; choose from {', '.join(SPLITS)}")
        if split not in self._tasks:
            self._tasks[split] = [
                task
                for name, levels in self.levels.items()
                for level in levels
                for task in self._split_items(split, name, level)
            ]
        return list(self._tasks[split])

    def _split_items(self, split: str, family: str, level: int) -> list[Task]:
        wanted, base = self.per_level[split], SPLIT_SEED_BASE[split]
        if split != "train":
            return [self._task(family, level, base + i, split) for i in range(wanted)]
        held_out = self.held_out_questions()
        tasks: list[Task] = []
        for seed in range(wanted * TRAIN_ATTEMPTS):
            if len(tasks) == wanted:
                break
            task = self._task(family, level, seed, split)
            if task.prompt not in held_out:
                tasks.append(task)
        if len(tasks) < wanted:
            logger.warning("%s: only %d train items differ from the held-out ones", _key(family, level), len(tasks))
        return tasks

    def held_out_questions(self) -> frozenset[str]:
        """Questions of the test and validation items; no train item or generated task may repeat one."""
        if self._held_out is None:
            self._held_out = frozenset(
                generate_entry(name, level, SPLIT_SEED_BASE[split] + i)["question"]
                for split in ("test", "validation")
                for name in self.levels
                for level in self.levels[name]
                for i in range(self.per_level[split])
            )
        return self._held_out

    def _task(
        self, family: str, level: int, seed: int, split: str, source: str = "benchmark", spec_seed: int | None = None
    ) -> Task:
        entry = generate_entry(family, level, seed)
        metadata: dict[str, Any] = {
            "family": family,
            "level": level,
            "seed": seed,
            "settings": level_description(family, level),
            "reasoning_gym_version": self.version,
        }
        if spec_seed is not None:
            metadata["spec_seed"] = spec_seed
        return Task(
            task_id=f"{BENCHMARK}-{family}@{level}-{seed}",
            benchmark=self.name,
            prompt=entry["question"],
            gold={"family": family, "level": level, "seed": seed, "answer": str(entry["answer"])},
            split=split,
            source=source,
            metadata=metadata,
        )

    # -- tools and execution --------------------------------------------------------------
    def tools(self, task: Task) -> list[dict[str, Any]]:
        return []

    def start(self, task: Task) -> None:
        return None

    def execute(self, state: Any, call: ToolCall) -> StepResult:
        name = getattr(call, "name", "?")
        return StepResult(
            observation=f"Error (unknown_tool): there are no tools here ({name!r} was called). "
            "Reply with the final answer as plain text.",
            error="unknown_tool",
        )

    def system_prompt(self, task: Task) -> str:
        if self.answer_format == "worked":
            return (
                "There are no tools here. Work the problem out step by step, one operation at a time, then give the "
                "final answer in the format the problem asks for, inside <answer> </answer> tags: <answer>42</answer>."
            )
        return (
            "There are no tools here. Solve the problem and reply in plain text with only the final answer, "
            "in the format the problem asks for."
        )

    def gold_actions(self, task: Task) -> list[list[str]]:
        """The gold answer as the final answer (no tools). Where reasoning-gym's entry records the expression it asks
        about (the arithmetic families), the expert writes ``expression = answer``: the shortest worked form, the one
        small models write on their own, which :func:`extract_answer` reads as the answer. With
        ``answer_format="worked"`` it writes the working one operation a step and then ``<answer>answer</answer>``."""
        answer = (task.gold or {}).get("answer") if isinstance(task.gold, dict) else None
        if answer is None:
            return []
        family, _, entry = _entry(task.gold)
        expression = entry.get("metadata", {}).get("expression")
        worked = isinstance(expression, str) and bool(expression.strip())
        if self.answer_format == "worked":
            stepwise = worked and family in EXPRESSION_FAMILIES
            working = " = ".join(worked_steps(family, expression)) + "\n" if stepwise else ""
            return [[f"{working}<answer>{answer}</answer>"]]
        return [[f"{expression} = {answer}" if worked else str(answer)]]

    def few_shot_exchanges(self) -> list[dict[str, Any]]:
        """None: with no tools, worked tool-call exchanges only teach a model to imitate tool responses."""
        return []

    # -- scoring --------------------------------------------------------------------------
    def score(self, task: Task, trajectory: Trajectory) -> Score:
        read = extract_tagged_answer if self.answer_format == "worked" else extract_answer
        answer = read(trajectory.final_answer)
        breakdown: dict[str, Any] = {"answered": float(answer is not None), "answer": (answer or "")[:200]}
        if answer is None:
            return Score(0.0, {**breakdown, "solved": 0.0})
        try:
            family, level, entry = _entry(task.gold)
            value = float(_scorer(family, level).score_answer(answer, entry))
        except Exception as error:  # noqa: BLE001 - a scorer failure scores 0, with the reason
            return Score(0.0, {**breakdown, "solved": 0.0, "error": f"{type(error).__name__}: {error}"})
        value = min(1.0, max(0.0, value))
        solved = float(value == 1.0)
        return Score(value if self.partial_credit else solved, {**breakdown, "solved": solved, "official": value})

    def reporting_adapter(self) -> ReasoningGymAdapter:
        """This adapter with the official partial credit (the same families, levels and splits)."""
        if self.partial_credit:
            return self
        if self._reporting is None:
            self._reporting = ReasoningGymAdapter(self.data_dir, **self._options, partial_credit=True)
        return self._reporting

    def aggregate(self, tasks: list[Task], scores: list[Score]) -> dict[str, float]:
        """Mean score, solve rate (full scores) and answer rate, then the mean score per level."""
        metrics = super().aggregate(tasks, scores)
        per_level: dict[int, list[float]] = defaultdict(list)
        for task, score in zip(tasks, scores):
            per_level[int(task.gold["level"])].append(score.value)
        metrics.update({f"score/level-{level}": sum(v) / len(v) for level, v in sorted(per_level.items())})
        return metrics

    def family(self, task: Task) -> str:
        gold = task.gold if isinstance(task.gold, dict) else {}
        return _key(str(gold.get("family", "unknown")), int(gold.get("level", 0)))

    # -- generated tasks --------------------------------------------------------------------
    def families(self) -> list[str]:
        """What the simulator is asked for: family keys ``name@L`` of every configured family and level, or (with
        ``requests="families"``) the configured families."""
        if self.requests == "families":
            return list(self.levels)
        return [_key(name, level) for name, levels in self.levels.items() for level in levels]

    def _requested(self, request: str) -> tuple[str, int | None, list[int]]:
        """(name, requested level or None, levels the simulator may write) for a request from :meth:`families`."""
        if self.requests == "families":
            if request not in self.levels:
                raise ValueError(f"unknown family {request!r}; choose from {', '.join(self.families())}")
            return request, None, self.levels[request]
        name, _, level = request.partition("@")
        if name not in self.levels or not level.isdigit() or int(level) not in self.levels[name]:
            raise ValueError(f"unknown family key {request!r}; choose from {', '.join(self.families())}")
        requested = int(level)
        step = self.level_step
        return name, requested, [lv for lv in self.levels[name] if step is None or abs(lv - requested) <= step]

    def request_success(self, family: str, success: Mapping[str, float]) -> float | None:
        """A key's success; for a family request the mean over its levels the agent has played (None: none)."""
        if self.requests != "families":
            return success.get(family)
        rates = [
            success[_key(family, level)] for level in self.levels.get(family, []) if _key(family, level) in success
        ]
        return sum(rates) / len(rates) if rates else None

    def requested_family(self, task: Task) -> str:
        gold = task.gold if isinstance(task.gold, dict) else {}
        return str(gold.get("family", "unknown")) if self.requests == "families" else self.family(task)

    def generation_context(self, family: str, rng: Any, success: Mapping[str, float] | None = None) -> str:
        """The family, what each configured level means (settings, an example) and, given ``success`` (family key ->
        the agent's recent success), the agent's success per level."""
        name, requested, allowed = self._requested(family)
        writes_expressions = self.task_spec == "expression"
        configured = f"reasoning-gym family: {name}. Configured levels: {self.levels[name][0]}-{self.levels[name][-1]}"
        if requested is None:
            first = f"{configured} (higher is harder); you choose the level."
        else:
            first = (
                f"{configured} (higher is harder). Current level: {requested} (the instruction below is about it); "
                f"you may write level {', '.join(map(str, allowed))}."
            )
        lines = [first, "Levels:"]
        for level in self.levels[name]:
            example = self._level_example(name, level) if writes_expressions else self._task(name, level, 0, "train")
            shown = _example_expression(example) if writes_expressions else " ".join(example.prompt.split())
            if len(shown) > MAX_EXAMPLE_CHARS:
                shown = shown[:MAX_EXAMPLE_CHARS] + "..."
            line = f"- level {level} ({level_description(name, level)}): e.g. {shown!r} -> {example.gold['answer']!r}"
            rate = (success or {}).get(_key(name, level))
            lines.append(line + (f"; the agent solves {rate:.0%}" if rate is not None else ""))
        if writes_expressions:
            lines.append(
                'Answer {"family": ..., "expression": ...} with the expression itself, its numbers and operators '
                "separated by spaces; how many numbers it has and how many digits they have set its level, and the "
                "numbers you pick make it easier or harder within the level."
            )
        else:
            lines.append('Answer {"family": ..., "level": ..., "seed": ...}; the seed (any integer) picks the item.')
        return "\n".join(lines)

    def generation_schema(self, family: str) -> dict[str, Any]:
        """``task_schema`` with the family fixed and, for a seed spec, the level one of those within a step of the
        request; for an expression, the family's grammar up to the terms and digits of the highest such level."""
        name, _, allowed = self._requested(family)
        if self.task_spec == "expression":
            _, max_terms, _, max_digits = level_ranges(name, allowed[-1])
            return {
                "type": "object",
                "properties": {
                    "family": {"type": "string", "enum": [name]},
                    "expression": {"type": "string", "pattern": expression_pattern(name, max_terms, max_digits)},
                },
                "required": ["family", "expression"],
                "additionalProperties": False,
            }
        return {
            "type": "object",
            "properties": {
                "family": {"type": "string", "enum": [name]},
                "level": {"type": "integer", "enum": allowed, "minimum": allowed[0], "maximum": allowed[-1]},
                "seed": {"type": "integer", "minimum": 0, "maximum": HELD_OUT_SEED - 1},
            },
            "required": ["family", "level", "seed"],
            "additionalProperties": False,
        }

    def generation_examples(self, family: str, k: int, rng: Any) -> list[dict[str, Any]]:
        """Specs (seed or expression, as ``task_spec`` says) of up to ``k`` train items at the levels the simulator
        may write for ``family``."""
        name, _, allowed = self._requested(family)
        items = [t for t in self.load_tasks("train") if t.gold["family"] == name and t.gold["level"] in allowed]
        if self.task_spec == "expression":
            expressions = [_example_expression(t) for t in items]
            specs = [
                {"family": name, "expression": text}
                for text in expressions
                if self._measured_level(name, text) in allowed
            ]
        else:
            specs = [{key: t.gold[key] for key in ("family", "level", "seed")} for t in items]
        k = min(max(k, 0), len(specs))
        return [specs[int(i)] for i in rng.choice(len(specs), size=k, replace=False)] if k else []

    def parse_task(self, obj: dict[str, Any] | str, family: str | None = None) -> Task:
        if isinstance(obj, str):
            try:
                obj = json.loads(obj)
            except ValueError as error:
                raise ValueError(f"the task spec is not valid JSON: {error}") from None
        keys = tuple(self.task_schema["required"])
        if not isinstance(obj, dict):
            raise ValueError(f"the task spec must be a JSON object with {', '.join(map(repr, keys))}")
        extra = sorted(set(obj) - set(keys))
        if extra:
            raise ValueError(f"unknown key(s) in the task spec: {', '.join(map(str, extra))}")
        missing = [key for key in keys if key not in obj]
        if missing:
            raise ValueError(f"the task spec misses {', '.join(missing)}")
        name = obj["family"]
        if not isinstance(name, str):
            raise ValueError("'family' must be a string")
        if name not in self.levels:
            known = "known to reasoning-gym but not configured" if name in _datasets() else "unknown"
            raise ValueError(f"family {name!r} is {known}; configured: {', '.join(self.levels)}")
        if self.task_spec == "expression":
            if not isinstance(obj["expression"], str):
                raise ValueError("'expression' must be a string")
            expression = parse_expression(name, obj["expression"])
            level = self._level_of(name, expression.terms, expression.digits)
        else:
            level, seed = obj["level"], obj["seed"]
            for key, value in (("level", level), ("seed", seed)):
                if not isinstance(value, int) or isinstance(value, bool):
                    raise ValueError(f"'{key}' must be an integer, got {value!r}")
            levels = self.levels[name]
            if level not in levels:
                raise ValueError(
                    f"level {level} of {name!r} is out of range: configured levels {levels[0]}-{levels[-1]}"
                )
        if family is not None:
            requested, _, allowed = self._requested(family)
            if requested != name:
                raise ValueError(f"family {name!r} is not the requested family {requested!r}")
            if level not in allowed:  # only with requests="levels": a family request allows every level
                step = self.level_step
                raise ValueError(f"level {level} is more than level_step={step} from the requested {family!r}")
        if self.task_spec == "expression":
            return self._written_task(name, level, expression)
        try:
            return self._task(name, level, seed % HELD_OUT_SEED, "train", source="generated", spec_seed=seed)
        except Exception as error:  # noqa: BLE001 - reasoning-gym cannot generate this configuration
            raise ValueError(f"reasoning-gym cannot generate {name}@{level}: {type(error).__name__}: {error}") from None

    def _level_of(self, family: str, terms: int, digits: int) -> int:
        """The lowest configured level of ``family`` whose ranges hold ``terms`` numbers of up to ``digits`` digits."""
        for level in self.levels[family]:
            min_terms, max_terms, min_digits, max_digits = level_ranges(family, level)
            if min_terms <= terms <= max_terms and min_digits <= digits <= max_digits:
                return level
        top = self.levels[family][-1]
        raise ValueError(
            f"{terms} numbers of up to {digits} digits fit no configured level of {family!r} "
            f"(levels {self.levels[family][0]}-{top}; level {top}: {level_description(family, top)})"
        )

    def _measured_level(self, family: str, text: str) -> int | None:
        """The level of an expression of ``family`` (None when it fits no configured level)."""
        expression = parse_expression(family, text)
        try:
            return self._level_of(family, expression.terms, expression.digits)
        except ValueError:
            return None

    def _level_example(self, family: str, level: int) -> Task:
        """The first train seed's item of ``family`` at ``level`` whose expression measures ``level`` (a level's items
        can be of a lower one: two one-digit numbers are level 0 whatever level drew them)."""
        for seed in range(64):
            task = self._task(family, level, seed, "train")
            if self._measured_level(family, _example_expression(task)) == level:
                return task
        return self._task(family, level, 0, "train")

    def _written_task(self, family: str, level: int, expression: Any) -> Task:
        """A generated task from an expression the simulator wrote (parsed, its level measured)."""
        digest = hashlib.sha1(expression.text.encode()).hexdigest()[:12]
        return Task(
            task_id=f"{BENCHMARK}-{family}@{level}-expression-{digest}",
            benchmark=self.name,
            prompt=EXPRESSION_FAMILIES[family].format_question(expression.text),
            gold={"family": family, "level": level, "expression": expression.text, "answer": str(expression.value)},
            split="train",
            source="generated",
            metadata={
                "family": family,
                "level": level,
                "expression": expression.text,
                "terms": expression.terms,
                "digits": expression.digits,
                "settings": level_description(family, level),
                "reasoning_gym_version": self.version,
            },
        )

    def validate_task(self, task: Task) -> tuple[bool, str]:
        try:
            family, level, entry = _entry(task.gold)
        except (TypeError, KeyError, ValueError) as error:
            return False, f"bad task spec: {error}"
        except Exception as error:  # noqa: BLE001
            return False, f"reasoning-gym failed on {task.gold!r:.120}: {type(error).__name__}: {error}"
        if level not in self.levels.get(family, []):
            return False, f"{_key(family, level)} is not a configured family and level"
        written = "expression" in task.gold
        if written:
            expression = parse_expression(family, task.gold["expression"])
            if not expression.exact:
                return False, "a division in the expression leaves a remainder"
            try:
                measured = self._level_of(family, expression.terms, expression.digits)
            except ValueError as error:
                return False, str(error)
            if measured != level:
                return False, f"the expression is of level {measured}, not {level}"
        elif task.source == "generated" and not 0 <= task.gold["seed"] < HELD_OUT_SEED:
            return False, f"seed {task.gold['seed']} is in the held-out range"
        gold = str(entry["answer"])
        try:
            value = _scorer(family, level).score_answer(gold, entry)
        except Exception as error:  # noqa: BLE001
            return False, f"score_answer failed on {_key(family, level)}: {type(error).__name__}: {error}"
        if entry["question"] != task.prompt or task.gold.get("answer") != gold:
            what = "the expression gives" if written else "reasoning-gym generates for this spec"
            return False, f"the question or answer differs from what {what}"
        if value != 1.0:
            return False, f"score_answer gives the gold answer {value}, not 1.0"
        if task.source == "generated" and task.prompt in self.held_out_questions():
            return False, "the question repeats a held-out test/validation item"
        return True, "ok"


def _example_expression(task: Task) -> str:
    """The expression of a generated item of an arithmetic family."""
    return str(_entry(task.gold)[2]["metadata"]["expression"])


def _spec(gold: Any) -> tuple[str, int, int]:
    """(family, level, seed) of a task's gold spec."""
    family, level, seed = gold["family"], gold["level"], gold["seed"]
    if not isinstance(family, str) or family not in _datasets():
        raise ValueError(f"unknown family {family!r}")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (level, seed)):
        raise ValueError("level and seed must be integers")
    return family, level, seed


def _entry(gold: Any) -> tuple[str, int, dict[str, Any]]:
    """(family, level, reasoning-gym entry) of a task's gold: the generated item of a seed spec, or an entry built
    from a written expression (question, answer, and the expression in ``metadata``, as the family's items have)."""
    if "expression" not in gold:
        family, level, seed = _spec(gold)
        return family, level, generate_entry(family, level, seed)
    family, level = gold["family"], gold["level"]
    if not isinstance(level, int) or isinstance(level, bool):
        raise ValueError("level must be an integer")
    expression = parse_expression(family, gold["expression"])
    return (
        family,
        level,
        {
            "question": EXPRESSION_FAMILIES[family].format_question(expression.text),
            "answer": str(expression.value),
            "metadata": {"expression": expression.text, "num_terms": expression.terms, "num_digits": expression.digits},
        },
    )


__all__ = [
    "DEFAULT_FAMILIES",
    "ReasoningGymAdapter",
    "extract_answer",
    "extract_tagged_answer",
    "generate_entry",
    "parse_family_entry",
]
