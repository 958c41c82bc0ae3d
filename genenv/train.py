"""Train an agent the GenEnv way: ``python -m genenv.train +bench=apibank [curriculum=random] [model=tiny]``.

Resume an interrupted run from its last complete checkpoint with
``python -m genenv.train +bench=apibank run_dir=RUN_DIR resume=true``.

The console shows one progress display and one line per epoch (:mod:`genenv.console`); everything else logged,
TRL's per-step log dicts included, goes to ``RUN_DIR/train.log``.
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from pathlib import Path
from typing import Any

import hydra
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from genenv.benchmarks.base import BenchmarkAdapter, get_benchmark
from genenv.checkpoints import read_metrics
from genenv.coevolution import CoEvolutionTrainer, GenEnvConfig
from genenv.config import CONFIG_DIR, adapter_data_dir, adapter_options, episode_turns, require_bench
from genenv.console import RunDisplay, quiet_console
from genenv.learning_curve import format_curve, held_out_curve
from genenv.llm.models import Policy, load_policy
from genenv.plot import plot_learning_curve

logger = logging.getLogger(__name__)


#: GenEnvConfig's settings of the loop itself, under ``coevolution`` in the Hydra config
LOOP = ("epochs", "tasks_per_epoch", "replay_tasks", "base_split", "base_limit", "seed", "report_to")
#: fields the entry point sets itself, never settings: the trainer writes TRL's output into the run folder
NOT_SETTINGS = {"agent": ("output_dir",)}


def _plain(value: Any) -> Any:
    """``value`` with tuples as lists (what a Hydra node holds)."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return [_plain(item) for item in value] if isinstance(value, (list, tuple)) else value


def train_defaults() -> dict[str, Any]:
    """The defaults of ``python -m genenv.train``: GenEnvConfig's own, its loop's settings under ``coevolution`` and
    each group of settings under its name (``genenv/configs/config.yaml`` starts from them: one default per
    setting)."""
    defaults = _plain(asdict(GenEnvConfig()))
    node = {"coevolution": {key: defaults[key] for key in LOOP}}
    for name in GenEnvConfig.groups():
        node[name] = {key: value for key, value in defaults[name].items() if key not in NOT_SETTINGS.get(name, ())}
    return node


ConfigStore.instance().store(name="genenv_train", node=train_defaults())


def genenv_config(cfg: DictConfig) -> GenEnvConfig:
    """The :class:`GenEnvConfig` a composed Hydra config describes."""
    bench = require_bench(cfg)
    data_dir = adapter_data_dir(cfg)
    groups: dict[str, dict[str, Any]] = {
        name: OmegaConf.to_container(cfg[name], resolve=True) for name in GenEnvConfig.groups()
    }
    groups["agent"]["max_turns"] = episode_turns(cfg, groups["agent"].get("max_turns"))
    groups["validation"]["split"] = groups["validation"]["split"] or bench.validation_split
    loop = OmegaConf.to_container(cfg.coevolution, resolve=True)
    if loop["base_split"] is None:  # the bench node's (the adapter's unless bench.base_split=... says otherwise)
        loop["base_split"], loop["base_limit"] = bench.base_split, loop["base_limit"] or bench.base_limit
    return GenEnvConfig(
        benchmark=bench.name,
        data_dir=str(data_dir) if data_dir else None,
        adapter_options=adapter_options(cfg),
        run_dir=str(cfg.run_dir),
        agent_model=cfg.model.name,
        **loop,
        **groups,
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
