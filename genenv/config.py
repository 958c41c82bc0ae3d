"""Where the Hydra configs live and the small helpers every entry point shares.

The ``bench`` group has no YAML files: its node for every registered benchmark (built in, from an entry point, or
registered in code before the entry point composes) is the adapter's :meth:`~genenv.benchmarks.base.BenchmarkAdapter.
bench_defaults`, stored in Hydra's ConfigStore by :func:`register_bench_configs`."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from genenv.benchmarks.base import BenchmarkAdapter, available_benchmarks, get_benchmark, get_benchmark_class

CONFIG_DIR = Path(__file__).resolve().parent / "configs"

T = TypeVar("T")


def register_bench_configs() -> list[str]:
    """Store ``bench/<name>`` in Hydra's ConfigStore for every registered benchmark (``+bench=NAME``); returns
    the names. A benchmark whose adapter cannot load is left out (logged by the registry)."""
    store = ConfigStore.instance()
    names = []
    for name in available_benchmarks():
        try:
            node = get_benchmark_class(name).bench_defaults()
        except (ImportError, KeyError):
            continue
        store.store(group="bench", name=name, node=node)
        names.append(name)
    return names


register_bench_configs()


def require_bench(cfg: DictConfig) -> DictConfig:
    """The chosen benchmark config, or a clear error telling how to choose one."""
    if "bench" not in cfg or cfg.bench is None:
        raise SystemExit(f"choose a benchmark with +bench=NAME; available: {', '.join(available_benchmarks())}")
    return cfg.bench


def episode_turns(cfg: DictConfig, override: int | None = None) -> int:
    """The episode length an entry point plays: its own ``max_turns`` setting ``override`` when set, else the bench
    node's, which is the adapter's ``max_turns`` unless ``bench.max_turns=N`` overrides it."""
    return int(override or require_bench(cfg).max_turns)


def official_adapter(cfg: DictConfig) -> BenchmarkAdapter:
    """The adapter a composed config describes (its ``bench`` node's options), scoring as the official evaluator does:
    what ``genenv.evaluate`` and ``genenv.serve`` play."""
    return get_benchmark(cfg.bench.name, data_dir=adapter_data_dir(cfg), **adapter_options(cfg)).reporting_adapter()


def adapter_data_dir(cfg: DictConfig) -> Path | None:
    """The benchmark's data folder from the config key ``data_root`` (``None``: the adapter default)."""
    root = cfg.get("data_root")
    return Path(root) / cfg.bench.name if root else None


def adapter_options(cfg: DictConfig) -> dict:
    """Keyword arguments of the benchmark adapter: the bench config's ``options`` mapping."""
    options = cfg.bench.get("options")
    return dict(OmegaConf.to_container(options, resolve=True)) if options else {}


def model_few_shot(model: str) -> str:
    """The worked exchanges ``model`` is shown: ``few_shot`` of ``genenv/configs/model/<model>.yaml`` (``generic`` for a
    model without a config, such as an HF path)."""
    path = CONFIG_DIR / "model" / f"{model}.yaml"
    return str(OmegaConf.load(path).get("few_shot", "generic")) if path.exists() else "generic"


def settings_from(cls: type[T], value: T | Mapping[str, Any], name: str) -> T:
    """``value`` itself when it is a ``cls``, else the ``cls`` its mapping of settings describes (a Hydra config's, a
    checkpoint's); anything else, or a setting ``cls`` does not have, raises a ``ValueError`` naming ``name``."""
    if isinstance(value, cls):
        return value
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} must be a mapping of settings, got {type(value).__name__}")
    if unknown := sorted(set(value) - {item.name for item in dataclasses.fields(cls)}):
        known = ", ".join(item.name for item in dataclasses.fields(cls))
        raise ValueError(f"{name} has no setting {', '.join(unknown)}; its settings: {known}")
    return cls(**value)


def check_types(config: Any, prefix: str) -> None:
    """Raise one ``ValueError`` naming ``prefix.field`` for the first dataclass field whose value does not have its
    annotated type (``epochs=abc``, ``epochs=1.5``): a bad setting stops a run before anything is loaded."""
    hints = typing.get_type_hints(type(config))
    for item in dataclasses.fields(config):
        value, hint = getattr(config, item.name), hints[item.name]
        if not _matches(value, hint):
            raise ValueError(f"{prefix}.{item.name} must be {_describe(hint)}, got {value!r}")


def _matches(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if hint is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, arg) for arg in typing.get_args(hint))
    if origin is typing.Literal:
        return value in typing.get_args(hint)
    if hint is type(None):
        return value is None
    if origin in (list, tuple):
        return isinstance(value, (list, tuple))
    if origin is not None:
        return isinstance(value, origin)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint) if isinstance(hint, type) else True


def _describe(hint: Any) -> str:
    if typing.get_origin(hint) is typing.Literal:
        return "one of " + ", ".join(repr(arg) for arg in typing.get_args(hint))
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return " or ".join(_describe(arg) for arg in typing.get_args(hint))
    return "null" if hint is type(None) else getattr(hint, "__name__", str(hint))
