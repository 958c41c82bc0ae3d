"""API-Bank benchmark adapter (levels 1-3): see :mod:`.adapter` for tasks, gold and scoring."""

from .adapter import APIBankAdapter, APIBankState

__all__ = ["APIBankAdapter", "APIBankState"]
