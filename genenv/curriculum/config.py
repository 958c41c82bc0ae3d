"""The co-evolution trainer's curriculum settings: which curriculum, and what it aims at."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from genenv.config import check_types
from genenv.curriculum.aim import AimConfig
from genenv.curriculum.learnability import LearnabilityConfig
from genenv.curriculum.reward import AlphaTarget


@dataclass
class CurriculumConfig(AlphaTarget):
    """Where the trainer's fresh tasks come from (``curriculum=NAME``) and what GenEnv's aims at.

    Args:
        name: ``"genenv"`` (the simulator, conditioned on the agent's success and trained by RWR toward ``alpha``),
            ``"random"`` (the same simulator, never told the agent's success nor updated), ``"static"`` (one pool
            written before training), ``"offline"`` (``static`` with ``offline_multiplier`` times the tasks) or
            ``"learnability"`` (the benchmark's base tasks drawn by ``p (1 - p)``, no simulator).
        alpha, beta, band_k, lam: the alpha-curriculum's target (:class:`~genenv.curriculum.reward.AlphaTarget`).
        stats_window: episodes per family in the success statistics shown to the simulator.
        generation_rounds: simulator batches tried for each batch the wanted tasks need.
        static_pool_size: tasks written once, before training, for ``static`` or ``offline`` (``None``: the
            ``tasks_per_epoch * epochs`` a GenEnv run of the same length trains on, times ``offline_multiplier``
            for ``offline``).
        offline_multiplier: how many times a GenEnv run's tasks the ``offline`` pool holds (the paper compares
            GenEnv with an offline pool of 3.3x its data).
        learnability: settings of ``learnability`` (:class:`~genenv.curriculum.learnability.LearnabilityConfig`;
            a mapping of them is converted).
        aim: the levers of ``genenv``'s aim beyond its prompt, aimed requests and re-served written tasks
            (:class:`~genenv.curriculum.aim.AimConfig`; off by default, as in the paper).
    """

    name: Literal["genenv", "random", "static", "offline", "learnability"] = "genenv"
    stats_window: int = 64
    generation_rounds: int = 2
    static_pool_size: int | None = None
    offline_multiplier: float = 3.3
    learnability: LearnabilityConfig = field(default_factory=LearnabilityConfig)
    aim: AimConfig = field(default_factory=AimConfig)

    prefix: ClassVar[str] = "curriculum."

    def __post_init__(self) -> None:
        super().__post_init__()
        self.learnability = LearnabilityConfig.of(self.learnability)
        self.aim = AimConfig.of(self.aim)
        if self.aim.active and self.name != "genenv":
            raise ValueError(
                f"curriculum.aim steers curriculum=genenv's simulator; curriculum={self.name} has none to aim"
            )
        check_types(self, "curriculum")
        for name in ("stats_window", "generation_rounds"):
            if getattr(self, name) < 1:
                raise ValueError(f"curriculum.{name} must be at least 1, got {getattr(self, name)}")
        if self.static_pool_size is not None and self.static_pool_size < 1:
            raise ValueError(f"curriculum.static_pool_size must be at least 1 or null, got {self.static_pool_size}")
        if self.offline_multiplier <= 0:
            raise ValueError(f"curriculum.offline_multiplier must be > 0, got {self.offline_multiplier}")
