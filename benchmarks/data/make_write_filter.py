"""Writes write_filter.jsonl: conversation turns labelled ``fact`` (something about the user worth
keeping) or ``small_talk`` (greetings, thanks, reactions, chit-chat), written for this set.

Facts come in the first person ("I own a dog") and as an agent would note them in the third
person ("User owns a dog"); each first-person fact and its third-person form share a ``group``,
so cross-validation never tunes on one and scores on the other.
Run ``python benchmarks/data/make_write_filter.py`` to rewrite the file (deterministic).
"""

from __future__ import annotations

import json
from pathlib import Path

# (first person, third person or "")
FACTS = [
    ("I own a dog", "User owns a dog"),
    ("I have two kids, Mia and Leo", "User has two kids, Mia and Leo"),
    ("My wife is a doctor", "User's wife is a doctor"),
    ("I'm vegetarian", "User is vegetarian"),
    ("I work from home on Fridays", "User works from home on Fridays"),
    ("I'm training for a marathon", "User is training for a marathon"),
    ("We're moving to Leeds in the spring", "User is moving to Leeds in the spring"),
    ("I don't eat pork", "User does not eat pork"),
    ("I'm learning Japanese", "User is learning Japanese"),
    ("My sister just had a baby", "User's sister just had a baby"),
    ("I can't stand coriander", "User can't stand coriander"),
    ("Our car broke down again", ""),
    ("I play the cello in an amateur orchestra", "User plays the cello in an amateur orchestra"),
    ("I'm a nurse", "User is a nurse"),
    ("I drive an electric car", "User drives an electric car"),
    ("I have a peanut allergy", "User has a peanut allergy"),
    ("I live with my grandmother", "User lives with their grandmother"),
    ("I'm colour blind", "User is colour blind"),
    ("I get up at 5 every day", "User gets up at 5 every day"),
    ("I speak Portuguese at home", "User speaks Portuguese at home"),
    ("My son started school this year", "User's son started school this year"),
    ("I'm saving for a house", "User is saving for a house"),
    ("I hate flying", "User hates flying"),
    ("I use a wheelchair", "User uses a wheelchair"),
    ("My dad has diabetes", "User's dad has diabetes"),
    ("I run a small bakery", "User runs a small bakery"),
    ("I'm an only child", "User is an only child"),
    ("I rent a flat in the city centre", "User rents a flat in the city centre"),
    ("I prefer tea to coffee", "User prefers tea to coffee"),
    ("I'm on a low-sodium diet", "User is on a low-sodium diet"),
    ("I have a cat called Miso", "User has a cat called Miso"),
    ("I grew up in Nairobi", "User grew up in Nairobi"),
    ("I study law part-time", "User studies law part-time"),
    ("I'm pregnant with our second child", "User is pregnant with their second child"),
    ("I've been sober for three years", "User has been sober for three years"),
    ("I volunteer at the food bank on Saturdays", "User volunteers at the food bank on Saturdays"),
    ("I sleep badly when it's hot", "User sleeps badly when it's hot"),
    ("I keep bees in the garden", "User keeps bees in the garden"),
    ("My husband is Brazilian", "User's husband is Brazilian"),
    ("I wear glasses", "User wears glasses"),
    ("I'm left-handed", "User is left-handed"),
    ("I take the bus to work", "User takes the bus to work"),
    ("I'm scared of dogs", "User is scared of dogs"),
    ("I support Arsenal", "User supports Arsenal"),
    ("I was a teacher for ten years", "User was a teacher for ten years"),
    ("I have a bad knee", "User has a bad knee"),
    ("I'm retired", "User is retired"),
    ("We have a summer house by the lake", "User has a summer house by the lake"),
    ("I collect vinyl records", "User collects vinyl records"),
    ("I need step-free access", "User needs step-free access"),
    ("I'm dyslexic", "User is dyslexic"),
    ("I cook for a family of five", "User cooks for a family of five"),
    ("I got married last summer", "User got married last summer"),
    ("I'm allergic to cats", "User is allergic to cats"),
    ("My mother lives with us", "User's mother lives with them"),
    ("I go swimming every morning", "User goes swimming every morning"),
    ("I'm on the night shift this month", "User is on the night shift this month"),
    ("I don't drink alcohol", "User doesn't drink alcohol"),
    ("I'm a big fan of jazz", "User is a big fan of jazz"),
    ("I just adopted a rescue greyhound", "User just adopted a rescue greyhound"),
    ("I commute by bike", "User commutes by bike"),
    ("I have two older brothers", "User has two older brothers"),
    ("I'm writing a novel", "User is writing a novel"),
    ("I work in IT support", "User works in IT support"),
    ("I lost my job last month", "User lost their job last month"),
    ("My partner and I split up", ""),
    ("I'm 52", "User is 52"),
    ("I have a toddler at home", "User has a toddler at home"),
    ("I gave up sugar", "User gave up sugar"),
    ("My daughter plays football", "User's daughter plays football"),
    ("I love hiking in the mountains", "User loves hiking in the mountains"),
    ("I can't eat gluten", "User can't eat gluten"),
    ("I'm originally from Chile", "User is originally from Chile"),
    ("I mostly read science fiction", "User mostly reads science fiction"),
    ("I share a car with my brother", "User shares a car with their brother"),
    ("I teach yoga in the evenings", "User teaches yoga in the evenings"),
    ("I have tinnitus", "User has tinnitus"),
    ("We don't own a TV", ""),
    ("I failed my driving test twice", "User failed their driving test twice"),
    ("I garden a lot", "User gardens a lot"),
    ("I'm a night owl", "User is a night owl"),
    ("My best friend lives in Sydney", "User's best friend lives in Sydney"),
    ("I'm getting a divorce", "User is getting a divorce"),
    ("I care for my disabled son", "User cares for their disabled son"),
    ("I just bought a bike", "User just bought a bike"),
    ("I own a small boat", "User owns a small boat"),
    ("I walk the dog twice a day", "User walks the dog twice a day"),
    ("I don't like horror films", "User doesn't like horror films"),
    ("I'm behind on my rent", "User is behind on their rent"),
    ("My twins turn six next week", "User's twins turn six next week"),
]

