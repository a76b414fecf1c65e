"""``make demo``: a scripted, multi-session conversation flowing through the memory.

No LLM and no network: the assistant's replies are scripted, the embedder is the bundled MiniLM
model and the clock is moved by hand between sessions. At each user turn the demo shows what the
memory recalls for it (with scores and the paths that found each memory), the context block an
LLM would receive under a token budget, and what was remembered; at the end, the statistics.

The user's identity turn and the allergy are pinned by the script (``"pinned": true`` in
``demo_conversation.json``), as an application pins what it must never forget: the capacity cap
evicts the weakest unpinned memories, never these.
"""

from __future__ import annotations

import argparse
import json
import textwrap
import time
from importlib import resources
from typing import Any

from ..atlas import ElasticMemoryAtlas
from ..values.clock import ManualClock, to_epoch
from ..values.config import AtlasConfig

__all__ = ["main", "run_demo"]

RULE = "─" * 78
_WRAP: dict[str, Any] = {"width": 78, "subsequent_indent": "    ", "break_on_hyphens": False}


def _load_script() -> dict[str, Any]:
    raw = (resources.files("shared_core") / "demo_conversation.json").read_text(encoding="utf-8")
    script: dict[str, Any] = json.loads(raw)
    return script


def _indent(text: str, prefix: str = "    │ ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def run_demo(*, token_budget: int = 160, top_k: int = 3, style: str = "bullet", max_nodes: int = 30) -> None:
    """Play the scripted conversation and print what the memory does at each step."""
    script = _load_script()
    user = script["user"]
    clock = ManualClock(to_epoch(script["sessions"][0]["date"]))
    config = AtlasConfig(max_nodes=max_nodes, half_life=14 * 86_400.0, cross_session=True, working_memory=4)
    atlas = ElasticMemoryAtlas(config=config, clock=clock)
    labels: dict[str, str] = {}
    started = time.perf_counter()
    print(RULE)
    print(f"Elastic Atlas demo: {script['title']}")
    print(f"namespace={user!r}  budget={token_budget} tokens  style={style!r}  max_nodes={max_nodes}")
    print(textwrap.fill(
        "The user's lines and the assistant's replies are scripted: no LLM runs here, so the replies do "
        "not come from the memory. What the demo shows is the memory itself, at each user turn:", width=78))
    print(textwrap.fill(
        f"  recalled: the top {top_k} memories `retrieve` finds for the turn, from any session, with their "
        "score, weight w and the paths that found them (read-only here).", **_WRAP))
    print(textwrap.fill(
        f"  context: what `build_context` hands the LLM within {token_budget} tokens: the session's latest "
        "turns first, then the best recalled memories that still fit. It can hold more than the recalled top "
        f"{top_k}, or leave some out: a memory already among the latest turns is not repeated, and what does "
        "not fit the budget is left out (counted).", **_WRAP))
    print(textwrap.fill(
        "  remembered: the turn as stored. Pinned memories (the user's identity, the allergy) are never "
        f"evicted when the atlas reaches its cap of {max_nodes}.", **_WRAP))
    print(RULE)
    for session in script["sessions"]:
        clock.set(to_epoch(session["date"]))
        print(f"\n══ session {session['id']} · {session['date'][:10]} ══")
        for turn in session["turns"]:
            clock.advance(minutes=2)
            said = turn["user"]
            print(f"\n  user › {said}")
            hits = atlas.retrieve(said, namespace=user, session_id=session["id"], top_k=top_k,
                                  cross_session=True, reinforce=False)
            if hits:
                print("    recalled:")
                for hit in hits:
                    where = f" (session {hit.node.session_id})" if hit.other_session else ""
                    print(f"      {hit.score:5.3f}  w={hit.components['weight']:.2f}  "
                          f"[{'+'.join(hit.paths)}] {textwrap.shorten(hit.node.content, 70)}{where}")
            ctx = atlas.build_context(said, namespace=user, session_id=session["id"], token_budget=token_budget,
                                      style=style, cross_session=True)
            print(f"    context for the LLM ({ctx.tokens}/{token_budget} tokens, {len(ctx.memories)} memories, "
                  f"{len(ctx.dropped)} left out):")
            print(_indent(ctx.text))
            if "update" in turn and turn["update"] in labels:
                node = atlas.update_memory(labels[turn["update"]], said, session_id=session["id"])
                print(f"    remembered: new version {node.id[:8]} supersedes {labels[turn['update']][:8]} "
                      "(the old one is kept as history)")
            else:
                node = atlas.add_memory(said, namespace=user, session_id=session["id"],
                                        pinned=bool(turn.get("pinned", False)),
                                        importance=float(turn.get("importance", 1.0)),
                                        metadata={"role": "user"})
                pin = " (pinned)" if node.pinned else ""
                print(f"    remembered: user turn {node.id[:8]}{pin}")
            if "label" in turn:
                labels[turn["label"]] = node.id
            atlas.add_memory(f"Assistant: {turn['assistant']}", namespace=user, session_id=session["id"],
                             importance=0.5, metadata={"role": "assistant"})
            print(f"  assistant (scripted) › {turn['assistant']}")
        faded = atlas.end_session(session["id"], namespace=user, mode="fade", fade_factor=0.8)
        print(f"\n  (session ended: {faded} memories faded by x0.8; next session later)")
    print("\n" + RULE)
    print("History of the milk preference (nothing is overwritten):")
    for version in atlas.history(labels["milk"]):
        state = "current" if version.valid_to is None else "superseded"
        print(f"  - {version.content}  [{state}]")
    print(RULE)
    print("Atlas statistics:")
    print(_indent(atlas.stats().as_table(), "  "))
    evictions = atlas.events.events(kind="evict")
    if evictions:
        print(f"Evicted under the cap of {max_nodes} memories (weakest first; pinned never):")
        for event in evictions[:6]:
            print(f"  - {textwrap.shorten(str(event.data.get('content', '')), 60)}  ({event.reason})")
    print(RULE)
    print(f"done in {time.perf_counter() - started:.1f} s, no LLM and no network")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--budget", type=int, default=160, help="token budget of each context block")
    parser.add_argument("--style", choices=["timeline", "bullet", "narrative"], default="bullet")
    parser.add_argument("--max-nodes", type=int, default=30, help="capacity of the atlas")
    args = parser.parse_args(argv)
    run_demo(token_budget=args.budget, style=args.style, max_nodes=args.max_nodes)


if __name__ == "__main__":
    main()
