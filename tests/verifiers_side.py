"""verifiers' side of ``test_integration_verifiers.py``, run by an interpreter that has verifiers 0.4 (and so mcp 2.0,
which openenv's fastmcp in ``.venv`` refuses): ``python verifiers_side.py REQUEST.json RESULT.json``.

``kind: rubric`` scores given replies with the taskset's rubric (``official_score`` on a trace holding them);
``kind: eval`` runs verifiers' own eval runner (``run_eval``) against an OpenAI-compatible server. The result holds
what verifiers produced (scores; each trace's replies, user turns, reward and errors); the test compares it with
genenv's own episodes in its environment."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import os
import sys
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from verifiers.v1.cli.eval.runner import run_eval
from verifiers.v1.configs.cli.eval import EvalConfig
from verifiers.v1.graph import MessageNode
from verifiers.v1.trace import AgentInfo, TraceTask

from genenv.integrations.verifiers import TASKSET_ID, GenEnvTask, load_environment


def trace_of(task: GenEnvTask, replies: list[str]) -> vf.Trace:
    """A trace whose model replies are ``replies`` (what the rubric reads)."""
    nodes = [MessageNode(message=vf.AssistantMessage(content=reply), sampled=True) for reply in replies]
    return vf.Trace(
        task=TraceTask(type="GenEnvTask", data=task.data), agent=AgentInfo(config=vf.AgentConfig()), nodes=nodes
    )


def rubric(request: dict[str, Any]) -> dict[str, Any]:
    env = load_environment(request["benchmark"], split=request["split"])
    tasks = {task.key: task for task in env.taskset.load()}
    scores = []
    for item in request["traces"]:
        task = tasks[item["key"]]
        task = GenEnvTask(task.data, task.config.model_copy(update={"max_turns": item["max_turns"]}))
        scores.append(asyncio.run(task.official_score(trace_of(task, item["replies"]))))
    return {"scores": scores}


def evaluate(request: dict[str, Any]) -> dict[str, Any]:
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # uv, for the harness
    taskset = {"id": TASKSET_ID, "benchmark": request["benchmark"], "split": request["split"]}
    config = EvalConfig(
        env={"taskset": {**taskset, "task": {"max_turns": request["max_turns"]}}},
        model=request["model"],
        client={"base_url": request["base_url"], "api_key_var": "LOCAL_LLM_API_KEY"},
        sampling={"max_tokens": request["max_tokens"], "temperature": 0.0},
        select={"limit": request["limit"]},
        max_concurrent=1,  # llama.cpp's server answers one request at a time; parallel ones were cut off (502)
        rich=None,
        push=False,
        output_dir=Path(request["output_dir"]),
        run={"dir": "eval"},
    )
    episodes = []
    for episode in asyncio.run(run_eval(config)):
        traces = []
        for trace in episode.traces:
            traces.append(
                {
                    "key": trace.task.key,
                    "replies": [message.content or "" for message in trace.assistant_messages],
                    "users": [message.content for message in trace.messages if message.role == "user"],
                    "reward": trace.rewards["official_score"].score if "official_score" in trace.rewards else None,
                    "errors": [repr(error) for error in trace.errors],
                }
            )
        episodes.append(traces)
    return {"episodes": episodes}


def main(request_path: str, result_path: str) -> None:
    request = json.loads(Path(request_path).read_text())
    result = {"rubric": rubric, "eval": evaluate}[request["kind"]](request)
    result["versions"] = {name: importlib.metadata.version(name) for name in ("verifiers", "mcp")}
    Path(result_path).write_text(json.dumps(result))


if __name__ == "__main__":
    main(*sys.argv[1:])
