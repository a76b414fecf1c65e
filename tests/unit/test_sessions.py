"""`SessionIds` / the partition's sessions against the id-dicts they replace (random operations)."""

from __future__ import annotations

import random

import pytest

from shared_core.store.memory._sessions import SessionIds
from shared_core.store.memory.backend import InProcessBackend


@pytest.mark.parametrize("seed", range(20))
def test_session_ids_behave_as_an_ordered_id_dict(seed: int) -> None:
    rng = random.Random(seed)
    model: dict[str, None] = {}
    ids = SessionIds()
    for step in range(rng.choice((20, 200, 2000))):
        roll = rng.random()
        if roll < 0.55 or not model:
            node_id = f"n{step}" if rng.random() < 0.9 or not model else rng.choice([*list(model), f"n{step}"])
            if node_id in model:
                continue  # a session never holds an id twice (the caller's guarantee)
            model[node_id] = None
            ids.append(node_id)
        elif roll < 0.9:
            node_id = rng.choice(list(model)) if rng.random() < 0.7 else next(reversed(model))
            del model[node_id]
            ids.discard(node_id)
        else:  # a removed id comes back
            gone = [f"n{k}" for k in range(step) if f"n{k}" not in model]
            if gone:
                back = rng.choice(gone)
                model[back] = None
                ids.append(back)
        assert len(ids) == len(model)
        if step % 17 == 0 or len(model) < 4:
            assert list(ids) == list(model)
            assert list(reversed(ids)) == list(reversed(model))
            n = rng.randrange(0, len(model) + 3)
            assert ids.latest(n) == list(reversed(model))[:n]
            probe = f"n{rng.randrange(step + 1)}"
            assert (probe in ids) == (probe in model)
    assert list(ids) == list(model)


@pytest.mark.parametrize("seed", range(6))
def test_partition_tracks_untracks_and_reorders_like_id_dicts(seed: int) -> None:
    rng = random.Random(seed)
    part = InProcessBackend(dim=4).partition("ns", create=True)
    assert part is not None
    model: dict[str | None, dict[str, None]] = {}
    stamps: dict[str, float] = {}
    for step in range(1500):
        roll = rng.random()
        session = rng.choice(["a", "b", None, f"s{step % 7}"])
        if roll < 0.6:
            node_id, ts = f"n{step}", float(rng.randrange(50))
            model.setdefault(session, {})[node_id] = None
            stamps[node_id] = ts
            if rng.random() < 0.5:
                part.track(node_id, session, ts)
            else:
                part.track_many([node_id], [session], [ts])
        elif roll < 0.9:
            tracked = [(s, i) for s, ids in model.items() for i in ids]
            if rng.random() < 0.2 or not tracked:  # never tracked (a write rolled back early)
                part.untrack(f"x{step}", session, 1.0)
                continue
            s, node_id = rng.choice(tracked)
            del model[s][node_id]
            if not model[s]:
                del model[s]
            part.untrack(node_id, s, stamps.pop(node_id))
        elif model:  # compression moves an id to the front of its session
            s = rng.choice(list(model))
            order = list(model[s])
            order.insert(0, order.pop(rng.randrange(len(order))))
            model[s] = dict.fromkeys(order)
            part.sessions[s] = dict.fromkeys(order)
        if step % 50 == 0:
            assert {s: list(ids) for s, ids in part.sessions.items()} == {s: list(ids) for s, ids in model.items()}
            for s, ids in model.items():
                assert part.latest(s, 3) == list(reversed(ids))[:3]
    assert list(part.sessions) == list(model)
    assert sorted(part.between(0.0, 100.0)) == sorted(stamps)
