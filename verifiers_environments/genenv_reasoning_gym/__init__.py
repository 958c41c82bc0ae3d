"""genenv's reasoning-gym as a verifiers environment:
``vf-eval genenv-reasoning-gym`` (docs/integrations/verifiers.md)."""

from genenv.integrations.verifiers import GenEnvEnv, benchmark_taskset

ReasoningGymTaskset = benchmark_taskset("reasoning_gym")

__all__ = ["GenEnvEnv", "ReasoningGymTaskset"]
