"""A new benchmark as one adapter class: what a shopping basket costs, with a ``price`` tool.

The agent is asked what a basket costs ("How much do 3 apples and 2 pears cost?"); only the ``price(item)`` tool knows
the prices. The package ships its data (``shop.json``: the catalogue and the tasks of each split) and advertises the
adapter through the ``genenv.benchmarks`` entry point of its ``pyproject.toml``, so after ``pip install`` it is
``gym.make("GenEnv-Shop-v0")`` and ``python -m genenv.train +bench=shop`` with no configuration in genenv.

Required methods: ``load_tasks``, ``tools``, ``start``, ``execute``, ``score``, ``family``. Optional ones used here:
``gold_actions`` (expert traces: the warm start's data) and the generation methods (``families``,
``generation_context``, ``generation_examples``, ``generation_schema``, ``parse_task``, ``validate_task``), which let
the simulator write tasks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from genenv import BenchmarkAdapter, Score, StepResult, Task, ToolCall, Trajectory

DATA = json.loads((Path(__file__).parent / "shop.json").read_text())
CATALOGUE: dict[str, int] = DATA["catalogue"]  # item -> price in cents
MAX_QUANTITY = 9

PRICE_TOOL = {
    "type": "function",
    "function": {
        "name": "price",
        "description": "The price of one item, in cents.",
        "parameters": {
            "type": "object",
            "properties": {"item": {"type": "string", "enum": sorted(CATALOGUE)}},
            "required": ["item"],
        },
    },
}


def basket_text(basket: Mapping[str, int]) -> str:
    parts = [f"{n} {item}{'s' if n > 1 else ''}" for item, n in basket.items()]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


class ShopAdapter(BenchmarkAdapter):
    """Baskets of 1-3 kinds of item; solved when the final answer states the basket's total in cents."""

    name = "shop"
    splits = ("test", "train")
    max_turns = 4  # one ``price`` call per kind of item, then the answer
    validation_split = "test"
    base_split = "train"
    task_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "basket": {
                "type": "object",
                "properties": {item: {"type": "integer", "minimum": 1, "maximum": MAX_QUANTITY} for item in CATALOGUE},
                "additionalProperties": False,
                "minProperties": 1,
                "maxProperties": 3,
            }
        },
        "required": ["basket"],
        "additionalProperties": False,
    }

    def __init__(self, data_dir: str | None = None, currency: str = "cents") -> None:
        super().__init__(data_dir)  # the data ships with the package: data_dir is accepted and unused
        if currency != "cents":
            raise ValueError(f"currency must be 'cents', got {currency!r}")
        self.currency = currency

    # -- required ------------------------------------------------------------------------------------------------
    def load_tasks(self, split: str) -> list[Task]:
        if split not in self.splits:
            raise ValueError(f"shop has splits {self.splits}, not {split!r}")
        return [self._task(basket, f"shop-{split}-{i}", split) for i, basket in enumerate(DATA[split])]

    def _task(self, basket: Mapping[str, int], task_id: str, split: str, source: str = "benchmark") -> Task:
        total = sum(CATALOGUE[item] * n for item, n in basket.items())
        prompt = f"How much do {basket_text(basket)} cost, in {self.currency}? Answer with the number."
        return Task(task_id, self.name, prompt, {"basket": dict(basket), "total": total}, split, source)

    def tools(self, task: Task) -> list[dict[str, Any]]:
        return [PRICE_TOOL]

    def start(self, task: Task) -> None:
        return None  # the catalogue never changes: no episode state

    def execute(self, state: None, call: ToolCall) -> StepResult:
        if call.name != "price":
            return StepResult(f"Error: unknown tool {call.name!r}; the tool is price(item)", error="unknown_tool")
        item = call.arguments.get("item")
        if item not in CATALOGUE:
            return StepResult(f"Error: no item {item!r}; items: {', '.join(sorted(CATALOGUE))}", error="bad_argument")
        return StepResult(json.dumps({"item": item, "price": CATALOGUE[item]}), output=CATALOGUE[item])

    def score(self, task: Task, trajectory: Trajectory) -> Score:
        numbers = re.findall(r"-?\d+", trajectory.final_answer or "")
        solved = bool(numbers) and int(numbers[-1]) == task.gold["total"]
        return Score(float(solved), {"solved": float(solved), "calls": float(len(trajectory.calls))})

    def family(self, task: Task) -> str:
        return f"{len(task.gold['basket'])}-items"

    # -- optional: expert traces ----------------------------------------------------------------------------------
    def gold_actions(self, task: Task) -> list[list[str]]:
        calls = [self.format_call("price", {"item": item}) for item in task.gold["basket"]]
        return [[*calls, f"They cost {task.gold['total']} {self.currency}."]]

    # -- optional: simulator-written tasks ------------------------------------------------------------------------
    def families(self) -> list[str]:
        return ["1-items", "2-items", "3-items"]

    def generation_context(self, family: str, rng: Any, success: Mapping[str, float] | None = None) -> str:
        kinds = family.split("-")[0]
        return (
            f"Write a shopping basket of exactly {kinds} kind(s) of item from: {', '.join(sorted(CATALOGUE))}; "
            f"each quantity 1-{MAX_QUANTITY}."
        )

    def generation_examples(self, family: str, k: int, rng: Any) -> list[dict[str, Any]]:
        kinds = int(family.split("-")[0])
        baskets = [basket for basket in DATA["train"] if len(basket) == kinds]
        picked = rng.permutation(len(baskets))[:k]
        return [{"basket": baskets[int(i)]} for i in picked]

    def generation_schema(self, family: str) -> dict[str, Any]:
        return self.task_schema

    def parse_task(self, obj: dict[str, Any], family: str | None = None) -> Task:
        basket = obj.get("basket") if isinstance(obj, dict) else None
        if not isinstance(basket, dict) or not basket:
            raise ValueError("'basket' must be a non-empty object of item -> quantity")
        for item, n in basket.items():
            if item not in CATALOGUE:
                raise ValueError(f"unknown item {item!r}")
            if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_QUANTITY:
                raise ValueError(f"quantity of {item!r} must be an integer 1-{MAX_QUANTITY}, got {n!r}")
        key = ",".join(f"{item}={n}" for item, n in sorted(basket.items()))
        return self._task(basket, f"shop-gen-{key}", "train", source="generated")

    def validate_task(self, task: Task) -> tuple[bool, str]:
        """Kept only if the expert's actions, played in the env, score 1.0."""
        from genenv.envs.tool_env import score_actions

        if len(task.gold["basket"]) > 3:
            return False, "a basket holds at most 3 kinds of item"
        solved = score_actions(self, task, self.gold_actions(task)[0]) == 1.0
        return (True, "ok") if solved else (False, "the expert's actions do not solve it")
