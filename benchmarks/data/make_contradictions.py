"""Writes contradictions.jsonl: the labelled pairs `benchmarks/lifecycle_quality.py` scores.

Each template below was written for this set: a statement with a slot, the values it takes, and
the look-alike variants of it that are NOT contradictions (another subject, added detail, the same
value said differently, a negation of another value, a verb that allows two values). Every pair
carries its template's ``group``, so cross-validation never tunes and scores on one template.
Run ``python benchmarks/data/make_contradictions.py`` to rewrite the file (deterministic).
"""

from __future__ import annotations

import json
from pathlib import Path

# (category, old with {v}, values, other-subject old with {v} or None, same-value paraphrases)
SLOTS: list[tuple[str, str, list[str], str | None, list[tuple[str, str]]]] = [
    ("date", "Bob's birthday is on {v}", ["June 3", "July 9", "March 21"], "Anna's birthday is on {v}",
     [("June 3", "3 June"), ("July 9", "9th of July")]),
    ("date", "The team meeting is at {v}", ["3pm", "5pm", "10am"], "The board meeting is at {v}",
     [("5pm", "17:00"), ("3pm", "3 p.m.")]),
    ("date", "My flight to Lisbon leaves on {v}", ["Monday", "Friday", "Sunday"],
     "Tom's flight to Lisbon leaves on {v}", []),
    ("date", "The dentist appointment is on {v}", ["May 5", "May 9", "April 30"], None, [("May 5", "5 May")]),
    ("date", "Our wedding anniversary is on {v}", ["12 September", "20 October"], "Their wedding anniversary is on {v}",
     [("12 September", "September 12")]),
    ("date", "The rent is due on {v}", ["the 1st", "the 15th"], None, []),
    ("date", "The kids' school starts at {v}", ["8:30", "9:00"], None, [("9:00", "9am")]),
    ("date", "My passport expires in {v}", ["2027", "2031"], "My driving licence expires in {v}", []),
    ("date", "The project deadline is {v}", ["Friday", "next Tuesday", "March 3"], None, []),
    ("date", "Yoga class is on {v} evenings", ["Tuesday", "Thursday"], "Pottery class is on {v} evenings", []),
    ("number", "I am {v} years old", ["34", "35", "41"], "My brother is {v} years old", []),
    ("number", "Maya is {v}", ["29", "30"], "Her sister is {v}", []),
    ("number", "My phone number is {v}", ["555-0142", "555-0199"], "My office number is {v}", []),
    ("number", "The budget for the trip is {v} euros", ["3000", "4500", "2000"], None, []),
    ("number", "I have {v} cats", ["two", "three", "5"], "My neighbour has {v} cats", [("two", "2")]),
    ("number", "Our flat has {v} bedrooms", ["3", "4"], "Their flat has {v} bedrooms", []),
    ("number", "My monthly rent is {v} dollars", ["1200", "1450"], None, []),
    ("number", "The wifi password is {v}", ["fjord-2041", "fjord-7713"], "The guest wifi password is {v}", []),
    ("number", "I run {v} km every morning", ["5", "8"], None, []),
    ("number", "My shoe size is {v}", ["42", "44"], "My son's shoe size is {v}", []),
    ("number", "The gym locker is number {v}", ["214", "318"], None, []),
    ("number", "Leo weighs {v} kilos", ["31", "34"], "Mia weighs {v} kilos", []),
    ("place", "Maya lives in {v}", ["New York", "San Francisco", "Boston"], "Her parents live in {v}", []),
    ("place", "I live in {v}", ["Paris", "Berlin", "Lyon"], "My sister lives in {v}", []),
    ("place", "User lives in {v}", ["Madrid", "Porto"], None, []),
    ("place", "My office is in {v}", ["Shoreditch", "Canary Wharf"], "Our Berlin office is in {v}", []),
    ("place", "The conference is held in {v}", ["Vienna", "Prague"], "The workshop is held in {v}", []),
    ("place", "We moved to {v}", ["Denver", "Austin"], None, []),
    ("place", "I was born in {v}", ["Lagos", "Accra"], "My father was born in {v}", []),
    ("place", "The spare key is under the {v}", ["blue flower pot", "doormat"], None, []),
    ("name", "My manager is {v}", ["Anna Schmidt", "Tom Berg"], "My mentor is {v}", []),
    ("name", "My dog's name is {v}", ["Rex", "Biscuit"], "My cat's name is {v}", []),
    ("name", "I work at {v}", ["Google", "Nordlys Energy", "a small bakery"], None, []),
    ("name", "My favourite band is {v}", ["Radiohead", "Arcade Fire"], "My husband's favourite band is {v}", []),
    ("name", "The project lead is {v}", ["Priya", "Carlos"], "The design lead is {v}", []),
    ("name", "User prefers {v}", ["oat milk", "soy milk", "almond milk"], None, []),
    ("name", "My favourite colour is {v}", ["blue", "green"], "Mia's favourite colour is {v}", []),
    ("name", "I drive a {v}", ["blue Skoda Octavia", "red Toyota Yaris"], None, []),
    ("name", "My doctor is Dr. {v}", ["Okafor", "Lindqvist"], "My dentist is Dr. {v}", []),
    ("name", "Maya is a {v}", ["nurse", "teacher"], "Her husband is a {v}", []),
    ("name", "The restaurant we booked is {v}", ["Nopa", "Zuni Cafe"], None, []),
    ("name", "My son is called {v}", ["Leo", "Noah"], None, []),
]

