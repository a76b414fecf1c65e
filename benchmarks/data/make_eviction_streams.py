"""Writes eviction_streams.jsonl: two labelled conversation streams for eviction under a cap.

- ``notebook04``: notebook 04's scenario (section 3) as it is: eight weeks of one user's chat, 12
  everyday messages a day, twelve key facts stated on random days of the first three weeks and
  asked about, in other words, every 6 to 12 days (seed 7).
- ``large``: written for this: twelve weeks, 20 messages a day of a wider chatter (diary entries,
  plans for tonight, reactions, questions to the assistant), and 60 key facts (the first-person
  facts of ``write_filter.jsonl``'s generator) stated on random days and never asked about, so
  nothing but the policy can keep them (seed 25).

Each line is one turn: ``{"stream", "day", "kind": "chat" | "state" | "ask", "text", "key"}``.
Run ``python benchmarks/data/make_eviction_streams.py`` to rewrite the file (deterministic).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from make_write_filter import FACTS

ACTIVITIES = [
    "watched a documentary about volcanoes", "tried a new ramen place downtown", "fixed the squeaky hallway door",
    "read two chapters of a crime novel", "went for a long walk by the lake", "cleaned out the garage",
    "baked banana bread", "played chess online", "repainted the garden fence", "listened to a jazz podcast",
    "sat through a long budget meeting", "helped a colleague with a spreadsheet", "planted tomatoes on the balcony",
    "bought new running shoes", "sorted my photos from last summer", "watched the football match",
    "called an old friend from university", "tried yoga for the first time", "cooked a Thai green curry",
    "sorted the recycling", "went to the dentist", "assembled a bookshelf", "ran 8 km in the rain",
    "visited the science museum",
]
WHEN = ["this morning", "after work", "at lunch", "in the evening", "before breakfast"]
COMMENT = ["It was fun.", "It took longer than expected.", "I'd do it again.", "Not my favourite.",
           "Quite relaxing.", "What do you think?"]
KEY_FACTS = [
    ("My daughter Mia is allergic to peanuts.", "Can Mia have a peanut butter sandwich?"),
    ("My passport expires on 3 October 2026.", "When does my passport run out?"),
    ("My wife Sara's birthday is on 14 August.", "When is Sara's birthday?"),
    ("I take 50 mg of losartan every morning for my blood pressure.", "Which blood pressure pills do I take?"),
    ("The wifi password at the cabin is fjord-2041.", "What's the cabin wifi password?"),
    ("My landlord is Mr. Okafor; his number ends in 7731.", "What's my landlord's name?"),
    ("I'm vegetarian, but I do eat fish.", "Is salmon OK for my dinner?"),
    ("My car is a blue 2015 Skoda Octavia, plate EL 48213.", "What's the number plate of my car?"),
    ("My son Leo has violin lessons on Wednesdays at 5 pm.", "When is Leo's violin lesson?"),
    ("I'm afraid of flying, so I prefer to travel by train.", "Should I book a flight or a train to Berlin?"),
    ("I work as a data engineer at Nordlys Energy.", "Where do I work?"),
    ("The spare house key is under the blue flower pot.", "Where did we hide the spare key?"),
]

# the large stream's chatter
PLANS = ["going to the cinema", "meeting friends for drinks", "watching the new series", "cooking pasta",
         "staying in", "doing laundry", "going for a run", "visiting my aunt", "ordering pizza", "playing board games"]
THEN = ["tonight", "later", "after dinner", "this weekend", "tomorrow evening"]
REACTIONS = ["Haha, that's a good one.", "Thanks, that helps.", "Interesting, tell me more.",
             "Hmm, not sure about that.", "Great, let's do that.", "Oh nice, I didn't know that.", "Sounds good to me.",
             "Could you explain that again?"]
ASKS = ["What's a good recipe for {x}?", "Any tips for {x}?", "How long does {x} usually take?",
        "What should I read about {x}?"]
TOPICS = ["banana bread", "a rainy Sunday", "painting a fence", "growing tomatoes", "learning chess", "a long walk",
          "a Thai curry", "a budget meeting", "a museum visit", "running in the rain"]
MOODS = ["I'm a bit tired today.", "Feeling good this morning.", "What a busy day.", "The weather is lovely today.",
         "It's been raining all day.", "Long day at work."]


def notebook04(rng: random.Random) -> list[dict[str, object]]:
    def chatter() -> str:
        return f"Today I {rng.choice(ACTIVITIES)} {rng.choice(WHEN)}. {rng.choice(COMMENT)}"

    weeks, per_day = 8, 12
    stated = {i: rng.randrange(0, 21) for i in range(len(KEY_FACTS))}
    asks: dict[int, list[int]] = {}
    for i, day in stated.items():
        day += rng.randint(3, 8)
        while day < 7 * weeks:
            asks.setdefault(day, []).append(i)
            day += rng.randint(6, 12)
    out: list[dict[str, object]] = []
    for day in range(7 * weeks):
        turns: list[tuple[str, object]] = [("chat", chatter()) for _ in range(per_day)]
        for turn in [("state", i) for i, d in stated.items() if d == day] + [("ask", i) for i in asks.get(day, [])]:
            turns.insert(rng.randrange(len(turns) + 1), turn)
        for kind, item in turns:
            if kind == "chat":
                out.append({"day": day, "kind": "chat", "text": item, "key": False})
            else:
                fact, question = KEY_FACTS[int(item)]  # type: ignore[call-overload]
                out.append({"day": day, "kind": kind, "text": fact if kind == "state" else question,
                            "key": kind == "state"})
    return out


def large(rng: random.Random) -> list[dict[str, object]]:
    facts = [first for first, _ in FACTS][:60]
    days, per_day = 84, 20
    stated: dict[int, list[str]] = {}
    for fact in facts:
        stated.setdefault(rng.randrange(0, days - 7), []).append(fact)
    out: list[dict[str, object]] = []
    for day in range(days):
        turns = []
        for _ in range(per_day):
            pick = rng.random()
            if pick < 0.35:
                text = f"Today I {rng.choice(ACTIVITIES)} {rng.choice(WHEN)}. {rng.choice(COMMENT)}"
            elif pick < 0.55:
                text = f"I'm {rng.choice(PLANS)} {rng.choice(THEN)}."
            elif pick < 0.75:
                text = rng.choice(REACTIONS)
            elif pick < 0.9:
                text = rng.choice(ASKS).format(x=rng.choice(TOPICS))
            else:
                text = rng.choice(MOODS)
            turns.append({"day": day, "kind": "chat", "text": text, "key": False})
        for fact in stated.get(day, []):
            turns.insert(rng.randrange(len(turns) + 1), {"day": day, "kind": "state", "text": fact, "key": True})
        out += turns
    return out


if __name__ == "__main__":
    path = Path(__file__).with_name("eviction_streams.jsonl")
    lines = [json.dumps({"stream": "notebook04", **t}) for t in notebook04(random.Random(7))]
    lines += [json.dumps({"stream": "large", **t}) for t in large(random.Random(25))]
    path.write_text("".join(line + "\n" for line in lines))
    print(f"{len(lines)} turns -> {path}")
