"""genenv's ALFWorld as a verifiers environment: ``vf-eval genenv-alfworld`` (docs/integrations/verifiers.md)."""

from genenv.integrations.verifiers import GenEnvEnv, benchmark_taskset

AlfworldTaskset = benchmark_taskset("alfworld")

__all__ = ["GenEnvEnv", "AlfworldTaskset"]
