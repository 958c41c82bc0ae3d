"""Serve a benchmark's episodes through OpenEnv's server: ``python -m genenv.serve +bench=NAME [port=8000]``.

One WebSocket session per client, each with its own :class:`~genenv.envs.tool_env.ToolEnv` (OpenEnv's ``/ws``,
what :class:`~genenv.integrations.openenv.GenEnvClient` speaks), plus OpenEnv's ``/schema``, ``/health``,
``/metadata``, ``/state`` and genenv's ``/sessions``. Rewards are the official scores (the adapter's
``reporting_adapter``). A malformed message gets an error reply naming the cause and the session goes on
(:class:`~genenv.integrations.openenv.SessionGuard`). A session ends with its connection; the server pings every client
and closes the session of one that stops answering for ``idle_timeout_s`` (a killed or frozen client); a client gone
mid-episode costs one log line. Settings: ``genenv/configs/serve.yaml``.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from genenv.config import CONFIG_DIR, episode_turns, official_adapter, require_bench


def websocket_frame_limit(max_action_chars: int) -> int:
    """The largest WebSocket message accepted, in bytes: an action of ``max_action_chars`` characters escaped as JSON
    (at most 12 bytes a character) plus room for the envelope; larger messages close the connection (code 1009)."""
    return 12 * max_action_chars + 65_536


def serve(cfg: DictConfig) -> None:
    """Build the app ``cfg`` describes and run it with uvicorn until interrupted."""
    try:
        import uvicorn

        from genenv.integrations.openenv import build_app
    except ImportError as error:
        raise SystemExit(f"serving needs the openenv extra: pip install 'genenv[openenv]' ({error})") from error
    bench = require_bench(cfg)
    adapter = official_adapter(cfg)
    idle = float(cfg.idle_timeout_s) if cfg.idle_timeout_s else None
    app = build_app(
        adapter,
        split=cfg.split or bench.split,
        max_sessions=int(cfg.max_sessions),
        max_action_chars=int(cfg.max_action_chars),
        idle_timeout_s=idle,
        max_turns=episode_turns(cfg, cfg.max_turns),
    )
    print(f"genenv {bench.name} over OpenEnv: http://{cfg.host}:{cfg.port}, sessions at /ws", flush=True)
    uvicorn.run(
        app,
        host=str(cfg.host),
        port=int(cfg.port),
        log_level=str(cfg.log_level),
        ws_max_size=websocket_frame_limit(int(cfg.max_action_chars)),
        ws_ping_interval=idle / 2 if idle else None,
        ws_ping_timeout=idle / 2 if idle else None,
    )


@hydra.main(config_path=str(CONFIG_DIR), config_name="serve", version_base="1.3")
def main(cfg: DictConfig) -> None:
    serve(cfg)


if __name__ == "__main__":
    main()
