"""Play a served genenv benchmark through OpenEnv's client.

    python examples/openenv_client.py [--bench reasoning_gym] [--port 8765]

It starts ``python -m genenv.serve +bench=BENCH port=PORT`` (in your own setup the server runs elsewhere: pass
``--base-url`` and it connects to that instead), plays one episode with a fixed answer and prints the official score.
Needs the openenv extra (``scripts/setup.sh`` installs it).
"""

import argparse
import socket
import subprocess
import sys
import time
from contextlib import contextmanager

from genenv.integrations.openenv import GenEnvClient


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def served(bench: str, port: int):
    """``genenv.serve`` on 127.0.0.1:``port`` until the block ends."""
    server = subprocess.Popen([sys.executable, "-m", "genenv.serve", f"+bench={bench}", f"port={port}"])
    try:
        deadline = time.monotonic() + 120
        while not _listening(port):
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"genenv.serve did not start (exit code {server.poll()})")
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


def play(base_url: str, answer: str) -> None:
    with GenEnvClient(base_url=base_url).sync() as env:
        result = env.reset(seed=0)  # a task drawn from the served split; reset(task_id=...) picks one
        print("prompt:", result.observation.text[-200:])
        result = env.step(answer)  # plain text: the final answer ends the episode
        print(f"done {result.done}, reward {result.reward}, breakdown {result.observation.score_breakdown}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", default="reasoning_gym")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--base-url", help="a running genenv server (default: start one)")
    parser.add_argument("--answer", default="<answer>42</answer>")
    args = parser.parse_args()
    if args.base_url:
        play(args.base_url, args.answer)
        return
    with served(args.bench, args.port) as base_url:
        play(base_url, args.answer)


if __name__ == "__main__":
    main()
