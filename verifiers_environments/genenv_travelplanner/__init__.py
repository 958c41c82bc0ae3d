"""genenv's TravelPlanner as a verifiers environment:
``vf-eval genenv-travelplanner`` (docs/integrations/verifiers.md)."""

from genenv.integrations.verifiers import GenEnvEnv, benchmark_taskset

TravelplannerTaskset = benchmark_taskset("travelplanner")

__all__ = ["GenEnvEnv", "TravelplannerTaskset"]
