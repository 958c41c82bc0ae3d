"""A benchmark is one class: the example package ``examples/new_benchmark`` (an adapter and an entry point, its data
shipped inside it), installed outside genenv, is evaluated, trained and served with ``+bench=shop`` from a folder
outside the checkout, with no YAML in genenv."""

import json
import os
import shutil
import socket
import subprocess
import sys
import time

import pytest
from conftest import REPO, child_env

TINY_TRAINING = [
    "model=tiny", "coevolution.epochs=1", "warm_start.max_examples=2", "validation.limit=2",
    "coevolution.tasks_per_epoch=2", "curriculum.generation_rounds=1", "simulator.max_new_tokens=64",
    "agent.max_new_tokens=8", "agent.num_generations=2", "agent.per_device_train_batch_size=2",
    "agent.gradient_accumulation_steps=1",
]  # fmt: skip


@pytest.fixture(scope="module")
def shop_env(tmp_path_factory) -> dict[str, str]:
    """The environment of a process that sees the example package installed (``pip install --target``)."""
    root = tmp_path_factory.mktemp("shop")
    source = shutil.copytree(REPO / "examples" / "new_benchmark", root / "source")  # its build files stay out of it
    install = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target"]
    subprocess.run([*install, str(root / "site"), str(source)], check=True, timeout=600)
    target = root / "site"
    env = child_env()
    env["PYTHONPATH"] = os.pathsep.join([str(target), env["PYTHONPATH"]])
    return env


def genenv_cli(module: str, *args: str, env: dict[str, str], cwd) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", module, "+bench=shop", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def test_the_bench_config_comes_from_the_adapter(shop_env, tmp_path):
    result = genenv_cli("genenv.train", "--cfg", "job", env=shop_env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    bench = result.stdout[result.stdout.index("bench:") :]
    for line in ("name: shop", "split: test", "max_turns: 4", "base_split: train", "currency: cents"):
        assert line in bench, bench


def test_evaluate(shop_env, tmp_path):
    out = tmp_path / "eval"
    settings = ["model=tiny", "limit=3", "max_new_tokens=8", f"hydra.run.dir={out}"]
    result = genenv_cli("genenv.evaluate", *settings, env=shop_env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((out / "results.json").read_text())
    assert summary["benchmark"] == "shop" and summary["n_tasks"] == 3


def test_train_one_epoch(shop_env, tmp_path):
    run = tmp_path / "run"
    result = genenv_cli("genenv.train", f"run_dir={run}", *TINY_TRAINING, env=shop_env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    (record,) = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert record["epoch"] == 0 and record["agent"]["episodes"] > 0 and record["validation"]["n"] == 2


def test_serve_and_play_the_gold_answer(shop_env, tmp_path):
    pytest.importorskip("openenv")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "genenv.serve", "+bench=shop", f"port={port}"], cwd=tmp_path, env=shop_env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert server.poll() is None and time.monotonic() < deadline, server.stdout.read()
            time.sleep(0.3)
        play = (
            "from genenv.integrations.openenv import GenEnvClient\n"
            f"with GenEnvClient(base_url='http://127.0.0.1:{port}').sync() as env:\n"
            "    result = env.reset(task_id='shop-test-0')\n"
            '    print(env.step(\'<tool_call>{"name": "price", "arguments": {"item": "apple"}}</tool_call>\')'
            ".observation.text)\n"
            "    print(env.step('I do not know.').reward)\n"
        )
        result = subprocess.run([sys.executable, "-c", play], env=shop_env, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr[-3000:]
        assert '"price": 45' in result.stdout and result.stdout.split()[-1] == "0.0"
    finally:
        server.terminate()
        server.wait(timeout=30)
