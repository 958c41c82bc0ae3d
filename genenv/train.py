"""Train an agent the GenEnv way: ``python -m genenv.train +bench=apibank [curriculum=random] [model=tiny]``.

Resume an interrupted run from its last complete checkpoint with
``python -m genenv.train +bench=apibank run_dir=RUN_DIR resume=true``.

The console shows one progress display and one line per epoch (:mod:`genenv.console`); everything else logged,
TRL's per-step log dicts included, goes to ``RUN_DIR/train.log``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from genenv.agents.grpo import GRPOAgentConfig
from genenv.agents.warm_start import WarmStartConfig
from genenv.benchmarks.base import BenchmarkAdapter, get_benchmark
from genenv.checkpoints import read_metrics
from genenv.coevolution import CoEvolutionTrainer, GenEnvConfig
from genenv.config import CONFIG_DIR, adapter_data_dir, adapter_options, episode_turns, require_bench
from genenv.console import RunDisplay, quiet_console
from genenv.curriculum import RWRConfig
from genenv.learning_curve import format_curve, held_out_curve
from genenv.llm.engines import OpenAIConfig
from genenv.llm.models import Policy, load_policy
from genenv.plot import plot_learning_curve

logger = logging.getLogger(__name__)


def genenv_config(cfg: DictConfig) -> GenEnvConfig:
    """The :class:`GenEnvConfig` a composed Hydra config describes."""
    bench = require_bench(cfg)
    data_dir = adapter_data_dir(cfg)
    settings: dict[str, Any] = OmegaConf.to_container(cfg.coevolution, resolve=True)
    agent: dict[str, Any] = OmegaConf.to_container(cfg.agent, resolve=True)
    agent["max_turns"] = episode_turns(cfg, agent.get("max_turns"))
    return GenEnvConfig(
        benchmark=bench.name,
        data_dir=str(data_dir) if data_dir else None,
        adapter_options=adapter_options(cfg),
        run_dir=str(cfg.run_dir),
        curriculum=cfg.curriculum.name,
        agent_model=cfg.model.name,
        simulator_model=cfg.get("simulator_model") or cfg.model.name,
        simulator_engine=cfg.simulator.engine,
        simulator_engine_compute_type=cfg.simulator.engine_compute_type,
        simulator_engine_threads=cfg.simulator.engine_threads,
        simulator_examples=cfg.simulator.examples,
        simulator_openai=OpenAIConfig(**OmegaConf.to_container(cfg.simulator.openai, resolve=True)),
        validation_split=settings.pop("validation_split", None) or bench.get("validation_split"),
        agent=GRPOAgentConfig(**agent),
        warm_start=WarmStartConfig(**OmegaConf.to_container(cfg.warm_start, resolve=True)),
        rwr=RWRConfig(**OmegaConf.to_container(cfg.rwr, resolve=True)),
        **settings,
    )


def compose_setup(overrides: list[str]) -> tuple[GenEnvConfig, BenchmarkAdapter, Policy]:
    """The config ``python -m genenv.train OVERRIDES`` composes, its adapter and its (untrained) simulator policy,
    seeded as the trainer seeds it."""
    with hydra.initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        config = genenv_config(hydra.compose("config", overrides=overrides))
    adapter = get_benchmark(config.benchmark, data_dir=config.data_dir, **config.adapter_options)
    return config, adapter, load_policy(config.simulator_model, seed=config.seed + 1)


@hydra.main(config_path=str(CONFIG_DIR), config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> None:
    quiet_console()
    config = genenv_config(cfg)
    trainer = CoEvolutionTrainer(config, resume=bool(cfg.resume))
    if trainer.is_main and trainer.resumed_from is not None:
        print(f"resumed from {trainer.resumed_from}; continuing at epoch {trainer.start_epoch}", flush=True)
    with RunDisplay(config.epochs, start_epoch=trainer.start_epoch, enabled=trainer.is_main):
        trainer.train()
    if not trainer.is_main:
        return
    print(format_curve(held_out_curve(read_metrics(config.run_dir))))
    png = plot_learning_curve([Path(config.run_dir)], Path(config.run_dir))
    if png is not None:
        print(f"learning curve: {png}")
    print(f"run folder: {config.run_dir} (metrics.jsonl, train.log, pools/, checkpoints/)")


if __name__ == "__main__":
    main()
