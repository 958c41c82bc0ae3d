"""The parts of the official ``bfcl-eval`` package (Apache-2.0) that genenv uses as a library.

``bfcl-eval``'s checker module (``ast_checker``) imports the model registry and through it every
provider SDK (openai, anthropic, cohere, boto3, qwen-agent, ...), so it cannot serve as a library; the
AST checker is re-implemented in :mod:`.checker` and ``experiments/parity/bfcl_parity.py`` proves it agrees.
What imports cleanly is used from the package as is:

* the multi-turn back-ends (``eval_checker/multi_turn_eval/func_source_code``: file system, math,
  messaging, posting, tickets, trading, travel, vehicle control) and their class registry;
* the Java/JavaScript value converters of the AST checker (``type_convertor``);
* the Java/JavaScript call parsers (tree-sitter) the official runner decodes prompting output with.

Install it without its dependencies (they pin numpy 1.26 and a dozen provider SDKs), plus the three
tree-sitter wheels the parsers need; see :data:`INSTALL_HINT`.
"""

from __future__ import annotations

import logging
from functools import cache
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType

logger = logging.getLogger(__name__)

BFCL_EVAL_VERSION = "2026.3.23"
INSTALL_HINT = (
    f"pip install --no-deps bfcl-eval=={BFCL_EVAL_VERSION} && "
    "pip install tree_sitter==0.21.3 tree-sitter-java==0.21.0 tree-sitter-javascript==0.21.4"
)


def _import(module: str) -> ModuleType:
    try:
        loaded = import_module(module)
    except ImportError as error:
        raise ImportError(f"BFCL needs the official bfcl-eval package ({module}): {error}. {INSTALL_HINT}") from error
    _check_version()
    return loaded


@cache
def _check_version() -> None:
    try:
        installed = version("bfcl-eval")
    except PackageNotFoundError:
        return
    if installed != BFCL_EVAL_VERSION:
        logger.warning(
            "bfcl-eval %s is installed; genenv's BFCL checker was verified against %s", installed, BFCL_EVAL_VERSION
        )


@cache
def java_parser() -> ModuleType:
    """``bfcl_eval.model_handler.parser.java_parser`` (``parse_java_function_call``)."""
    return _import("bfcl_eval.model_handler.parser.java_parser")


@cache
def js_parser() -> ModuleType:
    """``bfcl_eval.model_handler.parser.js_parser`` (``parse_javascript_function_call``)."""
    return _import("bfcl_eval.model_handler.parser.js_parser")


@cache
def java_type_converter() -> ModuleType:
    """``bfcl_eval...type_convertor.java_type_converter`` (``java_type_converter``)."""
    return _import("bfcl_eval.eval_checker.ast_eval.type_convertor.java_type_converter")


@cache
def js_type_converter() -> ModuleType:
    """``bfcl_eval...type_convertor.js_type_converter`` (``js_type_converter``)."""
    return _import("bfcl_eval.eval_checker.ast_eval.type_convertor.js_type_converter")


@cache
def type_mappings() -> ModuleType:
    """``bfcl_eval.constants.type_mappings`` (Java/JS/OpenAPI type tables)."""
    return _import("bfcl_eval.constants.type_mappings")


@cache
def backend_config() -> ModuleType:
    """``bfcl_eval.constants.executable_backend_config`` (class -> module, stateless classes)."""
    return _import("bfcl_eval.constants.executable_backend_config")


@cache
def backend_class(class_name: str) -> type:
    """The multi-turn back-end class ``class_name`` (e.g. ``GorillaFileSystem``) from bfcl-eval."""
    modules = backend_config().CLASS_FILE_PATH_MAPPING
    if class_name not in modules:
        raise KeyError(f"unknown BFCL back-end class {class_name!r}; known: {', '.join(sorted(modules))}")
    return getattr(_import(modules[class_name]), class_name)
