"""A tiny arithmetic benchmark used to test the env, the simulator plumbing and the registry."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from genenv.benchmarks.base import BenchmarkAdapter, Score, StepResult, Task, ToolCall, Trajectory

ADD_TOOL = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}


class ToyAdapter(BenchmarkAdapter):
    """Tasks 'what is a + b?'; one tool ``add``; solved when the final answer holds the sum."""

    name = "toy"
    splits = ("train", "test")
    max_turns = 8
    task_schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}

    def load_tasks(self, split: str) -> list[Task]:
        offset = 0 if split == "train" else 100
        return [self._task(i + offset, i + 1, split) for i in range(5)]

    def _task(self, a: int, b: int, split: str, source: str = "benchmark") -> Task:
        return Task(f"toy-{a}-{b}", self.name, f"What is {a} + {b}?", {"sum": a + b}, split, source, {"a": a})

    def tools(self, task: Task) -> list[dict[str, Any]]:
        return [ADD_TOOL]

    def start(self, task: Task) -> dict:
        return {"calls": 0}

    def execute(self, state: dict, call: ToolCall) -> StepResult:
        state["calls"] += 1
        if call.name != "add":
            return StepResult(f"Error: unknown tool {call.name!r}", error="unknown_tool")
        a, b = call.arguments.get("a"), call.arguments.get("b")
        if not isinstance(a, int) or not isinstance(b, int):
            return StepResult("Error: a and b must be integers", error="wrong_type")
        return StepResult(json.dumps({"result": a + b}), output=a + b)

    def gold_actions(self, task: Task) -> list[list[str]]:
        a, b = task.metadata["a"], task.gold["sum"] - task.metadata["a"]
        return [[self.format_call("add", {"a": a, "b": b}), f"It is {a + b}."]]

    def score(self, task: Task, trajectory: Trajectory) -> Score:
        answer = trajectory.final_answer or ""
        numbers = [int(n) for n in re.findall(r"-?\d+", answer)]
        solved = task.gold["sum"] in numbers
        return Score(float(solved), {"answered": float(bool(answer)), "calls": float(len(trajectory.calls))})

    def family(self, task: Task) -> str:
        return "small" if task.gold["sum"] < 50 else "large"

    def families(self) -> list[str]:
        return ["small", "large"]

    def generation_context(self, family: str, rng: Any, success: Mapping[str, float] | None = None) -> str:
        return "Tasks ask for the sum of two integers a and b."

    def generation_examples(self, family: str, k: int, rng: Any) -> list[dict[str, Any]]:
        return [{"a": 1, "b": 2}, {"a": 30, "b": 40}][:k]

    def parse_task(self, obj: dict[str, Any], family: str | None = None) -> Task:
        if not isinstance(obj.get("a"), int) or not isinstance(obj.get("b"), int):
            raise ValueError("a and b must be integers")
        return self._task(obj["a"], obj["b"], "generated", "generated")

    def validate_task(self, task: Task) -> tuple[bool, str]:
        return (True, "") if abs(task.gold["sum"]) < 10**6 else (False, "numbers too large")
