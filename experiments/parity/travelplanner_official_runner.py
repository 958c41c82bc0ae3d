"""Official TravelPlanner verdicts for candidate plans: runs the upstream evaluation scripts by path.

    python experiments/parity/travelplanner_official_runner.py OFFICIAL_DIR REQUESTS.jsonl VERDICTS.jsonl \\
        [AGGREGATE.json]

``OFFICIAL_DIR`` holds ``evaluation/``, ``tools/`` and ``utils/`` of OSU-NLP-Group/TravelPlanner (not
copied into genenv) and a ``database/`` folder laid out as upstream expects (``benchmarks/
travelplanner_parity.py`` builds it from ``GENENV_DATA_DIR``). Each request line is ``{"query": {...},
"plan": [...] | null}``. Each verdict line has, per upstream check key, ``[value, reason]`` as upstream
returns it (``"commonsense"``, and ``"hard"`` when ``eval.py`` would run the hard checks), or
``"raised"`` where upstream raised. With ``AGGREGATE.json``, ``eval.py``'s own ``eval_score`` also runs
on the request plans as one "train" set (its ``datasets.load_dataset`` answers with the request
queries, nothing is downloaded) and its metrics are written there.

Only ``datasets`` and ``gradio`` (imported by ``utils/func.py`` for its web demo's error class) are
stubbed; the scripts' other imports (pandas, numpy, tqdm, requests) are real.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
import types
from pathlib import Path


def main() -> None:
    official, requests_path, verdicts_path = Path(sys.argv[1]).resolve(), sys.argv[2], sys.argv[3]
    aggregate_path = sys.argv[4] if len(sys.argv) > 4 else None
    requests = [json.loads(line) for line in Path(requests_path).read_text().splitlines() if line.strip()]

    datasets = types.ModuleType("datasets")
    datasets.load_dataset = lambda name, split, **_: {split: [dict(r["query"]) for r in requests]}
    sys.modules["datasets"] = datasets
    gradio = types.ModuleType("gradio")  # utils/func.py imports it for the web demo's error class only
    gradio.Error = type("Error", (Exception,), {})
    sys.modules["gradio"] = gradio
    sys.path[:0] = [str(official / "evaluation"), str(official)]
    os.chdir(official / "evaluation")
    with contextlib.redirect_stdout(io.StringIO()):  # the API classes print on load
        import commonsense_constraint
        import eval as official_eval
        import hard_constraint

    with open(verdicts_path, "w") as out:
        for request in requests:
            out.write(json.dumps(_verdict(commonsense_constraint, hard_constraint, request), default=str) + "\n")

    if aggregate_path:
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as plans:
            for request in requests:
                plans.write(json.dumps({"plan": request["plan"]}) + "\n")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            scores, _ = official_eval.eval_score("train", plans.name)
        Path(aggregate_path).write_text(json.dumps(scores, indent=1) + "\n")


def _verdict(commonsense_module, hard_module, request: dict) -> dict:
    """``eval.py``'s per-plan flow: commonsense checks when a plan is delivered, hard checks when
    "Complete Information" and "Within Sandbox" pass."""
    query, plan = request["query"], request["plan"]
    if not plan:
        return {"delivered": False}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            commonsense = commonsense_module.evaluation(query, plan)
    except Exception as error:  # noqa: BLE001 - recorded: upstream crashes on this plan
        return {"delivered": True, "raised": f"commonsense: {type(error).__name__}: {error}"[:300]}
    verdict = {"delivered": True, "commonsense": _plain(commonsense)}
    if commonsense["is_not_absent"][0] and commonsense["is_valid_information_in_sandbox"][0]:
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                verdict["hard"] = _plain(hard_module.evaluation(query, plan))
        except Exception as error:  # noqa: BLE001
            verdict["raised"] = f"hard: {type(error).__name__}: {error}"[:300]
    return verdict


def _plain(checks: dict) -> dict:
    """``{key: (value, reason)}`` with numpy booleans as ``bool`` and reasons as text."""
    return {key: [None if value is None else bool(value), None if reason is None else str(reason)]
            for key, (value, reason) in checks.items()}  # fmt: skip


if __name__ == "__main__":
    main()
