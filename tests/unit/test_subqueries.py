"""Query decomposition by speaker: the pure parts (`shared_core.formulas.subqueries`), the config
fields, and one sub-query per named speaker (`shared_core.engine.decompose`); the speaker path on
every backend is in tests/contract/test_speaker_path.py."""

from __future__ import annotations

import pytest

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, InvalidInputError, ManualClock
from shared_core.formulas.subqueries import name_words, speaker_of, strip_names


def test_name_words_skip_question_words_and_drop_possessives() -> None:
    assert name_words("What are Melanie's hobbies?") == ("Melanie",)
    assert name_words("Which cities have both Jon and Gina been to?") == ("Jon", "Gina")
    assert name_words("Did Jon’s friend O'Brien visit Jon?") == ("Jon", "O'Brien")
    assert name_words("how many times has she been there?") == ()


def test_strip_names_takes_out_each_name_and_the_conjunction_between_two() -> None:
    assert strip_names("Did Jon and Gina both participate in dance competitions?", ("Jon", "Gina")) \
        == "Did both participate in dance competitions?"
    assert strip_names("What are Melanie's hobbies?", ["Melanie"]) == "What are hobbies?"
    assert strip_names("What did Jon, Gina or Tim buy?", ["Jon", "Gina", "Tim"]) == "What did buy?"
    assert strip_names("What does Jonathan do?", ["Jon"]) == "What does Jonathan do?"  # whole words only
    assert strip_names("What does Jon do?", []) == "What does Jon do?"


def test_speaker_of_reads_metadata_first_then_a_chat_label() -> None:
    assert speaker_of("Melanie: we went camping") == "Melanie"
    assert speaker_of("Mary Ann: hi") == "Mary Ann"
    assert speaker_of("we went camping", {"speaker": " Mel "}) == "Mel"
    assert speaker_of("Melanie: hi", {"speaker": ""}) == "Melanie"
    assert speaker_of("note: buy oat milk") is None and speaker_of("at 9:30 we met") is None


@pytest.mark.parametrize(("field", "value"), [
    ("speaker_weight", -0.5), ("speaker_weight", float("nan")), ("speaker_docs", -1), ("speaker_docs", 1.5),
    ("speaker_min_k", True), ("speaker_min_k", None), ("speaker_list_factor", -1.0),
    ("speaker_list_factor", float("nan")), ("speaker_list_factor", None),
])
def test_speaker_fields_are_validated(field: str, value: object) -> None:
    with pytest.raises(InvalidInputError, match=field):
        AtlasConfig(**{field: value})


def test_both_speakers_get_a_sub_query_of_their_own() -> None:
    """"Jon and Gina": each named speaker's own turn on the topic comes back through the speaker
    path, past a third speaker's turns that name them both."""
    memories = [*(f"Tim: Jon, Gina! What do Jon and Gina do for fun, Jon and Gina? day {i}" for i in range(3)),
                "Jon: Gina, what do Jon and Gina do for fun?", "Gina: what do Gina and Jon do for fun, Jon?",
                "Jon: dancing, so much fun", "Gina: painting is fun", *(f"Tim said hello on day {i}" for i in range(8))]
    config = AtlasConfig(similar_top=0, link_temporal=False, candidate_min=4, candidate_ratio=1.0,
                         feedback_weight=0.0, speaker_min_k=0)
    targets = {"Jon: dancing, so much fun", "Gina: painting is fun"}
    found = {}
    for weight in (0.0, 2.0):
        atlas = ElasticMemoryAtlas(config=config.replace(speaker_weight=weight), embedder=HashingEmbedder(dim=256),
                                   clock=ManualClock(1e9))
        atlas.add_memories(memories, namespace="a")
        hits = atlas.retrieve("What do Jon and Gina do for fun?", namespace="a", top_k=5, reinforce=False)
        found[weight] = {h.node.content: h.paths for h in hits if h.node.content in targets}
    assert found[0.0] == {}
    assert found[2.0] == {t: ("speaker",) for t in targets}


def test_the_speaker_path_is_on_for_every_recall_by_default() -> None:
    for config in (AtlasConfig(), AtlasConfig.archive()):
        assert (config.speaker_weight, config.speaker_docs, config.speaker_min_k) == (1.0, 20, 0)


def test_a_list_question_weighs_the_speaker_path_by_the_list_factor() -> None:
    from shared_core.engine.decompose import speaker_weight

    config = AtlasConfig(speaker_weight=0.5, speaker_list_factor=3.0)
    assert speaker_weight("What activities has Melanie done with her family?", config) == 1.5
    assert speaker_weight("How many times has Jon been to Paris?", config) == 1.5
    assert speaker_weight("When did Melanie go camping?", config) == 0.5
    assert speaker_weight("What activities has Melanie done?", AtlasConfig(speaker_list_factor=1.0)) == 1.0
