"""genenv's Bamboogle as a verifiers environment: ``vf-eval genenv-bamboogle`` (docs/integrations/verifiers.md)."""

from genenv.integrations.verifiers import GenEnvEnv, benchmark_taskset

BamboogleTaskset = benchmark_taskset("bamboogle")

__all__ = ["GenEnvEnv", "BamboogleTaskset"]
