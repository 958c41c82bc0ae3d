"""The environment policy pi_env: an LLM that writes tasks for the agent.

The simulator is prompted with what the benchmark needs to know (``adapter.generation_context``),
worked examples from training data (``adapter.generation_examples``) and the agent's recent
success on the requested task family, and asked for one JSON object in ``adapter.task_schema``.
Its text is parsed (:func:`extract_json_object`, then ``adapter.parse_task``), checked against the adapter's JSON
schema for the family (:mod:`genenv.envs.task_schema`) and validated (``adapter.validate_task``); every output is
returned as a :class:`Proposal`, rejected ones with their reason (``unparsable: ...``, ``schema: ...``,
``invalid: ...``), so nothing is lost.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from genenv.benchmarks.base import BenchmarkAdapter, Task
from genenv.envs.task_schema import family_schema, schema_violation
from genenv.llm.engines import Engine, OpenAIConfig, build_engine, engine_chat, resolve_engine
from genenv.llm.engines.openai import OpenAIEngine
from genenv.llm.generation import SamplingConfig, generate_chat

logger = logging.getLogger(__name__)

#: longest simulator output quoted in full in :func:`scored_tasks_note`
MAX_SCORED_CHARS = 300


@dataclass
class Proposal:
    """One simulator output and what became of it."""

    family: str
    messages: list[dict[str, Any]]
    raw: str
    task: Task | None = None
    reject_reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "messages": self.messages,
            "raw": self.raw,
            "task": self.task.to_dict() if self.task else None,
            "reject_reason": self.reject_reason,
        }

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> Proposal:
        """A proposal from its :meth:`to_dict` (extra keys of a stored record are ignored)."""
        task = Task.from_dict(record["task"]) if record["task"] is not None else None
        return cls(record["family"], record["messages"], record["raw"], task, record["reject_reason"])


def extract_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text`` (code fences and surrounding prose allowed)."""
    decoder = json.JSONDecoder(parse_constant=_reject_non_finite, parse_float=_finite_float)
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON object in the simulator output")
    try:
        value, _ = decoder.raw_decode(text, start)
    except (ValueError, RecursionError) as error:
        raise ValueError(f"invalid JSON in the simulator output: {error}") from None
    if not isinstance(value, dict):
        raise ValueError("the simulator output is not a JSON object")
    return value


def _reject_non_finite(constant: str) -> float:
    raise ValueError(f"non-finite number {constant} in the simulator output")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} overflows to {value} in the simulator output")
    return value


def difficulty_instruction(success: float | None, alpha: float) -> str:
    """The curriculum hint: how the agent fares on this family and which way to move."""
    if success is None:
        return "The agent has not seen tasks of this kind yet; write a typical one."
    direction = "harder" if success > alpha else "easier" if success < alpha else "similar"
    return (
        f"The agent currently solves {success:.0%} of these tasks; the target is {alpha:.0%}. "
        f"Write a {direction} task" + (" than before." if direction != "similar" else " to before.")
    )


def scored_tasks_note(scored: Sequence[tuple[str, float]], alpha: float) -> str:
    """The simulator's latest played tasks of a family (as it wrote them) with the share of the agent's attempts
    that solved each: per-task feedback on what is too easy, too hard or on target."""
    lines = [
        f"Your latest tasks of this kind and the share of the agent's attempts that solved each (target {alpha:.0%}):"
    ]
    for raw, p_hat in scored:
        shown = " ".join(raw.split())
        if len(shown) > MAX_SCORED_CHARS:
            shown = shown[:MAX_SCORED_CHARS] + "..."
        lines.append(f"- {shown} -> {p_hat:.0%}")
    return "\n".join(lines)


