"""Any registered genenv benchmark as a verifiers environment: ``vf-eval genenv_verifiers --env.taskset.benchmark
NAME`` (docs/integrations/verifiers.md)."""

from genenv.integrations.verifiers import GenEnvEnv, GenEnvTaskset

__all__ = ["GenEnvEnv", "GenEnvTaskset"]
