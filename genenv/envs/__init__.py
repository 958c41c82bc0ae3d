"""Gymnasium environments: ``ToolEnv`` over any benchmark adapter, and the task simulator.

Every registered benchmark has a Gymnasium id (:data:`ENV_IDS`, registered by the benchmark registry): the built-in
ones, those installed packages advertise through the ``genenv.benchmarks`` entry point, and those registered with
:func:`~genenv.benchmarks.base.register_benchmark`.
"""

from genenv.benchmarks.base import ENV_IDS, env_id

__all__ = ["ENV_IDS", "env_id"]
