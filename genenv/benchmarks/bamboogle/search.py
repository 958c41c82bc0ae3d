"""The back-ends of Bamboogle's ``search(query)`` tool.

* :class:`BM25Search`: BM25 (the ``bm25s`` package) over a corpus the user gives, a JSONL file of
  ``{"id", "title", "text"}`` documents.
* :class:`SimulatedSearch`: no corpus: a chat LLM writes the search results for the query (an
  LLM-simulated search engine). It sees the query only, never the question or its gold answer,
  and every observation says the results are simulated.

Both turn a query into the observation text the agent reads; neither raises on a bad query.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol


class SearchEngine(Protocol):
    """What the adapter needs from a search back-end."""

    #: one line for the system prompt: where the results come from
    description: str

    def search(self, query: str) -> str:
        """The observation for ``query`` (results, or a line saying there are none)."""
        ...


@dataclass(frozen=True)
class Document:
    """One corpus document."""

    doc_id: str
    title: str
    text: str


def load_corpus(path: str | os.PathLike[str]) -> list[Document]:
    """Read a JSONL corpus of ``{"id", "title", "text"}`` objects; ``ValueError`` names a bad line."""
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"search corpus not found: {file} (a JSONL file of {{id, title, text}} objects)")
    documents = []
    with file.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as error:
                raise ValueError(f"{file}:{number}: not JSON ({error})") from None
            if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
                raise ValueError(f"{file}:{number}: expected an object with a string 'text'")
            title = obj.get("title") or ""
            documents.append(Document(str(obj.get("id", number)), str(title), obj["text"]))
    if not documents:
        raise ValueError(f"search corpus {file} has no documents")
    return documents


class BM25Search:
    """BM25 over a JSONL corpus (title and text indexed together, English stop words removed).

    Args:
        corpus: path of the JSONL corpus.
        top_k: documents returned per query.
        max_doc_chars: each document's text is cut to this many characters in the observation.
    """

    def __init__(self, corpus: str | os.PathLike[str], top_k: int = 3, max_doc_chars: int = 600) -> None:
        import bm25s

        self._bm25s = bm25s
        self.documents = load_corpus(corpus)
        self.top_k = top_k
        self.max_doc_chars = max_doc_chars
        self.description = f"BM25 over the corpus {Path(corpus).name} ({len(self.documents)} documents)"
        texts = [f"{doc.title}\n{doc.text}" for doc in self.documents]
        self._retriever = bm25s.BM25()
        self._retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)

    def retrieve(self, query: str) -> list[tuple[Document, float]]:
        """The best documents for ``query`` with their BM25 scores (only those scoring above 0)."""
        tokens = self._bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)
        k = min(self.top_k, len(self.documents))
        indices, scores = self._retriever.retrieve(tokens, k=k, show_progress=False)
        return [(self.documents[int(i)], float(s)) for i, s in zip(indices[0], scores[0]) if s > 0]

    def search(self, query: str) -> str:
        hits = self.retrieve(query)
        if not hits:
            return f'No documents match "{query}" ({self.description}).'
        lines = [f'Search results for "{query}" ({self.description}):']
        for rank, (doc, _) in enumerate(hits, 1):
            text = doc.text if len(doc.text) <= self.max_doc_chars else doc.text[: self.max_doc_chars] + "..."
            lines.append(f"[{rank}] {doc.title} (id {doc.doc_id})\n{text}")
        return "\n".join(lines)


# One worked exchange shows the small model the result format; the topic is unrelated to Bamboogle.
_SEARCH_SYSTEM = (
    "You are a web search engine. For the query, write {k} short search results, one per line, each as "
    "'[n] Page title: one factual sentence from that page'. Write only the results."
)
_SEARCH_EXAMPLE = [
    {"role": "user", "content": "Query: height of the Eiffel Tower"},
    {
        "role": "assistant",
        "content": "[1] Eiffel Tower: The Eiffel Tower in Paris is 330 metres (1,083 ft) tall.\n"
        "[2] Gustave Eiffel: Gustave Eiffel's company designed and built the tower for the 1889 World's Fair.\n"
        "[3] Tallest structures in France: The Eiffel Tower was the tallest man-made structure until 1930.",
    },
]


class SimulatedSearch:
    """An LLM-simulated search engine: the model writes results for the query (greedy, cached).

    Args:
        policy: a :class:`~genenv.llm.models.Policy`, or a model name for
            :func:`~genenv.llm.models.load_policy` (loaded on the first search).
        top_k: results asked for per query.
        max_new_tokens: generation budget per query.
    """

    description = "simulated: a language model writes the results, they are not retrieved and may be wrong"

    def __init__(self, policy: Any = "smollm2", top_k: int = 3, max_new_tokens: int = 64, cache_size: int = 4096):
        self._policy = policy
        self.top_k = top_k
        self.max_new_tokens = max_new_tokens
        self.cache_size = cache_size
        self._cache: dict[str, str] = {}

    @property
    def policy(self) -> Any:
        if isinstance(self._policy, str):
            from genenv.llm.models import load_policy

            self._policy = load_policy(self._policy)
        return self._policy

    def conversation(self, query: str) -> list[dict[str, str]]:
        """The prompt: instructions, one worked example, the query (and nothing else)."""
        system = {"role": "system", "content": _SEARCH_SYSTEM.format(k=self.top_k)}
        return [system, *_SEARCH_EXAMPLE, {"role": "user", "content": f"Query: {query}"}]

    def results(self, query: str) -> str:
        """The model's result text for ``query`` (greedy decoding, so repeated queries are cached)."""
        if query not in self._cache:
            from genenv.llm.generation import SamplingConfig, generate_chat  # torch: loaded with the first search

            sampling = SamplingConfig(max_new_tokens=self.max_new_tokens, temperature=0.0)
            if len(self._cache) >= self.cache_size:
                self._cache.pop(next(iter(self._cache)))
            self._cache[query] = generate_chat(self.policy, [self.conversation(query)], None, sampling)[0]
        return self._cache[query]

    def search(self, query: str) -> str:
        text = self.results(query).strip() or "(no results)"
        header = f'Search results for "{query}" (simulated: written by a language model, not retrieved; may be wrong):'
        return f"{header}\n{text}"


__all__ = ["BM25Search", "Document", "SearchEngine", "SimulatedSearch", "load_corpus"]
