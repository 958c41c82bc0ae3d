"""Curriculum: the alpha reward, the difficulty band filter, per-family success statistics, RWR, and
:class:`AlphaCurriculum`, the curriculum as a task source any training loop can drive."""

from genenv.curriculum.alpha import AlphaCurriculum, AlphaCurriculumConfig
from genenv.curriculum.reward import DifficultyFilter, alpha_reward, rwr_weight
from genenv.curriculum.rwr import RWRConfig, RWRStats, RWRTrainer
from genenv.curriculum.stats import FamilyStats

__all__ = [
    "AlphaCurriculum",
    "AlphaCurriculumConfig",
    "DifficultyFilter",
    "FamilyStats",
    "RWRConfig",
    "RWRStats",
    "RWRTrainer",
    "alpha_reward",
    "rwr_weight",
]