class Simulator:
    """Writes tasks for a benchmark with a chat LLM.

    Args:
        policy: a :class:`~genenv.llm.models.Policy`, or a model name for
            :func:`~genenv.llm.models.load_policy` (loaded on first use); ``None`` with engine ``openai``.
        batch_size: proposals per :meth:`propose` call (one batched ``generate``).
        sampling: decoding settings; sampling (temperature > 0) keeps proposals diverse.
        num_examples: worked examples shown per prompt.
        alpha: the target success rate quoted in the prompt.
        constrained: keep each answer inside ``adapter.generation_schema(family)`` while it is
            generated (JSON-schema-constrained decoding), when the adapter provides schemas.
        engine: who generates (``hf``, ``ctranslate2``, ``vllm``, ``llamacpp``, ``openai`` or ``auto``:
            :func:`~genenv.llm.engines.resolve_engine`), synced with the policy's current weights before every
            call. ``llamacpp`` enforces a constrained call's schemas with llama.cpp's grammar sampler; for
            ``ctranslate2`` and ``vllm``, which have no logits hook, constrained calls fall back to ``hf``
            (lm-format-enforcer), and the reason is logged once. With ``openai`` the server ``openai`` names renders
            the chat itself and enforces a constrained call's schema; no local weights are loaded.
        engine_compute_type: ``"int8"`` or ``"float32"`` (CTranslate2's weights, or a llama.cpp export's).
        engine_threads: CTranslate2's or llama.cpp's threads (``None``: torch's for CTranslate2, 1 for llama.cpp).
        openai: the server of engine ``openai``.
    """

    def __init__(
        self,
        policy: Any = "smollm2",
        *,
        batch_size: int = 4,
        sampling: SamplingConfig | None = None,
        num_examples: int = 2,
        alpha: float = 0.5,
        constrained: bool = True,
        engine: str = "hf",
        engine_compute_type: str = "int8",
        engine_threads: int | None = None,
        openai: OpenAIConfig | None = None,
    ) -> None:
        self._policy = policy
        self.engine_setting = engine
        self.engine_compute_type = engine_compute_type
        self.engine_threads = engine_threads
        self.openai = openai
        self._engine_name: str | None = None
        self._engine: Engine | None = None
        self._fallback_logged = False
        self.batch_size = batch_size
        self.sampling = sampling or SamplingConfig(max_new_tokens=256, temperature=0.8, top_p=0.95)
        self.num_examples = num_examples
        self.alpha = alpha
        self.constrained = constrained

    @property
    def policy(self) -> Any:
        """The simulator's local model (loaded on first use); ``ValueError`` for a simulator on a server, which has
        none (nothing to update by RWR)."""
        if self._policy is None:
            raise ValueError(
                f"the simulator (engine {self.engine_setting}) has no local weights: RWR and other weight updates "
                "need a local simulator"
            )
        if isinstance(self._policy, str):
            from genenv.llm.models import load_policy

            self._policy = load_policy(self._policy)
        return self._policy

    @property
    def has_local_weights(self) -> bool:
        """Whether the simulator writes with local weights, which RWR can update: not on a server (engine
        ``openai``), as the co-evolution trainer decides for ``simulator_engine="openai"``, nor without a policy."""
        return self.engine_setting != "openai" and self._policy is not None

    @property
    def engine_name(self) -> str:
        """The engine the ``engine`` setting resolves to on this machine (resolved once, the reason logged)."""
        if self._engine_name is None and self.engine_setting == "openai":
            self._engine_name = "openai"  # a server: no local weights, no device
        if self._engine_name is None:
            self._engine_name, _ = resolve_engine(
                self.engine_setting, device=self.policy.model.device, purpose="generate"
            )
        return self._engine_name

    @property
    def engine(self) -> Engine:
        """The simulator's engine, built on first use."""
        if self._engine is None:
            policy = None if self.engine_name == "openai" else self.policy
            self._engine = build_engine(
                self.engine_name,
                policy,
                compute_type=self.engine_compute_type,
                threads=self.engine_threads,
                openai=self.openai,
            )
        return self._engine

    def messages(
        self,
        adapter: BenchmarkAdapter,
        family: str,
        rng: np.random.Generator,
        success: Mapping[str, float] | None = None,
        own_examples: Sequence[str] = (),
        scored: Sequence[tuple[str, float]] = (),
    ) -> list[dict[str, Any]]:
        """The chat prompt asking for one task of ``family``; ``success`` maps family -> the agent's recent success.

        Its ``num_examples`` worked examples are the last of ``own_examples`` (earlier outputs of this simulator,
        shown as it wrote them, oldest first), after as many of the adapter's ``generation_examples`` as they leave.
        ``scored`` (earlier outputs of this family, each with the agent's success on it) is listed in the request
        (:func:`scored_tasks_note`)."""
        system = (
            f"You are an environment simulator for the {adapter.name} benchmark. You write new tasks "
            "for an AI agent. Answer with exactly one JSON object matching this schema, nothing else:\n"
            + json.dumps(adapter.task_schema, ensure_ascii=False)
        )
        conversation = [{"role": "system", "content": system}]
        own = list(own_examples)[-self.num_examples :] if self.num_examples else []
        shown = [
            json.dumps(e, ensure_ascii=False)
            for e in adapter.generation_examples(family, self.num_examples - len(own), rng)
        ]
        for example in shown + own:
            conversation.append({"role": "user", "content": "Write one new task as JSON."})
            conversation.append({"role": "assistant", "content": example})
        note = f"{scored_tasks_note(scored, self.alpha)}\n\n" if scored else ""
        request = (
            f"{adapter.generation_context(family, rng, success)}\n\n{note}"
            f"{difficulty_instruction(adapter.request_success(family, success or {}), self.alpha)}\n"
            f"Write one new task of kind '{family}' as JSON."
        )
        conversation.append({"role": "user", "content": request})
        return conversation

    def generate(
        self,
        conversations: list[list[dict[str, Any]]],
        seed: int | None = None,
        schemas: list[dict[str, Any]] | None = None,
    ) -> list[str]:
        """Raw simulator text for each prompt, in one batch; row i constrained to ``schemas[i]`` if given."""
        if self.engine_name == "openai":  # the server renders the chat and enforces the schemas itself
            return cast(OpenAIEngine, self.engine).chat(conversations, self.sampling, seed=seed, schemas=schemas)
        if schemas is not None and self.engine_name != "llamacpp":  # llama.cpp enforces them with its grammar
            from genenv.llm.constrained import json_schema_constraint

            if self.engine_name != "hf" and not self._fallback_logged:
                logger.info("simulator: constrained decoding runs on hf (%s has no logits hook)", self.engine_name)
                self._fallback_logged = True
            allowed = json_schema_constraint(self.policy.tokenizer, schemas)
            return generate_chat(
                self.policy, conversations, None, self.sampling, generator_seed=seed, allowed_tokens=allowed
            )
        self.engine.sync(self.policy.model)
        return engine_chat(self.engine, self.policy.tokenizer, conversations, self.sampling, seed=seed, schemas=schemas)

    def propose(
        self,
        adapter: BenchmarkAdapter,
        *,
        rng: np.random.Generator,
        n: int | None = None,
        families: list[str] | None = None,
        success: dict[str, float] | None = None,
        own_examples: Mapping[str, Sequence[str]] | None = None,
        scored: Mapping[str, Sequence[tuple[str, float]]] | None = None,
    ) -> list[Proposal]:
        """Write ``n`` tasks (default ``batch_size``), parse and validate each.

        ``families`` fixes the family of each proposal (default: drawn uniformly from
        ``adapter.families()``); ``success`` maps family -> the agent's recent success rate; ``own_examples`` maps
        family -> earlier outputs of this simulator to show as worked examples, ``scored`` family -> earlier outputs
        with the agent's success on each to list in the request (:meth:`messages`).
        """
        n = n or self.batch_size
        if families is None:
            choices = adapter.families()
            families = [choices[int(rng.integers(len(choices)))] for _ in range(n)]
        prompts = [
            self.messages(
                adapter, family, rng, success, (own_examples or {}).get(family, ()), (scored or {}).get(family, ())
            )
            for family in families
        ]
        generation_schemas = {family: adapter.generation_schema(family) for family in dict.fromkeys(families)}
        schemas = [generation_schemas[family] for family in families] if self.constrained else []
        constrained = bool(schemas) and all(schema is not None for schema in schemas)
        texts = self.generate(prompts, seed=int(rng.integers(2**31)), schemas=schemas if constrained else None)
        checked = {family: schema or adapter.task_schema for family, schema in generation_schemas.items()}
        return [
            to_proposal(adapter, family, prompt, text, checked[family])
            for family, prompt, text in zip(families, prompts, texts)
        ]