# (statement, negated statement): a negation contradicts; these groups also give look-alikes
NEGATIONS = [
    ("I drink coffee", "I don't drink coffee anymore"),
    ("I eat meat", "I no longer eat meat"),
    ("The store is open on Sundays", "The store is not open on Sundays"),
    ("Maya is allergic to penicillin", "Maya is not allergic to penicillin"),
    ("I smoke", "I never smoke"),
    ("The car has insurance", "The car has no insurance"),
    ("My sister is married", "My sister isn't married"),
    ("The meeting is cancelled", "The meeting is not cancelled"),
    ("Tom likes spicy food", "Tom doesn't like spicy food"),
    ("I have a driving licence", "I don't have a driving licence"),
    ("The flat allows pets", "The flat does not allow pets"),
    ("User is vegetarian", "User is not vegetarian"),
    ("The printer works", "The printer doesn't work"),
    ("Leo can swim", "Leo can't swim"),
    ("We are going to the wedding", "We are not going to the wedding"),
    ("The parcel has arrived", "The parcel hasn't arrived"),
]

# hand-written look-alikes: worded alike, both can hold
COMPATIBLE = [
    ("The meeting is at 3pm", "The meeting is not at 5pm"),
    ("My flight is on Monday", "My flight is not on Friday"),
    ("The meeting is not at 5pm", "The meeting is not at 3pm"),
    ("I like tea", "I like coffee"),
    ("I love jazz", "I love hip hop"),
    ("I speak French", "I speak German"),
    ("I visited Rome last year", "I visited Paris last year"),
    ("I have a dog", "I have a cat"),
    ("I enjoy hiking", "I enjoy swimming"),
    ("Room 12 is booked", "Room 14 is booked"),
    ("On Monday I went to the gym", "On Tuesday I went to the gym"),
    ("Flight 221 is delayed", "Flight 305 is delayed"),
    ("Bus 12 stops at the station", "Bus 40 stops at the station"),
    ("I am learning Spanish", "I am learning Spanish with an app"),
    ("I live in Paris", "I live in Paris with my cat"),
    ("My brother lives in Paris", "My sister lives in Paris"),
    ("Bob turned 34 in May", "Bob is 34 years old"),
    ("The meeting is at 3pm", "The meeting is at 3pm in room B"),
    ("I work at Google", "I work at Google as a data engineer"),
    ("I bought apples", "I bought oranges"),
    ("We watched a movie on Friday", "We watched a movie on Saturday"),
    ("I had pasta for lunch", "I had salad for dinner"),
    ("The train to Berlin leaves at 9am", "The train to Munich leaves at 11am"),
    ("My daughter is 7", "My son is 9"),
    ("Maya works night shifts", "Maya works night shifts at St. Mary's"),
    ("I read a book about volcanoes", "I read a book about glaciers"),
    ("I met Anna at the cafe", "I met Tom at the cafe"),
    ("The kitchen light is broken", "The bathroom light is broken"),
    ("I called my mother on Sunday", "I called my father on Sunday"),
    ("Sara plays the piano", "Sara plays the violin"),
    ("I'm planning a trip to Porto", "I'm planning a trip to Seville"),
    ("My sister's birthday is in June", "My sister's wedding is in June"),
    ("The red car is mine", "The blue car is mine"),
    ("We need milk", "We need bread"),
    ("The report is due Friday", "The invoice is due Friday"),
    ("I usually wake up at 7am", "I wake up at 7am on weekdays"),
    ("I'm 34 years old", "I am 34 years old"),
    ("The meeting is at 5pm", "The meeting is at 5 p.m."),
    ("The weather was grey", "The football results were good"),
    ("Leo has violin lessons on Wednesdays", "Mia has piano lessons on Wednesdays"),
]

