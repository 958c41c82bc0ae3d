"""Language models, below everything else in genenv: loading (``models``), chat generation and its sampling settings
(``generation``), JSON-schema-constrained decoding (``constrained``), KV reuse across turns (``turn_cache``) and the
generation engines (``engines``)."""
