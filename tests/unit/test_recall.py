"""Each recall path, the fusion and the graph walk, on small hand-built memories with a known answer."""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from shared_core import AtlasConfig, ElasticMemoryAtlas, InvalidInputError, ManualClock, NamespaceViolationError

Make = Callable[..., ElasticMemoryAtlas]
FILLER = ["The weather was grey all afternoon", "We talked about the football results",
          "Lunch was a cheese sandwich", "The train was ten minutes late",
          "She repainted the kitchen walls", "He is learning to juggle three balls"]


def ts(day: str) -> float:
    return datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()


def ids(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.node.id for h in hits]


def test_vector_path_alone_ranks_by_cosine(make_atlas: Make) -> None:
    atlas = make_atlas(keyword_weight=0.0, graph_hops=0)
    for text in FILLER:
        atlas.add_memory(text, namespace="u")
    target = atlas.add_memory("Alice prefers oat milk in her coffee", namespace="u")
    hits = atlas.retrieve("oat milk coffee", namespace="u", top_k=3, reinforce=False)
    assert hits[0].node.id == target.id
    assert "vector" in hits[0].paths and "graph" not in hits[0].paths
    assert hits[0].components["vector"] == pytest.approx(max(h.components["vector"] for h in hits))


def test_keyword_path_finds_rare_words_that_embeddings_blur(make_atlas: Make) -> None:
    atlas = make_atlas(vector_weight=0.0, graph_hops=0)
    for text in FILLER:
        atlas.add_memory(text, namespace="u")
    order = atlas.add_memory("The parcel with order number 48213 arrived", namespace="u")
    hits = atlas.retrieve("where is 48213?", namespace="u", top_k=2, reinforce=False)
    assert hits[0].node.id == order.id
    assert "keyword" in hits[0].paths and hits[0].components["keyword"] > 0


def test_fusion_puts_the_memory_both_paths_agree_on_first(make_atlas: Make) -> None:
    atlas = make_atlas(graph_hops=0)
    for text in FILLER:
        atlas.add_memory(text, namespace="u")
    both = atlas.add_memory("Bob adopted a greyhound named Comet", namespace="u")
    atlas.add_memory("Comet is a bright object in the night sky", namespace="u")
    hits = atlas.retrieve("Bob's greyhound Comet", namespace="u", top_k=3, reinforce=False, explain=True)
    assert hits[0].node.id == both.id
    assert set(hits[0].paths) >= {"vector", "keyword"}
    top = hits[0].components
    assert {"relevance", "weight", "recency", "session", "score", "fused", "rank_vector"} <= set(top)
    assert hits[0].score >= hits[1].score


def test_graph_brings_linked_memories_that_share_no_word_with_the_query(make_atlas: Make) -> None:
    atlas = make_atlas(similar_top=0, link_temporal=False)
    for text in FILLER:
        atlas.add_memory(text, namespace="u")
    cause = atlas.add_memory("Dana slipped on the icy stairs in January", namespace="u")
    effect = atlas.add_memory("She wore a cast for six weeks", namespace="u")
    atlas.link(effect.id, cause.id, relation="caused_by", strength=1.0)
    hits = atlas.retrieve("Dana icy stairs", namespace="u", top_k=4, reinforce=False)
    assert ids(hits)[0] == cause.id
    linked = next(h for h in hits if h.node.id == effect.id)
    assert "graph" in linked.paths and linked.components["graph"] > 0

    flat = make_atlas(similar_top=0, link_temporal=False, graph_hops=0)
    assert all("graph" not in h.paths for h in flat.retrieve("anything", namespace="u"))


def test_activation_decays_per_hop_and_stops_at_the_hop_limit(make_atlas: Make) -> None:
    def chain(atlas: ElasticMemoryAtlas) -> list[str]:
        for text in FILLER:
            atlas.add_memory(text, namespace="u")
        nodes = [atlas.add_memory(t, namespace="u") for t in (
            "The quarterly zeppelin report is due", "Remember the blue folder", "Printer on floor two",
            "Ask Kim for toner")]
        for a, b in itertools.pairwise(nodes):
            atlas.link(a.id, b.id, relation="part_of", strength=1.0)
        return [n.id for n in nodes]

    def graph_of(hops: int) -> dict[str, float]:
        atlas = make_atlas(similar_top=0, link_temporal=False, graph_hops=hops, graph_hop_decay=0.5)
        nodes = chain(atlas)
        hits = {h.node.id: h for h in atlas.retrieve("zeppelin report", namespace="u", top_k=20, reinforce=False)}
        assert hits[nodes[0]].components["relevance"] == max(h.components["relevance"] for h in hits.values())
        return {name: hits[n].components.get("graph", 0.0) if n in hits else 0.0
                for name, n in zip(("head", "one", "two", "three"), nodes, strict=True)}

    two_hops, one_hop = graph_of(2), graph_of(1)
    assert two_hops["one"] > two_hops["two"] > 0  # one hop from the match, then two
    assert two_hops["two"] > one_hop["two"]  # the second hop is what reached it from the match


