"""Curriculum: the alpha reward, the difficulty band filter, per-family success statistics, RWR."""

from genenv.curriculum.reward import DifficultyFilter, alpha_reward, rwr_weight
from genenv.curriculum.rwr import RWRConfig, RWRStats, RWRTrainer
from genenv.curriculum.stats import FamilyStats

__all__ = ["DifficultyFilter", "FamilyStats", "RWRConfig", "RWRStats", "RWRTrainer", "alpha_reward", "rwr_weight"]
