"""A task as a training dataset row: what a trainer (TRL's ``GRPOTrainer``, any loop) reads.

A row holds ``prompt``, the conversational prompt of the task exactly as :class:`~genenv.envs.tool_env.ToolEnv`
shows it (one user message: the benchmark's instructions, the task's tool schemas, the request), ``task_id``, and
``task``, the whole task as JSON (gold included) for the environment that plays it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from genenv.benchmarks.base import BenchmarkAdapter, Task
from genenv.envs.tool_env import render_prompt


def task_row(adapter: BenchmarkAdapter, task: Task) -> dict[str, Any]:
    """The dataset row of ``task``."""
    prompt = render_prompt(adapter.system_prompt(task), adapter.tools(task), task.prompt)
    return {
        "prompt": [{"role": "user", "content": prompt}],
        "task_id": task.task_id,
        "task": json.dumps(task.to_dict(), ensure_ascii=False),
    }


def row_task(row: Mapping[str, Any]) -> Task:
    """The task a dataset row holds; a row without one raises ``ValueError``."""
    if "task" not in row:
        raise ValueError(
            f"the dataset row has no 'task' column (it has {sorted(row)}); build the dataset with "
            "genenv.integrations.trl.task_dataset or AlphaCurriculum.dataset"
        )
    try:
        return Task.from_dict(json.loads(row["task"]))
    except (TypeError, json.JSONDecodeError) as error:
        raise ValueError(f"the row's 'task' is not a task as JSON: {error}") from None
