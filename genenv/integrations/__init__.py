"""genenv from the trainers and servers RL people already use: one module per integration, each behind its own
optional extra (``pip install genenv[trl]``, ``[openenv]``, ``[verifiers]``), importing only what it plugs into."""