def test_neighbouring_turns_come_along(make_atlas: Make) -> None:
    atlas = make_atlas(similar_top=0)
    turns = ["Ana: How was the trip?", "Ben: Great, we finally saw the aurora in Tromso!",
             "Ana: Wow, what did it look like?", "Ben: Green curtains dancing over the fjord.",
             *FILLER]
    nodes = atlas.add_memories(turns, namespace="u", session_id="s1")
    hits = atlas.retrieve("aurora Tromso", namespace="u", top_k=4, reinforce=False)
    assert ids(hits)[0] == nodes[1].id
    assert {nodes[0].id, nodes[2].id} <= set(ids(hits))  # the question and the follow-up


def test_relation_weights_decide_what_flows(make_atlas: Make) -> None:
    atlas = make_atlas(similar_top=0, link_temporal=False,
                       relation_weights=(("caused_by", 1.0), ("related_to", 0.0)))
    for text in FILLER:
        atlas.add_memory(text, namespace="u")
    seed = atlas.add_memory("The basement flooded after the storm", namespace="u")
    caused = atlas.add_memory("We bought a new pump", namespace="u")
    related = atlas.add_memory("Insurance forms are in the drawer", namespace="u")
    atlas.link(caused.id, seed.id, relation="caused_by")
    atlas.link(related.id, seed.id, relation="related_to")
    hits = {h.node.id: h for h in atlas.retrieve("basement flooded", namespace="u", top_k=20, reinforce=False)}
    assert "graph" in hits[caused.id].paths
    assert related.id not in hits or "graph" not in hits[related.id].paths


def test_recent_window_surfaces_the_latest_turns_of_the_session(make_atlas: Make) -> None:
    atlas = make_atlas(recency_window=2, recent_weight=1.0)
    for text in FILLER:
        atlas.add_memory(text, namespace="u", session_id="s1")
    last = atlas.add_memory("Ok, see you tomorrow", namespace="u", session_id="s1")
    hits = atlas.retrieve("football results", namespace="u", session_id="s1", top_k=3, reinforce=False)
    recent = next(h for h in hits if h.node.id == last.id)
    assert "recent" in recent.paths


def test_a_date_in_the_query_selects_memories_of_that_day(make_atlas: Make) -> None:
    atlas = make_atlas(graph_hops=0)
    may = atlas.add_memory("We went hiking in the hills", namespace="u", timestamp=ts("2023-05-09T10:00"))
    atlas.add_memory("We went hiking by the lake", namespace="u", timestamp=ts("2023-06-20T10:00"))
    atlas.add_memory("We went hiking near the coast", namespace="u", timestamp=ts("2023-07-02T10:00"))
    hits = atlas.retrieve("Where did we go hiking on 9 May, 2023?", namespace="u", top_k=3, reinforce=False)
    assert hits[0].node.id == may.id and "time" in hits[0].paths
    assert all("time" not in h.paths for h in hits[1:])


def test_a_month_without_year_moves_back_to_the_latest_year_with_memories(make_atlas: Make) -> None:
    atlas = make_atlas(graph_hops=0)  # the clock is in November 2023
    old_may = atlas.add_memory("The garden party was lovely", namespace="u", timestamp=ts("2021-05-15"))
    atlas.add_memory("The garden party was rained out", namespace="u", timestamp=ts("2021-08-15"))
    hits = atlas.retrieve("the garden party in May", namespace="u", top_k=2, reinforce=False)
    assert hits[0].node.id == old_may.id and "time" in hits[0].paths


