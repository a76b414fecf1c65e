"""Optional LLM calls, duck-typed so the core imports no framework.

An ``llm`` is a LangChain chat model or LLM (``invoke``), a LlamaIndex LLM (``complete``) or a
``str -> str`` callable. Every answer is validated; a failure is logged and the extractive
result stands.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..values.model import Context

__all__ = ["call_llm", "rewrite_narrative"]

logger = logging.getLogger("shared_core")


def call_llm(llm: Any, prompt: str) -> str:
    """Send ``prompt`` to any supported model and return its text."""
    complete = getattr(llm, "complete", None)
    if callable(complete) and not hasattr(llm, "invoke"):
        return str(complete(prompt).text)
    invoke = getattr(llm, "invoke", None)
    if callable(invoke):
        answer = invoke(prompt)
        content = getattr(answer, "content", answer)
        if isinstance(content, list):  # content blocks
            content = "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
        return str(content)
    if callable(llm):
        return str(llm(prompt))
    raise TypeError(f"llm must be a LangChain model, a LlamaIndex LLM or a callable, got {type(llm).__name__}")


def rewrite_narrative(ctx: Context, llm: Any, *, count: Callable[[str], int]) -> Context:
    """Ask ``llm`` to turn the extractive narrative into one coherent paragraph.

    The rewrite is kept only if it is non-empty and fits the budget; otherwise the extractive
    text stands and the reason is logged.
    """
    prompt = ("Rewrite these memories as one coherent paragraph in the third person. Keep every "
              "date, number, name and decision; add nothing.\n\n" + ctx.text)
    try:
        text = call_llm(llm, prompt).strip()
    except Exception:
        logger.exception("narrative rewrite failed; keeping the extractive narrative")
        return ctx
    if not text:
        logger.warning("narrative rewrite was empty; keeping the extractive narrative")
        return ctx
    tokens = count(text)
    if tokens > ctx.budget:
        logger.warning("narrative rewrite has %d tokens, over the budget of %d; keeping the extractive one",
                       tokens, ctx.budget)
        return ctx
    return replace(ctx, text=text, tokens=tokens)
