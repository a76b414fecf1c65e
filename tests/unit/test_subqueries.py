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


# -- robustness to how real chats name their speakers (issue 24, benchmarks/robustness.py) ---------
FUN = [*(f"Tim: Jon, Gina! What do Jon and Gina do for fun, Jon and Gina? day {i}" for i in range(3)),
       "Jon: Gina, what do Jon and Gina do for fun?", "Gina: what do Gina and Jon do for fun, Jon?",
       "Jon: dancing, so much fun", "Gina: painting is fun", *(f"Tim said hello on day {i}" for i in range(8))]
FUN_TARGETS = {"dancing, so much fun", "painting is fun"}


def _speaker_hits(query: str, memories: list[dict[str, object]], weight: float = 2.0) -> dict[str, tuple[str, ...]]:
    config = AtlasConfig(similar_top=0, link_temporal=False, candidate_min=4, candidate_ratio=1.0,
                         feedback_weight=0.0, speaker_min_k=0, speaker_weight=weight)
    atlas = ElasticMemoryAtlas(config=config, embedder=HashingEmbedder(dim=256), clock=ManualClock(1e9))
    atlas.add_memories(memories, namespace="a")
    hits = atlas.retrieve(query, namespace="a", top_k=5, reinforce=False)
    return {h.node.content.split(": ", 1)[-1]: h.paths for h in hits
            if h.node.content.split(": ", 1)[-1] in FUN_TARGETS}


def _chat(speakers: dict[str, str], *, labels: bool = True) -> list[dict[str, object]]:
    """`FUN` as a chat application stores it: each turn's speaker renamed, in the metadata, and
    the ``"Name: "`` label kept or not."""
    out: list[dict[str, object]] = []
    for line in FUN:
        who, colon, text = line.partition(": ")
        who = speakers.get(who, who) if colon else "Tim"
        out.append({"content": f"{who}: {text}" if labels and colon else (text if colon else line),
                    "metadata": {"speaker": who}})
    return out


def test_speaker_words_match_known_speakers_whatever_the_case() -> None:
    from shared_core.formulas.subqueries import speaker_words

    speakers = {"Kate", "Tom Lee", "Melanie", "John", "ann_b92"}
    assert speaker_words("what are kate's hobbies?", speakers) == (("kate", "Kate"),)
    assert speaker_words("What did TOM and Kate buy?", speakers) == (("TOM", "Tom Lee"), ("Kate", "Kate"))
    assert speaker_words("Has Mel met Johnny?", speakers) == (("Mel", "Melanie"), ("Johnny", "John"))
    assert speaker_words("did mel go to Timbuktu or Johnston?", speakers) == ()  # short forms: capitalised only
    assert speaker_words("What will Kate do?", {"Will", "Kate"}) == (("Kate", "Kate"),)  # "will" names nobody
    assert speaker_words("What did Jo do?", {"Joanna", "Jon"}) == (("Jo", "Joanna"),)  # a nickname of Joanna's
    assert speaker_words("Did Joh or Johnny call?", {"Johanna", "John"}) == (("Johnny", "John"),)  # Joh: both
    assert speaker_words("What did Kate do?", set()) == ()
    assert speaker_words("Where did ann go? And b?", speakers) == (("ann", "ann_b92"),)  # a handle


def test_a_nickname_names_the_one_speaker_it_is_short_for() -> None:
    from shared_core.formulas.subqueries import speaker_words

    assert speaker_words("What did Jo paint?", {"Joanna", "Nate"}) == (("Jo", "Joanna"),)
    assert speaker_words("Did Nat and Jo meet?", {"Nathan Okafor", "Joanna"}) == (("Nat", "Nathan Okafor"),
                                                                                  ("Jo", "Joanna"))
    assert speaker_words("Did Jo call?", {"Joanna", "Josephine"}) == ()  # short for both: names neither
    assert speaker_words("did jo call?", {"Joanna", "Nate"}) == ()  # capitalised only ("jo" may be a word)
    assert speaker_words("Did Bob call?", {"Joanna", "Nate"}) == ()  # nobody's nickname
    assert speaker_words("Did Jo call?", {"Jo", "Joanna"}) == (("Jo", "Jo"),)  # a speaker's own name first
    assert speaker_words("Have Jean and John met?", {"Jon", "Gina"}) == ()  # a spelling variant: another person
    assert speaker_words("Did Ian call?", {"John", "Maria"}) == ()  # listed both ways: another person
    assert speaker_words("Did Jean call?", {"Jane", "Tom"}) == ()


def test_a_pet_form_of_one_syllable_twice_names_the_one_speaker_it_starts() -> None:
    from shared_core.formulas.subqueries import speaker_words

    assert speaker_words("When did Gigi lose her job?", {"Gina", "Jon"}) == (("Gigi", "Gina"),)
    assert speaker_words("Did Jojo and Lulu meet?", {"Joanna", "Lucy Hale"}) == (("Jojo", "Joanna"),
                                                                                 ("Lulu", "Lucy Hale"))
    assert speaker_words("Did Jojo call?", {"Joanna", "John"}) == ()  # starts two speakers' names
    assert speaker_words("did gigi call?", {"Gina", "Jon"}) == ()  # capitalised only
    assert speaker_words("Did Nana call?", {"Nate", "Joanna"}) == ()  # kin, not Nate
    assert speaker_words("Did Gigo or Gig call?", {"Gina", "Jon"}) == ()  # no syllable twice
    assert speaker_words("Did Gigigi call?", {"Gina", "Jon"}) == ()  # six letters: halves "gig", "igi"


def test_a_speaker_named_by_a_nickname_runs_the_speaker_path() -> None:
    found = _speaker_hits("What do Jonny and Gina do for fun?", _chat({"Jon": "Jonathan"}))
    assert {t for t, paths in found.items() if "speaker" in paths} == FUN_TARGETS


def test_a_question_typed_in_lower_case_runs_the_speaker_path() -> None:
    found = _speaker_hits("what do jon and gina do for fun?", _chat({}))
    assert found == {t: ("speaker",) for t in FUN_TARGETS}
    assert _speaker_hits("what do jon and gina do for fun?", _chat({}), weight=0.0) == {}


def test_a_speaker_stored_under_a_full_name_is_named_by_the_first_name() -> None:
    found = _speaker_hits("What do Jon and Gina do for fun?", _chat({"Jon": "Jon Reyes", "Gina": "Gina Okafor"},
                                                                   labels=False))
    assert found == {t: ("speaker",) for t in FUN_TARGETS}


def test_a_speaker_named_by_a_short_form_runs_the_speaker_path() -> None:
    found = _speaker_hits("What do Jon and Gina do for fun?", _chat({"Jon": "Jonathan", "Gina": "Ginamarie"}))
    assert found == {t: ("speaker",) for t in FUN_TARGETS}