def to_proposal(
    adapter: BenchmarkAdapter,
    family: str,
    messages: list[dict[str, Any]],
    raw: str,
    schema: dict[str, Any] | None = None,
) -> Proposal:
    """Parse, schema-check and validate one simulator output; the reason is kept when it is rejected.

    The written JSON object must satisfy ``schema`` (default: :func:`~genenv.envs.task_schema.family_schema`, the
    adapter's schema for ``family``; ``{}``: none) before ``adapter.validate_task`` sees the task; one that does not
    is rejected with the schema's reason (``schema: <path>: <message>``). A task ``parse_task`` cannot read is
    rejected as ``unparsable`` first."""
    proposal = Proposal(family=family, messages=messages, raw=raw)
    try:
        obj = extract_json_object(raw)
    except ValueError as error:
        proposal.reject_reason = f"unparsable: {error}"
        return proposal
    if schema is None:
        schema = family_schema(adapter, family) or {}
    violation = schema_violation(obj, schema) if schema else None  # before parse_task, which may change obj
    try:
        task = adapter.parse_task(obj, family)
    except (ValueError, KeyError, TypeError) as error:
        proposal.reject_reason = f"unparsable: {error}"
        return proposal
    except Exception as error:  # noqa: BLE001 - an adapter bug on odd input rejects the task, never the epoch
        logger.warning("%s.parse_task raised %s on a simulator output", type(adapter).__name__, type(error).__name__)
        proposal.reject_reason = f"unparsable: {type(error).__name__}: {error}"
        return proposal
    if violation is not None:
        proposal.reject_reason = f"schema: {violation}"
        return proposal
    try:
        ok, reason = adapter.validate_task(task)
    except Exception as error:  # noqa: BLE001
        logger.warning("%s.validate_task raised %s", type(adapter).__name__, type(error).__name__)
        ok, reason = False, f"validation raised {type(error).__name__}: {error}"
    if ok:
        proposal.task = task
    else:
        proposal.reject_reason = f"invalid: {reason}"
    return proposal
