"""Curriculum: the alpha reward, the difficulty band filter, per-family success statistics."""

from genenv.curriculum.reward import DifficultyFilter, alpha_reward, rwr_weight
from genenv.curriculum.stats import FamilyStats

__all__ = ["DifficultyFilter", "FamilyStats", "alpha_reward", "rwr_weight"]
