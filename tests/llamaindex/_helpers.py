"""Helpers for the LlamaIndex tests: a scripted conversation and an atlas with a per-turn clock."""

from __future__ import annotations

FACT = "My cat is called Pixel and she loves sardines."
QUESTION = "What is my cat called?"
_TOPICS = ["the weather in Paris", "a new jazz album", "sourdough baking", "marathon training",
           "the history of Rome", "learning Portuguese", "a broken bicycle chain", "houseplants",
           "chess openings", "a trip to Norway", "solar panels", "the stock market"]


def filler(turn: int) -> str:
    """A user message of turn ``turn`` that has nothing to do with the fact."""
    return f"Turn {turn}: tell me something about {_TOPICS[turn % len(_TOPICS)]}, please, with details."

