"""The agent: rollouts in ToolEnv episodes, GRPO training, the supervised warm start."""