def test_relative_cues_count_from_the_newest_memory_in_archive_mode(clock: ManualClock) -> None:
    from shared_core import HashingEmbedder

    def build(config: AtlasConfig) -> tuple[ElasticMemoryAtlas, str]:
        atlas = ElasticMemoryAtlas(config=config, embedder=HashingEmbedder(dim=64), clock=clock)
        atlas.add_memory("Planted tomatoes in the yard", namespace="u", timestamp=ts("2021-03-01"))
        late = atlas.add_memory("Planted basil in the yard", namespace="u", timestamp=ts("2021-06-10"))
        atlas.add_memory("Planted roses in the yard", namespace="u", timestamp=ts("2021-06-14"))
        return atlas, late.id

    archive, late = build(AtlasConfig.archive(graph_hops=0))
    hits = archive.retrieve("what did I plant last week", namespace="u", top_k=3, reinforce=False)
    assert {h.node.id for h in hits if "time" in h.paths} >= {late}
    live, _ = build(AtlasConfig(graph_hops=0))  # two years later by the clock: nothing was last week
    assert all("time" not in h.paths for h in live.retrieve("what did I plant last week", namespace="u"))


def test_filters_apply_to_every_path_including_the_graph(make_atlas: Make) -> None:
    atlas = make_atlas(similar_top=0, link_temporal=False)
    keep = atlas.add_memory("Project Lynx kickoff notes", namespace="u", metadata={"type": "meeting"})
    hidden = atlas.add_memory("Lynx budget spreadsheet", namespace="u", metadata={"type": "file"})
    atlas.link(keep.id, hidden.id, relation="part_of")
    hits = atlas.retrieve("Lynx", namespace="u", filters={"type": "meeting"}, top_k=5, reinforce=False)
    assert ids(hits) == [keep.id]
    hits = atlas.retrieve("Lynx", namespace="u", filters={"type": ["meeting", "file"]}, reinforce=False)
    assert set(ids(hits)) == {keep.id, hidden.id}
    when = {"$time": {"gte": "2000-01-01", "lt": "2001-01-01"}}
    assert atlas.retrieve("Lynx", namespace="u", filters=when, reinforce=False) == []


def test_session_scope_and_cross_session_labels(make_atlas: Make) -> None:
    atlas = make_atlas(graph_hops=0)
    mine = atlas.add_memory("Carol likes green tea", namespace="u", session_id="a")
    other = atlas.add_memory("Carol likes green tea with honey", namespace="u", session_id="b")
    scoped = atlas.retrieve("green tea", namespace="u", session_id="a", reinforce=False)
    assert ids(scoped) == [mine.id]
    wide = atlas.retrieve("green tea", namespace="u", session_id="a", cross_session=True, reinforce=False)
    labelled = {h.node.id: h for h in wide}
    assert labelled[other.id].other_session and not labelled[mine.id].other_session
    assert labelled[other.id].components["session"] == atlas.config.cross_session_penalty


def test_expired_and_superseded_memories_are_history(make_atlas: Make, clock: ManualClock) -> None:
    atlas = make_atlas()
    brief = atlas.add_memory("The door code is 4471", namespace="u", ttl=60)
    old = atlas.add_memory("The wifi password is tulip", namespace="u")
    new = atlas.update_memory(old.id, "The wifi password is orchid")
    clock.advance(120)
    current = ids(atlas.retrieve("door code wifi password", namespace="u", top_k=10, reinforce=False))
    assert new.id in current and old.id not in current and brief.id not in current
    everything = ids(atlas.retrieve("door code wifi password", namespace="u", top_k=10, reinforce=False,
                                    include_history=True))
    assert {old.id, new.id, brief.id} <= set(everything)


def test_a_walk_never_leaves_its_namespace(make_atlas: Make) -> None:
    atlas = make_atlas()
    mine = atlas.add_memory("Eve's passport number is X123", namespace="eve")
    theirs = atlas.add_memory("Mallory wants Eve's passport number", namespace="mallory")
    with pytest.raises(NamespaceViolationError):
        atlas.link(mine.id, theirs.id, relation="related_to")
    with pytest.raises(NamespaceViolationError):
        atlas.add_memory("sneaky", namespace="mallory", links_to=[mine.id])
    for _ in range(3):
        atlas.add_memory("Eve's passport number renewal", namespace="mallory")
    for ns, foreign in (("eve", theirs.id), ("mallory", mine.id)):
        hits = atlas.retrieve("Eve passport number", namespace=ns, top_k=50, reinforce=False)
        assert foreign not in ids(hits) and all(h.node.namespace == ns for h in hits)


def test_presets_rank_too(make_atlas: Make) -> None:
    for preset in (AtlasConfig.rrf(), AtlasConfig.linear(), AtlasConfig.archive()):
        atlas = make_atlas(**{f: getattr(preset, f) for f in ("fusion", "scoring", "vector_weight",
                                                              "keyword_weight", "time_reference")})
        for text in FILLER:
            atlas.add_memory(text, namespace="u")
        target = atlas.add_memory("Frank's bicycle has a red bell", namespace="u")
        assert atlas.retrieve("Frank's bicycle bell", namespace="u", top_k=1, reinforce=False)[0].node.id == target.id


