"""verifiers' side of ``test_integration_verifiers.py``, run by an interpreter that has verifiers 0.4 (and so mcp 2.0,
which openenv's fastmcp in ``.venv`` refuses): ``python verifiers_side.py REQUEST.json RESULT.json``.

``kind: ids`` resolves taskset ids the way verifiers' CLI does (``vf.resolve_env_config``, ``vf.environment_class``)
and loads one env with ``vf.load_environment``; ``kind: rubric`` scores given replies with the rubric of the env
``vf.load_environment`` builds for a taskset id (``official_score`` on a trace holding them). The result holds what
verifiers produced; the test compares it with genenv's own episodes in its environment."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import sys
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from verifiers.v1.graph import MessageNode
from verifiers.v1.trace import AgentInfo, TraceTask


def load(taskset: dict[str, Any]) -> vf.Env:
    """The env of a taskset config (``id`` and fields), built by verifiers' own loader."""
    return vf.load_environment(vf.resolve_env_config({"taskset": taskset}))


def ids(request: dict[str, Any]) -> dict[str, Any]:
    resolved = {}
    for taskset_id in request["ids"]:
        config = vf.resolve_env_config({"taskset": {"id": taskset_id}})
        resolved[taskset_id] = {
            "env": vf.environment_class(taskset_id).__name__,
            "taskset_config": vf.taskset_config_type(taskset_id).__name__,
            "benchmark": config.taskset.benchmark,
            "task": vf.task_type(taskset_id).__name__,
        }
    env = load({"id": request["load"], "split": request["split"]})
    keys = [task.key for task in env.taskset.load()]
    try:
        load({"id": request["load"], "benchmark": "no_such_benchmark"})
        refusal = None
    except ValueError as error:
        refusal = str(error)
    return {"resolved": resolved, "env": type(env).__name__, "keys": keys, "refusal": refusal}


def trace_of(task: vf.Task, replies: list[str]) -> vf.Trace:
    """A trace whose model replies are ``replies`` (what the rubric reads)."""
    nodes = [MessageNode(message=vf.AssistantMessage(content=reply), sampled=True) for reply in replies]
    return vf.Trace(
        task=TraceTask(type=type(task).__name__, data=task.data), agent=AgentInfo(config=vf.AgentConfig()), nodes=nodes
    )


def rubric(request: dict[str, Any]) -> dict[str, Any]:
    env = load({"id": request["id"], "split": request["split"]})
    tasks = {task.key: task for task in env.taskset.load()}
    scores = []
    for item in request["traces"]:
        task = tasks[item["key"]]
        task = type(task)(task.data, task.config.model_copy(update={"max_turns": item["max_turns"]}))
        scores.append(asyncio.run(task.official_score(trace_of(task, item["replies"]))))
    return {"scores": scores}


def main(request_path: str, result_path: str) -> None:
    request = json.loads(Path(request_path).read_text())
    result = {"ids": ids, "rubric": rubric}[request["kind"]](request)
    result["versions"] = {name: importlib.metadata.version(name) for name in ("verifiers", "mcp")}
    Path(result_path).write_text(json.dumps(result))


if __name__ == "__main__":
    main(*sys.argv[1:])
