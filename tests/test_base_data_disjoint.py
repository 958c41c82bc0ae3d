"""D_train's base data never shares a task with a split that validation or evaluation uses, for every benchmark as
configured (each adapter's declared splits): by task id and by the task's text."""

import pytest
from conftest import ALFWORLD_MISSING, data_dir
from omegaconf import OmegaConf

from genenv.benchmarks.base import get_benchmark
from genenv.config import CONFIG_DIR

BENCHES = sorted(p.stem for p in (CONFIG_DIR / "bench").glob("*.yaml"))


def _bench(name: str):
    return OmegaConf.load(CONFIG_DIR / "bench" / f"{name}.yaml")


def _text(task) -> str:
    """What makes a task the same task: its text; for ALFWorld its game file, since valid_seen replays train's
    rooms and goals by the benchmark's design (in-distribution) with other games, so first observations repeat."""
    if task.benchmark == "alfworld":
        return task.metadata["game"]
    return str(task.metadata.get("query_text") or task.metadata.get("question") or task.prompt)


@pytest.mark.parametrize("name", BENCHES)
def test_base_split_is_disjoint_from_validation_and_evaluation(name):
    bench = _bench(name)
    base_split = bench.get("base_split")
    if name == "bfcl":
        assert base_split is None  # BFCL has no training split
        return
    assert base_split, f"{name} has no base_split"
    if name == "alfworld":
        pytest.importorskip("alfworld", reason=ALFWORLD_MISSING)
    options = OmegaConf.to_container(bench.get("options") or OmegaConf.create({}), resolve=False)
    if name == "bamboogle":
        options["search_model"] = "unused"  # no search runs here
    folder = None if name == "reasoning_gym" else data_dir(name)  # reasoning-gym generates its tasks
    adapter = get_benchmark(name, data_dir=folder, **options)
    base = adapter.load_tasks(base_split)
    assert base
    base_ids, base_texts = {t.task_id for t in base}, {_text(t) for t in base}
    for key in ("split", "validation_split"):
        held_out = adapter.load_tasks(bench[key])
        assert base_split != bench[key], f"{name}: {key} is the base split"
        assert not base_ids & {t.task_id for t in held_out}, f"{name}: base and {key} share task ids"
        assert not base_texts & {_text(t) for t in held_out}, f"{name}: base and {key} share task texts"