# hand-written contradictions beyond the slots
CONTRADICTING = [
    ("The meeting moved to Thursday", "The meeting moved to Friday"),
    ("I am vegan", "I am not vegan"),
    ("Bob's new address is 12 Elm Street", "Bob's new address is 40 Oak Avenue"),
    ("The package will arrive on Tuesday", "The package will arrive on Thursday"),
    ("My blood type is O negative", "My blood type is A positive"),
    ("The password for the router is tiger42", "The password for the router is panda17"),
    ("Sara is my girlfriend", "Sara is my wife"),
    ("The launch is scheduled for 2026", "The launch is scheduled for 2027"),
    ("Our daughter goes to Hillside School", "Our daughter goes to Riverside School"),
    ("The car is blue", "The car is red"),
    ("The restaurant opens at 6pm", "The restaurant opens at 7pm"),
    ("My best friend is Jonas", "My best friend is Lukas"),
    ("I take 50 mg of losartan every morning", "I take 100 mg of losartan every morning"),
    ("My landlord is Mr. Okafor", "My landlord is Mrs. Chen"),
    ("The plane lands at 14:30", "The plane lands at 16:10"),
    ("The concert tickets cost 80 euros", "The concert tickets cost 120 euros"),
]


def rows() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    group = 0

    def add(old: str, new: str, label: bool, category: str, why: str) -> None:
        out.append({"old": old, "new": new, "label": label, "category": category, "why": why, "group": group})

    for category, template, values, other, same in SLOTS:
        group += 1
        for k, old_v in enumerate(values):
            new_v = values[(k + 1) % len(values)]
            if len(values) == 2 and k == 1:
                break
            add(template.format(v=old_v), template.format(v=new_v), True, category, "changed value")
        first, second = values[0], values[1]
        if other is not None:
            add(template.format(v=first), other.format(v=second), False, category, "another subject")
            add(template.format(v=first), other.format(v=first), False, category, "another subject, same value")
        add(template.format(v=first), template.format(v=first) + " this year", False, category, "added detail")
        for x, y in same:
            add(template.format(v=x), template.format(v=y), False, category, "same value reworded")
    for plain, negated in NEGATIONS:
        group += 1
        add(plain, negated, True, "negation", "negated")
        add(negated, plain, True, "negation", "negation withdrawn")
        add(plain, plain.replace(" is ", " is also ") if " is " in plain else "Yes, " + plain.lower(), False,
            "negation", "restated")
    for old, new in COMPATIBLE:
        group += 1
        add(old, new, False, "lookalike", "both can hold")
    for old, new in CONTRADICTING:
        group += 1
        add(old, new, True, "mixed", "changed value")
    return out


if __name__ == "__main__":
    path = Path(__file__).with_name("contradictions.jsonl")
    data = rows()
    path.write_text("".join(json.dumps(r) + "\n" for r in data))
    print(f"{len(data)} pairs ({sum(bool(r['label']) for r in data)} contradictions) -> {path}")
