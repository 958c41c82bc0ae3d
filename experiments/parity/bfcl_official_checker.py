"""Official BFCL verdicts for candidate model outputs: run inside a venv with the full ``bfcl-eval``.

    /work/bfclenv/bin/python experiments/parity/bfcl_official_checker.py [--stub-sdks] < requests.jsonl > verdicts.jsonl

Used by ``experiments/parity/bfcl_parity.py``; it needs ``bfcl-eval==2026.3.23`` importable with its checker,
i.e. installed with its provider SDKs (all but sentence-transformers and torch suffice), or, with
``--stub-sdks``, installed ``--no-deps``: the provider SDKs the handler modules import at load time and
that are missing are then replaced by empty stand-in modules (the checker never calls a provider). Each request
line is ``{"kind": "ast"|"relevance"|"multi_turn", "id": <entry id>, "category": ..., "text": ...}``
(``"turns": [[step texts]]`` for multi-turn). Each answer line is ``{"valid": bool|null, "error_type":
...}`` (``null`` where bfcl-eval raised), in order; a last line ``{"seconds": {kind: s}}`` gives the time
spent inside bfcl-eval's evaluation functions per kind.

Outputs are judged by bfcl-eval's own runner functions (``_evaluate_single_ast_entry``,
``_evaluate_single_relevance_entry``, ``_evaluate_single_multi_turn_entry``) with the handler of the
format the text is in: Qwen3's prompting handler (``default_decode_ast_prompting``; Java/JavaScript
through the tree-sitter parsers) for ``[f(a=1)]`` texts, Qwen3's function-calling handler for
``<tool_call>`` texts. Neither has ``underscore_to_dot``.
"""

from __future__ import annotations

import copy
import importlib.abc
import importlib.machinery
import json
import sys
import time
import types
from collections import defaultdict

PROMPTING, FUNCTION_CALLING = "Qwen/Qwen3-0.6B", "Qwen/Qwen3-0.6B-FC"
#: provider SDKs (and their helpers) that bfcl-eval's handler modules import but its checker never calls
STUBBED_SDKS = frozenset(
    {"anthropic", "openai", "mistralai", "cohere", "boto3", "writerai", "google", "qwen_agent", "dotenv",
     "sentence_transformers", "faiss", "serpapi", "rank_bm25", "transformers", "wandb", "overrides",
     "datamodel_code_generator", "tenacity", "httpx", "bs4"}
)  # fmt: skip


class _StandIn(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Empty modules for missing provider SDKs: any attribute is a fresh exception class."""

    def find_spec(self, name, path=None, target=None):  # noqa: ANN001, ANN201 - importlib protocol
        root = name.split(".")[0]
        if root not in STUBBED_SDKS:
            return None
        if any(f.find_spec(name, path) for f in sys.meta_path if f is not self and hasattr(f, "find_spec")):
            return None  # installed: the real module
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):  # noqa: ANN001, ANN201
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = lambda attribute: _stand_in_class(spec.name, attribute)
        return module

    def exec_module(self, module):  # noqa: ANN001, ANN201
        return None


class _StandInType(type):
    """Attributes of a stand-in class (``cohere.types.ToolV2``) are stand-in classes too."""

    def __getattr__(cls, attribute: str) -> type:
        return _stand_in_class(cls.__module__, attribute)

    def __call__(cls, *args: object, **kwargs: object) -> object:
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]  # used as a decorator (``@override``): the function itself
        return super().__call__(*args, **kwargs)

    def __getitem__(cls, item: object) -> type:
        return cls

    def __or__(cls, other: object) -> type:
        return cls

    __ror__ = __or__


def _stand_in_class(module: str, attribute: str) -> type:
    """An exception class (for ``except``) that, like its instances, decorates and combines (``|``) as a no-op."""
    if attribute.startswith("__"):
        raise AttributeError(attribute)
    namespace = {
        "__module__": module,
        "__init__": lambda self, *args, **kwargs: None,
        "__or__": lambda self, other: self,
        "__call__": lambda self, *args, **kwargs: args[0] if len(args) == 1 and callable(args[0]) else self,
    }
    return _StandInType(attribute, (Exception,), namespace)


def main() -> None:
    if "--stub-sdks" in sys.argv[1:]:
        sys.meta_path.insert(0, _StandIn())
    from bfcl_eval.constants.enums import Language, ReturnFormat
    from bfcl_eval.eval_checker import eval_runner
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    from bfcl_eval.utils import is_java, is_js, load_dataset_entry, load_ground_truth_entry

    handlers = {name: eval_runner.get_handler(name) for name in (PROMPTING, FUNCTION_CALLING)}
    loaded: dict[str, dict[str, tuple[dict, object]]] = {}

    def entry(category: str, entry_id: str) -> tuple[dict, object]:
        if category not in loaded:
            prompts = load_dataset_entry(category, include_prereq=False, include_language_specific_hint=False)
            truths = [None] * len(prompts) if "relevance" in category else load_ground_truth_entry(category)
            loaded[category] = {p["id"]: (p, None if t is None else t["ground_truth"]) for p, t in zip(prompts, truths)}
        return loaded[category][entry_id]

    seconds: dict[str, float] = defaultdict(float)
    for number, line in enumerate(sys.stdin):
        request = json.loads(line)
        kind, category = request["kind"], request["category"]
        prompt, truth = entry(category, request["id"])
        texts = [request["text"]] if kind != "multi_turn" else [t for turn in request["turns"] for t in turn]
        name = FUNCTION_CALLING if any("<tool_call>" in t for t in texts) else PROMPTING
        model_name = name.replace("/", "_")
        start = time.perf_counter()
        try:
            if kind == "ast":
                language, fmt = Language.PYTHON, ReturnFormat.PYTHON
                if is_java(category):
                    language, fmt = Language.JAVA, ReturnFormat.JAVA
                elif is_js(category):
                    language, fmt = Language.JAVASCRIPT, ReturnFormat.JAVASCRIPT
                result = eval_runner._evaluate_single_ast_entry(
                    handlers[name], request["id"], request["text"], truth, prompt, model_name, category, language, fmt
                )
            elif kind == "relevance":
                result = eval_runner._evaluate_single_relevance_entry(
                    handlers[name], request["id"], request["text"], prompt, model_name, category
                )
            else:
                unique = f"cand{number}_{model_name}"  # upstream caches back-end instances by model name
                result = eval_runner._evaluate_single_multi_turn_entry(
                    handlers[name], request["id"], request["turns"], truth, copy.deepcopy(prompt), unique, category
                )
                for key in [k for k in vars(multi_turn_utils) if k.startswith(unique)]:
                    delattr(multi_turn_utils, key)
            verdict = {"valid": bool(result["valid"]), "error_type": _error_type(result)}
        except Exception as error:  # noqa: BLE001 - report where upstream raises instead of judging
            verdict = {"valid": None, "error_type": f"raised {type(error).__name__}: {error}"[:300]}
        seconds[kind] += time.perf_counter() - start
        print(json.dumps(verdict), flush=False)
    print(json.dumps({"seconds": seconds}))


def _error_type(result: dict) -> str:
    if result["valid"]:
        return ""
    if isinstance(result.get("error"), dict):
        return str(result["error"].get("error_type", ""))
    return str(result.get("error_type", ""))


if __name__ == "__main__":
    main()