def test_top_k_does_not_change_the_order(make_atlas: Make) -> None:
    """Up to candidate_min / candidate_ratio (10) every top_k looks equally wide; past it, as wide
    as the config allows once top_k reaches candidate_k / candidate_ratio."""
    atlas = make_atlas()
    atlas.add_memories([f"Note {i}: {text}" for i, text in enumerate(FILLER * 5)], namespace="u",
                       session_id="s")
    three = ids(atlas.retrieve("train kitchen walls", namespace="u", top_k=3, reinforce=False))
    ten = ids(atlas.retrieve("train kitchen walls", namespace="u", top_k=10, reinforce=False))
    assert ten[:3] == three
    wide = ids(atlas.retrieve("train kitchen walls", namespace="u", top_k=200, reinforce=False))
    widest = ids(atlas.retrieve("train kitchen walls", namespace="u", top_k=300, reinforce=False))
    assert widest[:200] == wide


def test_recall_looks_as_wide_as_top_k_asks(make_atlas: Make) -> None:
    """The pools follow top_k (candidate_ratio per hit, candidate_k at most), so a top-10 lookup
    does not pay for a 200-candidate search; a request's candidate_k widens it."""
    from shared_core.engine.recall import breadth

    config = AtlasConfig(seed_ratio=1.0)
    assert breadth(1, config) == breadth(10, config) == (40, 10)
    assert breadth(25, config) == (100, 25)
    assert breadth(1000, config) == (1000, 100)  # never fewer candidates than asked for
    assert breadth(10, config, candidate_k=60) == (60, 10)
    assert breadth(10, AtlasConfig(candidate_min=8, candidate_ratio=2.0, seed_ratio=1.0)) == (20, 10)
    assert breadth(10, AtlasConfig()) == (40, 10)  # a small lookup walks from as many seeds as hits
    assert breadth(25, AtlasConfig()) == (100, 25)
    assert breadth(40, AtlasConfig()) == (160, 80)  # a wide one (seed_min_k) from twice as many


def test_seed_ratio_sets_the_walks_seeds_apart_from_top_k() -> None:
    """seeds = min(graph_seeds, ceil(ratio * wanted)), ratio = seed_ratio from seed_min_k on, else 1:
    graph_seeds binds only past it."""
    from shared_core.engine.recall import breadth

    assert breadth(10, AtlasConfig(seed_ratio=4.0, seed_min_k=0)) == (40, 40)
    assert breadth(3, AtlasConfig(seed_ratio=2.5, seed_min_k=0)) == (40, 25)  # wanted is 10 up to candidate_min / ratio
    assert breadth(39, AtlasConfig(seed_ratio=4.0)) == (156, 39)  # below seed_min_k: as many seeds as hits
    assert breadth(40, AtlasConfig(seed_ratio=4.0)) == (160, 100)  # graph_seeds caps it
    assert breadth(50, AtlasConfig(seed_ratio=4.0, graph_seeds=200)) == (200, 200)
    assert breadth(100, AtlasConfig(seed_ratio=1.0, graph_seeds=200)) == (200, 100)  # top_k caps it
    assert breadth(100, AtlasConfig(seed_ratio=1.5, graph_seeds=200)) == (200, 150)
    with pytest.raises(InvalidInputError, match="seed_min_k"):
        AtlasConfig(seed_min_k=-1)
    for bad in (0, 0.0, -1.0, math.inf, True, "2"):
        with pytest.raises(InvalidInputError, match="seed_ratio"):
            AtlasConfig(seed_ratio=bad)  # type: ignore[arg-type]


