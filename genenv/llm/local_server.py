"""A local OpenAI-compatible server on a model folder: ``transformers serve``, with each streamed answer closed by
``data: [DONE]``.

    python -m genenv.llm.local_server MODEL [--host 127.0.0.1] [--port 8080] [--threads N]

``MODEL`` is a local Hugging Face folder, or an embedded model's name (``smollm2``, ``qwen05``: the folder
:func:`genenv.llm.models.embedded_model_dir` converts once). Nothing is downloaded. The server is transformers' own
(``transformers serve MODEL``: its FastAPI app, ``/v1/chat/completions``, ``/v1/completions``, ``/health``); requests
must name the model as the server was started with it (the folder's path; printed at start).

What this adds: OpenAI's streaming protocol ends every stream with a ``data: [DONE]`` event, which transformers 5.23
leaves out, and verifiers' chat harness (which always streams) fails every turn without it ("upstream stream ended
before its terminal event"). :class:`StreamTerminator` appends it where it is missing; nothing else changes.
``engine=openai`` does not stream and works with plain ``transformers serve`` as well.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

__all__ = ["DONE_EVENT", "StreamTerminator", "main", "model_folder"]

DONE_EVENT = b"data: [DONE]\n\n"
#: the routes whose streams follow OpenAI's chat and text completion protocol
COMPLETION_PATHS = ("/v1/chat/completions", "/v1/completions")

Message = MutableMapping[str, Any]
ASGIApp = Callable[[Message, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]


class StreamTerminator:
    """ASGI middleware: a ``text/event-stream`` answer of a completion route that ends without ``data: [DONE]`` gets
    it as its last event; every other answer passes unchanged."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(
        self, scope: Message, receive: Callable[[], Awaitable[Message]], send: Callable[[Message], Awaitable[None]]
    ) -> None:
        if scope["type"] != "http" or scope.get("path") not in COMPLETION_PATHS:
            await self.app(scope, receive, send)
            return
        streaming = terminated = False

        async def relay(message: Message) -> None:
            nonlocal streaming, terminated
            if message["type"] == "http.response.start":
                content_type = dict(message.get("headers", [])).get(b"content-type", b"")
                streaming = content_type.startswith(b"text/event-stream")
            elif message["type"] == "http.response.body" and streaming:
                body = message.get("body", b"")
                terminated = terminated or DONE_EVENT.strip() in body
                if not message.get("more_body", False) and not terminated:
                    message = {**message, "body": body + DONE_EVENT}
            await send(message)

        await self.app(scope, receive, relay)


def model_folder(model: str) -> Path:
    """The folder to serve: an embedded model's converted folder, else ``model`` itself (a ``ValueError`` when it is
    not a folder: the server downloads nothing)."""
    from genenv.llm.models import EMBEDDED_MODELS, embedded_model_dir

    if model in EMBEDDED_MODELS:
        return embedded_model_dir(model=model)
    folder = Path(model).expanduser()
    if not folder.is_dir():
        raise ValueError(f"model must be a local model folder or one of {sorted(EMBEDDED_MODELS)}, got {model!r}")
    return folder.resolve()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m genenv.llm.local_server", description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a local model folder, or smollm2 / qwen05 (the embedded weights)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder needs no hub; nothing is looked up there
    folder = str(model_folder(args.model))
    import torch
    from transformers.cli.serve import Serve
    from transformers.cli.serving import server

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    build_server = server.build_server
    server.build_server = lambda *a, **k: StreamTerminator(build_server(*a, **k))  # read by Serve at start
    print(f"serving {folder} at http://{args.host}:{args.port}/v1 (requests name the model {folder!r})", flush=True)
    Serve(force_model=folder, host=args.host, port=args.port)


if __name__ == "__main__":
    main()
