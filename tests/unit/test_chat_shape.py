"""The shape of real chat traffic (issue 24): `benchmarks/_perturb.py`'s perturbations keep every
question's evidence meaningful, and the atlas neither ranks backchannels ("ok", "lol") nor lets
one cut a context window (`shared_core.formulas.chatter`, `engine.recall`, `engine.neighbours`)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from shared_core import ElasticMemoryAtlas
from shared_core.formulas.chatter import BACKCHANNEL, contentless

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

from _locomo import Conversation, Question, Turn, default_data_path, load_locomo  # noqa: E402
from _perturb import FILLERS, donor_of, fillers, long, split_turns  # noqa: E402

Make = Callable[..., ElasticMemoryAtlas]


def _conv(sample_id: str, speakers: tuple[str, str], sessions: int = 3, per: int = 12) -> Conversation:
    turns = []
    for s in range(1, sessions + 1):
        for i in range(1, per + 1):
            who = speakers[i % 2]
            text = f"{speakers[(i + 1) % 2]}, session {s} turn {i}. It was fun! Did you go? Yes."
            turns.append(Turn(f"D{s}:{i}", s, who, text, "a lake" if i == 3 else None, f"{s} May", 1e9 + s * 86400))
    questions = (Question("q1", 1, frozenset({"D1:3", "D2:5"})), Question("q2", 4, frozenset({"D3:12"})))
    return Conversation(sample_id, tuple(turns), questions, 0)


HOST, DONOR = _conv("host", ("Ann", "Bob")), _conv("donor", ("Cy", "Di"), sessions=2, per=20)


def _ids(conv: Conversation) -> set[str]:
    return {t.dia_id for t in conv.turns}


@pytest.mark.parametrize("perturb", [split_turns, fillers, lambda c: long(c, DONOR)])
def test_a_perturbation_is_deterministic_and_keeps_every_question_and_its_evidence(
        perturb: Callable[[Conversation], Conversation]) -> None:
    out = perturb(HOST)
    assert out == perturb(HOST)
    assert out.questions == HOST.questions and out.sample_id == HOST.sample_id
    assert _ids(out) - {""} == _ids(HOST)  # every evidence turn is there, no new id but the empty one
    kept = [t for t in out.turns if t.dia_id]  # the original turns (or their parts), in order, unmoved
    assert [t.dia_id for t in kept] == sorted([t.dia_id for t in kept], key=[t.dia_id for t in HOST.turns].index)
    by_id = {t.dia_id: t for t in HOST.turns}
    assert all((t.session, t.timestamp, t.speaker) == (by_id[t.dia_id].session, by_id[t.dia_id].timestamp,
                                                        by_id[t.dia_id].speaker) for t in kept)


def test_split_turns_cuts_a_turn_at_its_sentences_into_one_to_three_parts_caption_last() -> None:
    out = split_turns(HOST)
    parts: dict[str, list[Turn]] = {}
    for t in out.turns:
        parts.setdefault(t.dia_id, []).append(t)
    assert {len(p) for p in parts.values()} == {1, 2, 3}
    for t in HOST.turns:
        mine = parts[t.dia_id]
        assert " ".join(p.text for p in mine) == t.text
        assert [p.caption for p in mine] == [None] * (len(mine) - 1) + [t.caption]
    assert split_turns(HOST, seed=1) != out  # the seed is the only source of randomness


def test_fillers_are_backchannels_by_both_speakers_never_evidence() -> None:
    out = fillers(HOST, rate=0.3)
    added = [t for t in out.turns if not t.dia_id]
    assert 0.15 * len(HOST.turns) < len(added) < 0.45 * len(HOST.turns)
    assert {t.text for t in added} <= set(FILLERS) and {t.speaker for t in added} == {"Ann", "Bob"}
    assert all(not (q.evidence & {""}) for q in out.questions)


def test_long_inserts_the_donors_turns_renamed_inside_the_sessions_never_evidence() -> None:
    out = long(HOST, DONOR, factor=1.6)
    added = [t for t in out.turns if not t.dia_id]
    assert len(added) == round(0.6 * len(HOST.turns))
    assert {t.speaker for t in added} <= {"Ann", "Bob"}
    assert not any(re.search(r"\b(Cy|Di)\b", t.text) for t in added)  # names in the text renamed too
    assert {(t.session, t.timestamp) for t in added} <= {(t.session, t.timestamp) for t in HOST.turns}
    with pytest.raises(ValueError, match="another conversation"):
        long(HOST, HOST)
    assert donor_of(HOST, [HOST, DONOR]) is DONOR


@pytest.mark.skipif(not default_data_path().exists(), reason="LoCoMo dev split not present")
def test_real_chat_keeps_every_dev_question_answerable() -> None:
    from robustness import PERTURBATIONS

    pool = load_locomo(default_data_path())
    for conv in pool[:2]:
        out = PERTURBATIONS["real_chat"](conv, pool)
        assert len(out.questions) == len(conv.questions)
        assert all(q.evidence <= _ids(out) for q in out.questions)
        assert len(out.turns) > 2 * len(conv.turns)


# -- the library: backchannels -----------------------------------------------------------------------
@pytest.mark.parametrize("text", ["ok", "Kate: lol", "kate: haha nice", "👍", "Kate: Sooo cool!!", "hahaha",
                                  "oh wow, thanks", "Kate:", "ikr", "yeah me too"])
def test_a_backchannel_is_contentless(text: str) -> None:
    assert contentless(text, {"speaker": "Kate"})


@pytest.mark.parametrize("text", ["Kate: it was great!", "at 5", "Kate: Paris!", "ok [shares a photo of a dog]",
                                  "wait what", "Kate: ok, see you at the gym"])
def test_a_message_with_a_fact_is_not(text: str) -> None:
    assert not contentless(text, {"speaker": "Kate"})
    assert "it" not in BACKCHANNEL and "was" not in BACKCHANNEL


CHAT = ["Ann: Kate, how was your weekend?", "Kate: lol", "Kate: went hiking near the lake with my dog",
        "Ann: ok", "Kate: haha nice", "Ann: did you see the eagle?", "Kate: yeah", "Kate: wow",
        *(f"Kate: {w}" for w in ("ok", "lol", "👍", "sure", "omg", "haha", "yep", "hmm", "ikr", "true")),
        "Ann: my sister baked a cake for the party", "Kate: I started a pottery class on Monday"]


def test_recall_never_ranks_a_backchannel(make_atlas: Make) -> None:
    atlas = make_atlas(graph_hops=0, similar_top=0, relevance_floor=None)
    atlas.add_memories([{"content": c, "session_id": "s1"} for c in CHAT], namespace="c")
    hits = atlas.retrieve("What did Kate say?", namespace="c", top_k=20, reinforce=False)
    assert hits and not [h.node.content for h in hits if contentless(h.node.content)]


def test_a_context_window_steps_over_a_backchannel(make_atlas: Make) -> None:
    atlas = make_atlas(context_neighbours=12, graph_hops=0, similar_top=0)
    atlas.add_memories([{"content": c, "session_id": "s1"} for c in CHAT], namespace="c")
    ctx = atlas.build_context("weekend", namespace="c", token_budget=60, reinforce=False)
    assert ctx.text.splitlines()[2:] == ["Ann: Kate, how was your weekend?", "…",  # "Kate: lol" is not shown
                                         "Kate: went hiking near the lake with my dog"]  # Kate goes on
    assert [m.paths for m in ctx.memories][1:] == [("neighbour",)]


def test_a_backchannel_does_not_seed_the_graph_walk(make_atlas: Make) -> None:
    atlas = make_atlas(graph_hops=1, similar_top=0, context_neighbours=0)
    atlas.add_memories([{"content": c, "session_id": "s1"} for c in
                        ["Kate: I adopted a cat named Tom", "Ann: lovely", "Kate: Tom sleeps all day"]], namespace="c")
    atlas.add_memories([{"content": c, "session_id": "s2"} for c in
                        ["Bob: the parking garage closes at nine", "Kate: ok", "Bob: the bakery sells rye bread"]],
                       namespace="c")
    hits = atlas.retrieve("What did Kate say?", namespace="c", top_k=20, reinforce=False)
    assert any("Tom" in h.node.content for h in hits)
    assert not [h.node.content for h in hits if "Bob" in h.node.content]  # reached from "Kate: ok" alone


RUN = [("Ann", "how was the trip?"), ("Bob", "amazing"), ("Bob", "we saw the aurora"), ("Bob", "twice!"),
       ("Ann", "send pics"), ("Ann", "photos?"), ("Bob", "tomorrow")]


def test_a_timeline_shows_a_run_of_one_speaker_with_one_label_and_stays_within_budget(make_atlas: Make) -> None:
    from shared_core import TiktokenCounter

    atlas = make_atlas(context_neighbours=0, graph_hops=0, similar_top=0, relevance_floor=None)
    atlas.add_memories([{"content": text, "session_id": "s1", "metadata": {"speaker": who}} for who, text in RUN],
                       namespace="c")
    ctx = atlas.build_context("trip aurora twice photos tomorrow amazing pics", namespace="c", token_budget=200,
                              reinforce=False)
    assert ctx.text.splitlines()[2:] == ["Ann: how was the trip?", "Bob: amazing", "we saw the aurora", "twice!",
                                         "Ann: send pics", "photos?", "Bob: tomorrow"]
    counter = TiktokenCounter()
    for budget in range(10, 60):
        small = atlas.build_context("trip aurora twice photos tomorrow amazing pics", namespace="c",
                                    token_budget=budget, reinforce=False)
        assert small.tokens <= budget and counter.count(small.text) == small.tokens


def test_long_diagnosis_finds_the_evidence_beside_an_added_turn() -> None:
    from long_diagnosis import _added_beside

    out = long(HOST, DONOR, factor=1.6)
    turns = out.turns
    beside = _added_beside(turns)
    assert _added_beside(HOST.turns) == set()  # nothing added, nothing beside
    expected = {t.dia_id for i, t in enumerate(turns) if t.dia_id and any(
        0 <= j < len(turns) and turns[j].dia_id == "" and turns[j].session == t.session for j in (i - 1, i + 1))}
    assert beside == expected and beside < _ids(HOST)


def test_long_diagnosis_tells_shown_packed_out_ranked_out_and_missing_evidence(make_atlas: Make) -> None:
    from collections import Counter

    from long_diagnosis import _question_rows, summary

    lines = [f"Kate: I baked a lemon cake number {i} for the party" for i in range(30)] + [
        "Kate: the weather was grey", "Ann: the parking garage closes at nine"]
    atlas = make_atlas(graph_hops=0, similar_top=0, context_neighbours=0, relevance_floor=None)
    nodes = atlas.add_memories([{"content": c, "session_id": "s1"} for c in lines], namespace="c")
    dia_of = {n.id: f"D1:{i}" for i, n in enumerate(nodes)}
    cakes = {f"D1:{i}" for i in range(30)}
    q = Question("What cake did Kate bake?", 1, frozenset(cakes | {"D1:30", "D1:99"}))
    row = _question_rows(atlas, "c", q, dia_of, 31, atlas.config, {"D1:0"}, budget=100)
    fates = {e["dia_id"]: e["fate"] for e in row["evidence"]}
    # 20 recalled for 100 tokens (the least), of which the first few fit; 30 cakes rank above the weather
    assert row["breadth"] == 20 and row["tokens"] <= 100 and 2 <= row["lines"] < 20
    assert Counter(fates[e] for e in cakes) == {"shown": row["lines"], "packed out": 20 - row["lines"],
                                                "ranked out": 10}
    assert fates["D1:30"] == "ranked out" and fates["D1:99"] == "no candidate"
    assert {e["dia_id"]: e["added_beside"] for e in row["evidence"]}["D1:0"] is True
    row["conversation"] = "c"
    shown = sorted(e for e, f in fates.items() if f == "shown")
    lost = {**row, "evidence": [{**e, "fate": "packed out"} if e["dia_id"] in shown else e for e in row["evidence"]]}
    text = summary({"none": [row], "long": [lost]})
    assert f"long: {len(shown)} evidence turns shown under none and lost here ({{'packed out': {len(shown)}}})" in text
