"""The OpenAI-compatible endpoint engine: generation by a server genenv does not train (``engine=openai``).

Any server speaking OpenAI's HTTP API (OpenAI itself, vLLM, llama.cpp's servers, ...) at ``base_url``:

* :meth:`OpenAIEngine.chat` continues conversations through ``/chat/completions``: the server renders its own chat
  template, and a JSON schema goes out as the request's ``response_format`` in the form the server enforces (llama.cpp
  compiles it to a grammar). The simulator (and so the Offline baseline's pool writer) writes tasks this way.
  Which form that is (``json_schema``, ``json_object`` or neither) the engine learns once, on its first schema, by
  asking for a one-word answer under a schema no free answer meets (:meth:`OpenAIEngine.schema_support`): a server
  that refuses the form, or ignores it, does not support it. It logs what it found in one line; with neither,
  schema-constrained calls go out without ``response_format`` and the caller validates the answers (the simulator
  does, and rejects a task that does not parse, with its reason).
* :meth:`OpenAIEngine.generator` is a token-level :data:`~genenv.llm.generation.GenerateFn` over ``/completions``:
  genenv renders the agent's prompt with its local tokenizer as for any engine, sends it as text, and re-encodes the
  returned text with that tokenizer (plus the end-of-turn token when the server stopped at one). The served model
  must share that tokenizer's chat template; no log-probabilities come back, so GRPO cannot train on these tokens.

A request is retried after a 408/409/429/502/503/504, a timeout or a refused connection, with exponential backoff, and
once after a 500 (a second 500 is the request's, not the moment's); at most ``max_concurrency`` requests are in
flight. A request that still fails raises :class:`EndpointError` naming the URL
and the status. The API key is read from the environment variable ``api_key_env`` names, never from a config.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from genenv.llm.generation import GenerateFn, SamplingConfig

if TYPE_CHECKING:
    import httpx

__all__ = ["EndpointError", "OpenAIConfig", "OpenAIEngine", "SCHEMA_FORMATS"]

logger = logging.getLogger(__name__)

#: statuses worth another try with the same request: timeouts, conflicts, rate limits, an overloaded or unreachable
#: upstream; a 500 gets one more try only
TRANSIENT_STATUSES = frozenset({408, 409, 429, 502, 503, 504})
#: how schemas go out: ``auto`` (what the server enforces, learnt once), a form, or ``none`` (never sent)
SCHEMA_FORMATS = ("auto", "json_schema", "json_object", "none")
#: the probe: a one-word request under a schema that only a constrained answer meets
PROBE_MESSAGES = [{"role": "user", "content": "Say hello in one word."}]
PROBE_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["yes"]}},
    "required": ["answer"],
    "additionalProperties": False,
}
PROBE_TOKENS = 32
#: statuses by which a server refuses a probe's form (invalid, unprocessable, failed on it, not implemented)
PROBE_REFUSALS = frozenset({400, 422, 500, 501})
#: longest wait between two tries, whatever the backoff or a ``Retry-After`` header says
MAX_BACKOFF_S = 60.0


class EndpointError(RuntimeError):
    """A request to an OpenAI-compatible server failed for good (the message names the URL and the status)."""


@dataclass
class OpenAIConfig:
    """Where and how to reach an OpenAI-compatible server (the ``openai`` settings of ``engine=openai``).

    Args:
        base_url: the API root, ``/v1`` included (``http://127.0.0.1:8080/v1``, ``https://api.openai.com/v1``).
        model: the model name sent with every request, as the server knows it.
        api_key_env: the environment variable holding the API key, sent as a bearer token; no key is sent while
            it is unset or empty (local servers).
        timeout_s: seconds one request may take (connect, send, wait, read) before it counts as a failed try.
        max_retries: further tries of a request after a 408/409/429, a 5xx, a timeout or a connection error.
        backoff_s: wait before the first retry, doubled for each further one (a ``Retry-After`` header wins);
            never over 60 s.
        max_concurrency: requests in flight at once (the rows of a batch go out in parallel up to this).
        schema_format: how a JSON schema is sent: ``"auto"`` (the best form the server enforces, learnt once:
            :meth:`OpenAIEngine.schema_support`), ``"json_schema"`` (OpenAI's ``response_format``, which vLLM and
            llama.cpp's ``llama-server`` take too), ``"json_object"`` (``{"type": "json_object", "schema": ...}``,
            the form llama-cpp-python's server takes) or ``"none"`` (schemas never sent; answers validated after).
        extra_body: further fields of every request (server-specific sampling settings, e.g. ``{"top_k": 0}`` for
            llama.cpp, whose default top-k of 40 differs from genenv's engines, which sample the whole vocabulary).
    """

    base_url: str = "http://127.0.0.1:8080/v1"
    model: str = "default"
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 120.0
    max_retries: int = 4
    backoff_s: float = 1.0
    max_concurrency: int = 4
    schema_format: Literal["auto", "json_schema", "json_object", "none"] = "auto"
    extra_body: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, kinds in (("timeout_s", (int, float)), ("backoff_s", (int, float)), ("max_retries", (int,)),
                            ("max_concurrency", (int,)), ("base_url", (str,)), ("model", (str,)),
                            ("api_key_env", (str,)), ("extra_body", (dict,))):  # fmt: skip
            value = getattr(self, name)
            if not isinstance(value, kinds) or isinstance(value, bool):
                raise ValueError(f"openai.{name} must be {' or '.join(k.__name__ for k in kinds)}, got {value!r}")
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"openai.base_url must start with http:// or https://, got {self.base_url!r}")
        if self.timeout_s <= 0 or self.backoff_s < 0:
            raise ValueError("openai.timeout_s must be > 0 and openai.backoff_s >= 0")
        if self.max_retries < 0 or self.max_concurrency < 1:
            raise ValueError("openai.max_retries must be >= 0 and openai.max_concurrency >= 1")
        if self.schema_format not in SCHEMA_FORMATS:
            choices = ", ".join(SCHEMA_FORMATS)
            raise ValueError(f"openai.schema_format must be one of {choices}, got {self.schema_format!r}")


class OpenAIEngine:
    """Generation by an OpenAI-compatible server; ``tokenizer``: the local tokenizer of the served model, needed by
    :meth:`generator` only."""

    name = "openai"

    def __init__(self, config: OpenAIConfig, tokenizer: Any | None = None) -> None:
        self.config = config
        self.tokenizer = tokenizer
        self._base = config.base_url.rstrip("/")
        httpx = _httpx()
        self._client = httpx.Client(
            timeout=config.timeout_s,
            limits=httpx.Limits(max_connections=config.max_concurrency),
            headers=self._headers(),
        )
        self._pool = ThreadPoolExecutor(max_workers=config.max_concurrency, thread_name_prefix="genenv-openai")
        self._schema_support: str | None = None if config.schema_format == "auto" else config.schema_format
        self._probe_lock = threading.Lock()

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(self.config.api_key_env, "")
        return {"Authorization": f"Bearer {key}"} if key else {}

    def sync(self, model: Any, *, force: bool = False) -> float:
        """Nothing to sync: the server generates with its own weights."""
        return 0.0

    # -- requests -----------------------------------------------------------------------------
    def _sampling(self, sampling: SamplingConfig, seed: int | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "max_tokens": sampling.max_new_tokens,
            "temperature": sampling.temperature,
        }
        if sampling.temperature > 0:
            body["top_p"] = sampling.top_p
        if seed is not None:
            body["seed"] = seed
        return {**body, **self.config.extra_body}

    @staticmethod
    def _response_format(form: str, schema: dict[str, Any]) -> dict[str, Any]:
        if form == "json_object":
            return {"type": "json_object", "schema": schema}
        return {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}

    def schema_support(self) -> str:
        """How this server's answers are held to a schema: ``"json_schema"``, ``"json_object"`` or ``"none"``. With
        ``schema_format=auto`` it is learnt on the first call (one probe request per form, best first, stopping at
        the first the server enforces) and logged in one line; otherwise it is the configured form."""
        with self._probe_lock:
            if self._schema_support is None:
                self._schema_support = self._probe()
            return self._schema_support

    def _probe(self) -> str:
        """The best form the server enforces: an answer under :data:`PROBE_SCHEMA` that is the schema's one object
        (``json_schema``) or, for ``json_object``, any JSON object; a refusal or another answer rules the form out."""
        sampling = self._sampling(SamplingConfig(max_new_tokens=PROBE_TOKENS, temperature=0.0), None)
        findings = []
        for form in ("json_schema", "json_object"):
            constraint = self._response_format(form, PROBE_SCHEMA)
            body = {**sampling, "messages": PROBE_MESSAGES, "response_format": constraint}
            try:
                message = self._post("chat/completions", body, probe=True).get("message")
            except _Refused as refusal:
                findings.append(f"{form}: refused ({refusal})")
                continue
            text = message.get("content") if isinstance(message, dict) else None
            try:
                answer = json.loads(text) if isinstance(text, str) else None
            except json.JSONDecodeError:
                answer = None
            if answer == {"answer": "yes"} or (form == "json_object" and isinstance(answer, dict)):
                before = f" ({'; '.join(findings)})" if findings else ""
                logger.info("%s: constrained output by response_format %s%s", self._base, form, before)
                return form
            findings.append(f"{form}: not enforced (answered {_excerpt(repr(text), 60)})")
        logger.warning(
            "%s: no constrained output (%s); schemas are not sent, and answers are validated as they come",
            self._base,
            "; ".join(findings),
        )
        return "none"

    def _post(self, path: str, body: dict[str, Any], *, probe: bool = False) -> dict[str, Any]:
        """One request, tried up to ``1 + max_retries`` times (a 500 twice at most); the JSON answer's first choice.
        ``probe``: a 400, 422, 500 or 501 (the request's form refused) raises :class:`_Refused` at once."""
        httpx = _httpx()
        url = f"{self._base}/{path}"
        tries = 1 + self.config.max_retries
        server_errors = 0
        for attempt in range(tries):
            wait: float | None = None
            try:
                response = self._client.post(url, json=body)
            except httpx.TimeoutException:
                problem = f"no answer within {self.config.timeout_s:g} s"
            except httpx.ConnectError as error:
                problem = f"cannot connect ({error}); is the server running?"
            except httpx.TransportError as error:  # e.g. the server closed the connection without an answer
                problem = f"connection failed ({type(error).__name__}: {error})"
            else:
                status = response.status_code
                if status < 400:
                    return _first_choice(url, response)
                problem = f"HTTP {status}: {_excerpt(response.text)}"
                if probe and status in PROBE_REFUSALS:
                    raise _Refused(problem)
                server_errors += status == 500
                if status not in TRANSIENT_STATUSES and (status != 500 or server_errors > 1):
                    if status in (401, 403):
                        state = "set" if os.environ.get(self.config.api_key_env) else "not set"
                        problem += f" (API key from ${self.config.api_key_env}: {state})"
                    suffix = f" (after {attempt + 1} tries)" if attempt else ""
                    raise EndpointError(f"POST {url}: {problem}{suffix}")
                wait = _retry_after(response)
            if attempt + 1 < tries:
                delay = min(wait if wait is not None else self.config.backoff_s * 2**attempt, MAX_BACKOFF_S)
                logger.warning("POST %s: %s; try %d of %d in %.1f s", url, problem, attempt + 2, tries, delay)
                time.sleep(delay)
        raise EndpointError(f"POST {url}: {problem} (after {tries} tries)")

    def _post_all(self, path: str, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The requests in parallel (at most ``max_concurrency`` at once), the answers in order; the first failure
        cancels the requests not yet sent and raises."""
        return list(self._pool.map(lambda body: self._post(path, body), bodies))

    # -- message level ------------------------------------------------------------------------
    def chat(
        self,
        conversations: list[list[dict[str, Any]]],
        sampling: SamplingConfig,
        seed: int | None = None,
        schemas: list[dict[str, Any]] | None = None,
    ) -> list[str]:
        """The server's next assistant message for each conversation, in order; row ``i`` constrained to
        ``schemas[i]`` when given and the server enforces a schema form (:meth:`schema_support`). With ``seed``, row
        ``i`` is sampled with seed ``seed + i``."""
        form = "none" if schemas is None else self.schema_support()
        bodies = []
        for row, messages in enumerate(conversations):
            body = {**self._sampling(sampling, None if seed is None else seed + row), "messages": messages}
            if schemas is not None and form != "none":
                body["response_format"] = self._response_format(form, schemas[row])
            bodies.append(body)
        url = f"{self._base}/chat/completions"
        texts = []
        for choice in self._post_all("chat/completions", bodies):
            message = choice.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            if not isinstance(message, dict) or not isinstance(content, str | None):
                raise EndpointError(f"POST {url}: malformed answer, no message text: {_excerpt(repr(choice))}")
            texts.append((content or "").strip())
        return texts

    # -- token level --------------------------------------------------------------------------
    def generator(self, sampling: SamplingConfig, seed: int | None = None, *, logprobs: bool = False) -> GenerateFn:
        """A :data:`GenerateFn` over ``/completions``: each row's token ids go out as the text they decode to, the
        answer comes back as its text's token ids (the end-of-turn token appended when the server stopped on its
        own). With ``seed``, row ``r`` of call ``k`` is sampled with seed ``seed + 7919 * k + r``."""
        if logprobs:
            raise ValueError(
                "engine openai returns text, not log-probabilities of genenv's tokens: it cannot serve GRPO rollouts"
            )
        if self.tokenizer is None:
            raise ValueError("engine openai needs the served model's local tokenizer to play token-level episodes")
        tokenizer, eos = self.tokenizer, self.tokenizer.eos_token_id
        url = f"{self._base}/completions"
        calls = 0

        def generate(batch: list[list[int]]) -> tuple[list[list[int]], None]:
            nonlocal calls
            bodies = [
                {
                    **self._sampling(sampling, None if seed is None else seed + 7919 * calls + row),
                    "prompt": tokenizer.decode(ids, skip_special_tokens=False),
                }
                for row, ids in enumerate(batch)
            ]
            calls += 1
            new_ids = []
            for choice in self._post_all("completions", bodies):
                text = choice.get("text")
                if not isinstance(text, str):
                    raise EndpointError(f"POST {url}: malformed answer, no text: {_excerpt(repr(choice))}")
                ids = tokenizer(text, add_special_tokens=False)["input_ids"]
                new_ids.append(ids + [eos] if choice.get("finish_reason") == "stop" else ids)
            return new_ids, None

        return generate


class _Refused(Exception):
    """A probe request the server answered with an HTTP error: the form it carried is not supported."""


def _httpx() -> Any:
    """The ``httpx`` module, which the ``openai`` extra installs; a clear error without it."""
    try:
        import httpx
    except ImportError:
        raise ImportError("engine openai needs httpx: pip install 'genenv[openai]' (or httpx>=0.27,<1)") from None
    return httpx


def _first_choice(url: str, response: httpx.Response) -> dict[str, Any]:
    """The first element of the answer's ``choices``; :class:`EndpointError` when the body is not that."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise EndpointError(
            f"POST {url}: HTTP {response.status_code} with a malformed JSON body: {_excerpt(response.text)}"
        ) from None
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise EndpointError(f"POST {url}: malformed answer, no choices: {_excerpt(response.text)}")
    return choices[0]


def _retry_after(response: httpx.Response) -> float | None:
    """The wait a ``Retry-After`` header asks for, in seconds (``None``: none, or a date)."""
    try:
        return max(0.0, float(response.headers.get("retry-after", "")))
    except ValueError:
        return None


def _excerpt(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."