def test_the_walk_starts_from_seed_ratio_times_the_wanted_candidates(make_atlas: Make,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The recall hands `Partition.expand` the best ceil(seed_ratio * wanted) candidates, best
    first, so a larger ratio walks from the same seeds and more after them; below seed_min_k the
    ratio is 1."""
    atlas = make_atlas()
    atlas.add_memories([f"Note {i}: {text}" for i, text in enumerate(FILLER * 10)], namespace="u",
                       session_id="s")
    part = atlas.backend.partition("u")
    assert part is not None
    seen: list[list[str]] = []
    expand = type(part).expand

    def spy(self, seeds, walk, allowed):  # type: ignore[no-untyped-def]
        seen.append(list(seeds))
        return expand(self, seeds, walk, allowed)

    monkeypatch.setattr(type(part), "expand", spy)
    walked = {}
    for ratio in (1.0, 3.0):
        view = ElasticMemoryAtlas(config=atlas.config.replace(seed_ratio=ratio, seed_min_k=10), embedder=atlas.embedder,
                                  clock=atlas.clock, backend=atlas.backend)
        seen.clear()
        assert len(view.retrieve("train kitchen walls weather", namespace="u", top_k=10, reinforce=False)) == 10
        walked[ratio] = seen[-1]
    assert len(walked[1.0]) == 10 and len(walked[3.0]) == 30
    assert walked[3.0][:10] == walked[1.0]
    narrow = ElasticMemoryAtlas(config=atlas.config.replace(seed_ratio=3.0, seed_min_k=11), embedder=atlas.embedder,
                                clock=atlas.clock, backend=atlas.backend)
    seen.clear()
    narrow.retrieve("train kitchen walls weather", namespace="u", top_k=10, reinforce=False)
    assert seen[-1] == walked[1.0]


def test_reinforce_on_and_off(make_atlas: Make) -> None:
    atlas = make_atlas()
    node = atlas.add_memory("Grace collects vintage stamps", namespace="u")
    atlas.retrieve("vintage stamps", namespace="u", reinforce=False)
    assert atlas.get(node.id).access_count == 0
    atlas.retrieve("vintage stamps", namespace="u")
    again = atlas.get(node.id)
    assert again.access_count == 1 and again.weight > node.weight


def test_lazy_ranking_equals_scoring_every_candidate(make_atlas: Make) -> None:
    """`_rank` scores memories best bound first and stops early; it resolves graph-only memories
    in batches. Its answer must be what scoring every candidate gives, with far fewer resolved."""
    from shared_core.engine.recall import RecallRequest, _rank, _scorer

    atlas = make_atlas()
    atlas.add_memories([f"Note {i}: {text}" for i, text in enumerate(FILLER * 20)], namespace="u",
                       session_id="s")
    part = atlas.backend.partition("u")
    assert part is not None
    nodes = list(part.graph.nodes())
    exact = {n.id: (i % 17) / 17 for i, n in enumerate(nodes[:60])}
    graph_only = {n.id: (i % 23) / 23 for i, n in enumerate(nodes[60:])}
    bounds = {i: min(1.0, r + 0.2) for i, r in graph_only.items()}
    resolved: list[str] = []

    def resolve(batch: list[str], ahead: list[str]) -> dict[str, float]:
        assert not ahead  # in process: nothing named ahead
        resolved.extend(batch)
        return {i: graph_only[i] for i in batch}

    req = RecallRequest(query="q", vector=atlas.embedder.embed(["q"])[0], now=atlas.clock.now(), top_k=7)
    got = _rank(part, exact, bounds, resolve, req, atlas.config, lambda _: True)
    everything = {**exact, **graph_only}
    score = _scorer(part, req, atlas.config)
    scored = sorted(((f["score"], n.timestamp, n.id) for n in nodes if (f := score(n, everything[n.id])) is not None),
                    key=lambda t: (-t[0], -t[1], t[2]))
    assert [(s, n.id) for s, n, _ in got] == [(s, i) for s, _, i in scored[:7]]
    assert 0 < len(resolved) < len(graph_only) / 2


@pytest.mark.parametrize("seed", range(24))
def test_lazy_ranking_equals_scoring_every_candidate_on_random_bounds(make_atlas: Make, seed: int) -> None:
    """`_rank` on random relevances with ties, bounds from exact to loose, some memories not
    allowed and top_k from 1 to more than there are: the top_k of scoring every allowed
    candidate, whatever order the pending ones are resolved in."""
    from shared_core.engine.recall import RecallRequest, _rank, _scorer

    rng = random.Random(seed)
    atlas = make_atlas()
    atlas.add_memories([f"Note {i}: {text}" for i, text in enumerate(FILLER * 6)], namespace="u",
                       session_id="s")
    part = atlas.backend.partition("u")
    assert part is not None
    for node in list(part.graph.nodes()):  # weights up to the cap: scores above the relevance
        part.graph.put_node(dataclasses.replace(node, weight=rng.uniform(0.2, 3.0)))
    nodes = list(part.graph.nodes())
    rng.shuffle(nodes)
    cut = rng.randrange(len(nodes) + 1)
    levels = [rng.random() for _ in range(12)]  # a dozen values: ties
    exact = {n.id: rng.choice(levels) for n in nodes[:cut]}
    graph_only = {n.id: rng.choice(levels) for n in nodes[cut:]}
    bounds = {i: min(1.0, r + rng.choice([0.0, 0.0, 0.05, 0.5])) for i, r in graph_only.items()}
    barred = {n.id for n in nodes if rng.random() < 0.1}
    resolved: list[str] = []

    def resolve(batch: list[str], ahead: list[str]) -> dict[str, float]:
        assert not set(batch) & set(resolved) and not set(batch) & barred and not ahead
        resolved.extend(batch)
        return {i: graph_only[i] for i in batch}

    top_k = rng.choice([1, 3, 10, 40, len(nodes) + 5])
    req = RecallRequest(query="q", vector=atlas.embedder.embed(["q"])[0], now=atlas.clock.now(), top_k=top_k)
    got = _rank(part, exact, bounds, resolve, req, atlas.config, lambda i: i not in barred)
    everything = {**exact, **graph_only}
    score = _scorer(part, req, atlas.config)
    scored = sorted(((f["score"], n.timestamp, n.id) for n in nodes
                     if n.id not in barred and (f := score(n, everything[n.id])) is not None),
                    key=lambda t: (-t[0], -t[1], t[2]))
    assert [(s, n.id) for s, n, _ in got] == [(s, i) for s, _, i in scored[:top_k]]


def test_a_graph_only_memory_is_scaled_against_the_candidates_best() -> None:
    """A memory reached only through the graph gets its cosine's share on the same scale as the
    candidates, so a cosine below the floor gives nothing, whatever the other graph-only ones."""
    from shared_core.formulas.scoring import pool_normalize, scale_to

    pool = {"a": 0.8, "b": 0.5, "c": 0.2}
    assert all(scale_to(v, 0.2, 0.8) == pytest.approx(s) for v, s in
               zip(pool.values(), pool_normalize(pool).values(), strict=True))
    assert scale_to(0.05, 0.2, 0.8) == 0.0 and scale_to(0.95, 0.2, 0.8) == 1.0


def test_recall_of_nothing_is_empty(make_atlas: Make) -> None:
    from shared_core.engine.recall import RecallRequest, recall

    atlas = make_atlas()
    atlas.add_memories(FILLER, namespace="u")
    part = atlas.backend.partition("u")
    assert part is not None
    req = RecallRequest(query="kitchen", vector=atlas.embedder.embed(["kitchen"])[0], now=atlas.clock.now(), top_k=0)
    assert recall(part, req, atlas.config) == []


@pytest.mark.parametrize("seed", range(24))
def test_one_pass_fusion_equals_the_composition_of_scoring_functions(seed: int) -> None:
    """`fuse` computes the usual case on arrays; it must give exactly (not approximately)
    what `_fuse_signals`, the composition of `scoring`'s documented functions, gives."""
    import random

    from shared_core.formulas._fusion import _fuse_signals, cosine_scale, fuse

    rng = random.Random(seed)
    ids = [f"m{i}" for i in range(rng.randint(1, 60))]
    cosine = {i: rng.uniform(-0.2, 0.9) for i in ids}
    vector_ids = rng.sample(ids, rng.randint(1, len(ids)))
    raw: dict[str, dict[str, float]] = {"vector": {i: cosine[i] for i in vector_ids}}
    if rng.random() < 0.8:
        raw["keyword"] = {i: rng.choice([0.0, rng.uniform(0, 9)]) for i in rng.sample(ids, rng.randint(0, len(ids)))}
    for path in ("time", "recent"):
        if rng.random() < 0.4:
            raw[path] = {i: rng.uniform(0, 1) for i in rng.sample(ids, rng.randint(0, len(ids)))}
    floor = rng.choice([None, min(cosine.values()), rng.uniform(-0.2, 0.9)])
    scale = cosine_scale(raw["vector"], floor)
    if rng.random() < 0.1:
        scale = (scale[1], scale[1])  # no spread: the vector signal is empty
    weights = {"vector": rng.choice([0.0, 1.0, 0.7]), "keyword": rng.choice([0.0, 0.5]),
               "time": rng.choice([0.0, 0.5]), "recent": rng.choice([0.0, 0.3])}
    config = AtlasConfig()
    fast = fuse(raw, cosine, scale, weights, config)
    assert fast == _fuse_signals(raw, cosine, scale, weights, config)
    assert list(fast[0]) == list(cosine)


def test_rounding_on_arrays_equals_pythons_round() -> None:
    """`rounded` must give exactly Python's ``round(v, 12)``, near halves and edge values too."""
    import numpy as np

    from shared_core.formulas._fusion import rounded

    rng = np.random.default_rng(7)
    ties = (rng.integers(0, 10**12, 20_000) + 0.5) / 1e12  # scaled values at a half, give or take an ulp
    near = (rng.integers(0, 10**12, 20_000) + 0.5 + rng.uniform(-1e-3, 1e-3, 20_000)) / 1e12
    values = np.concatenate([rng.random(50_000), 3 * rng.random(5_000), ties, near,
                             [0.0, -0.0, 1.0, 0.5, 5e-13, -0.3, 2.0 ** 41, 1e300, np.inf, -np.inf]])
    assert rounded(values, 12) == [round(float(v), 12) for v in values]
    assert all(map(math.isnan, rounded(np.array([np.nan]), 12)))


def test_the_walk_weighs_edges_alike_with_or_without_the_stores_weighted_links() -> None:
    """`DictGraphStore.weighted_links` (the walk's fast path) gives what `links` and the relation
    weights give, self-loops and unwalked relations left out, in the same order."""
    import random
    from types import SimpleNamespace

    from shared_core.engine.walk import relation_factors as _relation_factors
    from shared_core.store.base import GraphStoreBase
    from shared_core.store.memory.graph_store import DictGraphStore, NetworkXGraphStore
    from shared_core.values.model import MemoryEdge, MemoryNode, Relation

    rng = random.Random(3)
    config = AtlasConfig(relation_weights=(("before", 1.0), ("after", 1.0), ("similar_to", 0.7),
                                           ("related_to", 0.0), ("caused_by", 0.9)))
    stores = DictGraphStore(), NetworkXGraphStore()
    names = [f"n{i}" for i in range(12)]
    for store in stores:
        for name in names:
            store.put_node(MemoryNode(id=name, content=name, namespace="u"))
    for _ in range(60):
        edge = MemoryEdge(source=rng.choice(names), target=rng.choice(names), relation=rng.choice(list(Relation)),
                          strength=rng.choice([0.3, 1.0, 1.7, rng.random()]))
        for store in stores:
            store.put_edge(edge)
    factors = _relation_factors(config.relation_weights)[1]
    fast, slow = (lambda n, store=store: store.weighted_links(n, factors) for store in stores)
    # the dict store weighs its edges itself; networkx's store takes the contract's default
    assert type(stores[0]).weighted_links is not GraphStoreBase.weighted_links
    assert type(stores[1]).weighted_links is GraphStoreBase.weighted_links

    def same_store(name: str) -> list[tuple[str, float]]:  # the default, on the dict store's links
        return GraphStoreBase.weighted_links(SimpleNamespace(links=stores[0].links), name, factors)  # type: ignore[arg-type]

    for name in [*names, "missing"]:
        assert fast(name) == same_store(name)  # same order too
        assert sorted(fast(name)) == sorted(slow(name))
        assert all(other != name for other, _ in fast(name))


def test_admitting_without_fetching_nodes_answers_as_asking_node_by_node(
        make_atlas: Make, clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """While nothing in a namespace can be out of date, recall admits the candidates its indexes
    return without fetching their nodes (`_admission`'s second value). The answers must be those
    of the node-by-node check, and the shortcut must stop as soon as one memory can expire or
    has been superseded."""
    from shared_core.engine.recall import RecallRequest, _admission
    from shared_core.store.memory.graph_store import DictGraphStore

    atlas = make_atlas()
    atlas.add_memories([f"Note {i}: {text}" for i, text in enumerate(FILLER * 8)], namespace="u", session_id="s")
    part = atlas.backend.partition("u")
    assert part is not None

    def shortcut() -> bool:
        req = RecallRequest(query="q", vector=atlas.embedder.embed(["q"])[0], now=clock.now())
        return _admission(part, req, None, lambda n: n is not None)[1]

    def answers() -> list[list[tuple[str, float, tuple[str, ...]]]]:
        return [[(h.node.id, h.score, h.paths) for h in atlas.retrieve(q, namespace="u", top_k=k, reinforce=False,
                                                                       include_history=history)]
                for q in ("train late", "kitchen walls", "Note 7 football") for k in (1, 5, 30)
                for history in (False, True)]

    assert shortcut()
    fast = answers()
    with monkeypatch.context() as m:  # a store that does not count bounded nodes: asked node by node
        m.setattr(DictGraphStore, "bounded_nodes", property(lambda self: None))
        assert not shortcut() and answers() == fast
    brief = atlas.add_memory("The train strike is only today", namespace="u", ttl=30)
    assert not shortcut()
    clock.advance(60)
    assert brief.id not in ids(atlas.retrieve("train strike today", namespace="u", top_k=10, reinforce=False))
    atlas.forget(brief.id)
    assert shortcut()
    old = next(iter(part.graph.nodes()))
    atlas.update_memory(old.id, "Note 0 corrected")
    assert not shortcut()
    assert old.id not in ids(atlas.retrieve(old.content, namespace="u", top_k=10, reinforce=False))


def test_the_relevance_floor_drops_unrelated_hits_and_none_keeps_them(make_atlas: Make) -> None:
    for floor, expected in ((0.1, 0), (None, 1)):
        atlas = make_atlas(relevance_floor=floor)
        node = atlas.add_memory("the user owns a hamster", namespace="u")
        hits = atlas.retrieve("quantum chromodynamics lattice", namespace="u")
        assert len(hits) == expected
        assert atlas.get(node.id).weight == (node.weight * 1.2 if expected else node.weight)
    with pytest.raises(InvalidInputError, match="relevance_floor"):
        AtlasConfig(relevance_floor=2.0)


def test_a_graph_neighbour_of_a_relevant_hit_still_comes_along(make_atlas: Make) -> None:
    atlas = make_atlas()
    atlas.add_memory("Where should we go in June?", namespace="u", session_id="s")
    answer = atlas.add_memory("Lisbon, the flight leaves on the 12th", namespace="u", session_id="s")
    hits = atlas.retrieve("where should we go", namespace="u", reinforce=False)
    assert answer.id in [h.node.id for h in hits if "graph" in h.paths]


def test_the_ranking_names_the_next_memories_up_to_the_stores_batch(make_atlas: Make,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """`_rank` resolves graph-only memories in batches of ``max(16, top_k)``; a store whose
    `VectorIndex.cosine_batch` is larger (a server: each batch a round trip) is told the next
    ones by bound (``ahead``) up to it, and every store in process (16) is told none: the same
    batches and the same answer."""
    from shared_core.engine.recall import RecallRequest, _rank
    from shared_core.store.memory import vector_index
    from shared_core.store.memory.ann_index import IVFVectorIndex
    from shared_core.store.memory.backend import TieredVectorIndex

    atlas = make_atlas()
    atlas.add_memories([f"Note {i}: {text}" for i, text in enumerate(FILLER * 20)], namespace="u",
                       session_id="s")
    part = atlas.backend.partition("u")
    assert part is not None
    assert {store(8).cosine_batch for store in (vector_index.NumpyVectorIndex, IVFVectorIndex, TieredVectorIndex)} \
        == {part.vectors.cosine_batch} == {16}
    nodes = list(part.graph.nodes())
    exact = {n.id: 0.3 for n in nodes[:10]}
    graph_only = {n.id: (i % 23) / 23 for i, n in enumerate(nodes[10:])}
    bounds = {i: min(1.0, r + 0.5) for i, r in graph_only.items()}

    def ranked(top_k: int) -> tuple[list[tuple[float, str]], list[tuple[list[str], list[str]]]]:
        calls: list[tuple[list[str], list[str]]] = []

        def resolve(batch: list[str], ahead: list[str]) -> dict[str, float]:
            calls.append((batch, ahead))
            return {i: graph_only[i] for i in batch}

        req = RecallRequest(query="q", vector=atlas.embedder.embed(["q"])[0], now=atlas.clock.now(), top_k=top_k)
        got = _rank(part, exact, bounds, resolve, req, atlas.config, lambda _: True)
        return [(s, n.id) for s, n, _ in got], calls

    small, calls = ranked(7)
    assert len(calls) > 1 and max(len(b) for b, _ in calls) == 16 and not any(a for _, a in calls)
    assert max(len(b) for b, _ in ranked(40)[1]) == 40  # top_k above 16
    monkeypatch.setattr(type(part.vectors), "cosine_batch", property(lambda self: 64))
    wide, wide_calls = ranked(7)
    assert wide == small
    assert [b for b, _ in wide_calls] == [b for b, _ in calls]
    batch, ahead = wide_calls[0]
    assert len(batch) + len(ahead) == 64 and not set(ahead) & set(batch)
    later = [i for b, _ in wide_calls[1:] for i in b]
    assert later[:len(ahead)] == ahead  # the next batches, as named
