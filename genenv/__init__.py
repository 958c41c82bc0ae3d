"""genenv: difficulty-aligned co-evolution of LLM agents and environment simulators (GenEnv).

Importing ``genenv`` registers the Gymnasium ids (``GenEnv-APIBank-v0``, ...).
"""

from genenv.benchmarks.base import (
    BenchmarkAdapter,
    Score,
    StepResult,
    Task,
    ToolCall,
    Trajectory,
    Turn,
    available_benchmarks,
    get_benchmark,
    register_benchmark,
)
from genenv.envs import ENV_IDS
from genenv.envs.tool_env import ToolEnv
from genenv.toolcalls import parse_tool_calls

__version__ = "0.1.0"

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
    "get_benchmark",
    "parse_tool_calls",
    "register_benchmark",
]