SMALL_TALK = [
    "hi", "hello!", "hey there", "good morning!", "ok thanks", "thanks a lot!", "thank you so much",
    "cool", "nice", "great, thanks", "awesome", "sounds good", "sure", "yes please", "no thanks", "yep",
    "lol", "haha that's funny", "hmm", "oh really?", "wow", "oops", "bye!", "see you later", "good night",
    "have a nice day", "talk soon", "that makes sense", "interesting", "good point", "fair enough", "I see",
    "got it", "never mind", "anyway", "no worries", "that's wild", "I guess so", "hmm not sure",
    "could you repeat that?", "what do you mean?", "tell me more", "can you explain that again?",
    "thanks, that helps a lot!", "how are you?", "how's it going?", "what's up?", "how about you?",
    "you're a great help", "you're funny", "that's so true", "exactly", "right", "ok, let me think",
    "sorry, one sec", "brb", "I'm back", "where were we?", "let's move on", "ok next question",
    "that's all for now", "I think that's it", "perfect", "that's helpful", "good to know", "oh nice",
    "haha yes", "no way!", "really? I didn't know that", "makes sense, thanks", "yeah that sounds right",
    "okay cool", "hmm, interesting idea", "sure thing", "alright then", "thanks anyway",
    "sorry about that", "my bad", "no problem", "you too!", "same here", "me too", "not really",
    "maybe later", "I'm not sure", "let me check", "hang on", "one more thing", "that's a good question",
    "what do you think?", "any thoughts?", "go on", "please continue", "carry on", "thanks for asking",
    "I appreciate it", "that was quick", "nice one", "amazing!", "love it", "so cool", "ha, nice try",
    "is that right?", "oh I see what you mean", "yes, exactly", "nope", "not yet", "done",
    "ok I'll try that", "I'll think about it", "good idea", "sounds like a plan", "cheers",
    "happy friday!", "nice weather today, huh", "it's so hot today", "what a day", "long day",
    "ugh, Mondays", "how was your weekend?", "did you sleep well?", "what's new?", "anything else?",
    "can you say that more simply?", "shorter please", "in a table please", "again please",
    "thanks, bye", "good evening", "hi again", "hello, it's me", "hey, quick question",
    "are you there?", "you still there?", "testing, testing", "hello?", "sorry, typo",
    "ignore that", "never mind that last message", "ok that's enough for today", "all good",
    "that's fine", "fine by me", "whatever works", "up to you", "either is fine", "whatever you think",
]


def rows() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for group, (first, third) in enumerate(FACTS):
        for text in (first, third):
            if text:
                out.append({"text": text, "label": "fact", "group": group})
    for group, text in enumerate(SMALL_TALK, start=len(FACTS)):
        out.append({"text": text, "label": "small_talk", "group": group})
    return out


if __name__ == "__main__":
    path = Path(__file__).with_name("write_filter.jsonl")
    data = rows()
    path.write_text("".join(json.dumps(r) + "\n" for r in data))
    print(f"{len(data)} turns ({sum(r['label'] == 'fact' for r in data)} facts) -> {path}")
