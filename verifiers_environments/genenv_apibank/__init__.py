"""genenv's API-Bank as a verifiers environment: ``vf-eval genenv-apibank`` (docs/integrations/verifiers.md)."""

from genenv.integrations.verifiers import GenEnvEnv, benchmark_taskset

ApibankTaskset = benchmark_taskset("apibank")

__all__ = ["GenEnvEnv", "ApibankTaskset"]
