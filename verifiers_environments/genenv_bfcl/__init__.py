"""genenv's BFCL as a verifiers environment: ``vf-eval genenv-bfcl`` (docs/integrations/verifiers.md)."""

from genenv.integrations.verifiers import GenEnvEnv, benchmark_taskset

BfclTaskset = benchmark_taskset("bfcl")

__all__ = ["GenEnvEnv", "BfclTaskset"]
