"""genenv: difficulty-aligned co-evolution of LLM agents and environment simulators (GenEnv).

Importing ``genenv`` registers the Gymnasium ids (``GenEnv-APIBank-v0``, ...). The light names (the envs, the adapter
protocol and its registry) are imported with the package; the trainer and the curricula, which load torch and TRL,
on first use.
"""

from importlib import import_module
from typing import Any

from genenv.benchmarks.base import (
    BenchmarkAdapter,
    Score,
    StepResult,
    Task,
    ToolCall,
    Trajectory,
    Turn,
    available_benchmarks,
    env_id,
    get_benchmark,
    register_benchmark,
    register_installed,
)
from genenv.envs import ENV_IDS
from genenv.envs.tool_env import ToolEnv
from genenv.toolcalls import parse_tool_calls

__version__ = "0.1.0"

#: public names imported on first use: name -> module
_LAZY = {
    "CoEvolutionTrainer": "genenv.coevolution",
    "GenEnvConfig": "genenv.coevolution",
    "AlphaCurriculum": "genenv.curriculum.alpha",
    "AlphaCurriculumConfig": "genenv.curriculum.alpha",
    "CurriculumConfig": "genenv.curriculum.config",
    "LearnabilityCurriculum": "genenv.curriculum.learnability",
    "LearnabilityConfig": "genenv.curriculum.learnability",
}

__all__ = [
    "ENV_IDS",
    "BenchmarkAdapter",
    "Score",
    "StepResult",
    "Task",
    "ToolCall",
    "ToolEnv",
    "Trajectory",
    "Turn",
    "available_benchmarks",
    "env_id",
    "get_benchmark",
    "parse_tool_calls",
    "register_benchmark",
    *_LAZY,
]


register_installed()


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'genenv' has no attribute {name!r}")
