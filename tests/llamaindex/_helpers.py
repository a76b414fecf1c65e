"""Helpers for the LlamaIndex tests: a scripted conversation and an atlas with a per-turn clock."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from pydantic.warnings import PydanticDeprecationWarning

FACT = "My cat is called Pixel and she loves sardines."
QUESTION = "What is my cat called?"
_TOPICS = ["the weather in Paris", "a new jazz album", "sourdough baking", "marathon training",
           "the history of Rome", "learning Portuguese", "a broken bicycle chain", "houseplants",
           "chess openings", "a trip to Norway", "solar panels", "the stock market"]


def filler(turn: int) -> str:
    """A user message of turn ``turn`` that has nothing to do with the fact."""
    return f"Turn {turn}: tell me something about {_TOPICS[turn % len(_TOPICS)]}, please, with details."


@contextmanager
def quiet_agent_construction() -> Iterator[None]:
    """Build LlamaIndex agents without failing on pydantic's deprecation warnings.

    ``workflows.Workflow.__init__`` scans the agent with ``inspect.getmembers``, which touches
    pydantic's deprecated ``__fields__``/``model_computed_fields`` attributes; the warnings are
    attributed to ``inspect`` and are the only ones silenced here.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=PydanticDeprecationWarning, module="inspect")
        yield
