"""Agent policy: model loading, batched generation, rollouts."""
