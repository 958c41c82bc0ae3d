"""Curriculum: the alpha reward, the difficulty band filter, per-family success statistics, RWR,
:class:`AlphaCurriculum`, the curriculum as a task source any training loop can drive, and
:class:`LearnabilityCurriculum`, the benchmark's own tasks drawn by ``p (1 - p)`` of the agent's success."""

from genenv.curriculum.aim import AimConfig
from genenv.curriculum.alpha import AlphaCurriculum, AlphaCurriculumConfig
from genenv.curriculum.config import CurriculumConfig
from genenv.curriculum.learnability import LearnabilityConfig, LearnabilityCurriculum
from genenv.curriculum.reward import AlphaTarget, DifficultyFilter, alpha_reward, rwr_weight
from genenv.curriculum.rwr import RWRConfig, RWRStats, RWRTrainer
from genenv.curriculum.stats import FamilyStats

__all__ = [
    "AimConfig",
    "AlphaCurriculum",
    "AlphaCurriculumConfig",
    "AlphaTarget",
    "CurriculumConfig",
    "DifficultyFilter",
    "FamilyStats",
    "LearnabilityConfig",
    "LearnabilityCurriculum",
    "RWRConfig",
    "RWRStats",
    "RWRTrainer",
    "alpha_reward",
    "rwr_weight",
]
