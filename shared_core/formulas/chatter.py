"""Messages that carry no fact: backchannels ("ok", "lol", "haha nice", "👍").

Real chats are full of them: a reply that only acknowledges, laughs or reacts. Recall has
nothing to find in them, yet a labelled one ("Kate: ok") is embedded close to every question
about Kate, and one between two turns cuts a context window in two. `contentless` tells them
apart: after the speaker's label, a message is contentless when it has no word at all (an
emoji, punctuation) or when each of its words is an acknowledgement, interjection, greeting,
chat acronym or one of a few function words (`BACKCHANNEL`, a fixed English lexicon), or
laughter ("hahaha", "hehe", "lolol"); a letter repeated three times or more counts once or
twice ("sooo", "cooool"). A number, a name or any other word makes it a message with content.
The write filter's small talk (`shared_core.engine.lifecycle.write_filter.SMALL_TALK`) is broader
("could you repeat that?", verbs): it holds a turn back in working memory, while a memory recall
skips here can never be found, so this lexicon is kept to words that state nothing.

>>> contentless("Kate: haha nice"), contentless("👍"), contentless("ok cool", {"speaker": "Kate"})
(True, True, True)
>>> contentless("Kate: went hiking!"), contentless("at 5"), contentless("Kate: ok [shares a photo of a lake]")
(False, False, False)
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from .subqueries import speaker_of

__all__ = ["BACKCHANNEL", "contentless"]

#: words a backchannel is made of (lower case): acknowledgements, thanks, interjections,
#: greetings, chat acronyms and the function words that go with them ("oh me too", "that's so cool");
#: no verb, so a short answer ("it was great!") has content
BACKCHANNEL = frozenset((
    # acknowledgements and assessments
    "ok", "okay", "okey", "k", "kk", "alright", "sure", "yes", "yeah", "yea", "ya", "yep", "yup", "no",
    "nope", "nah", "right", "true", "fine", "cool", "nice", "good", "great", "awesome", "perfect",
    "exactly", "totally", "absolutely", "definitely", "indeed", "agreed", "same", "fair", "enough",
    # thanks
    "thanks", "thank", "thx", "ty", "tysm", "np", "welcome",
    # interjections
    "oh", "ah", "aw", "wow", "whoa", "woah", "omg", "omfg", "gosh", "geez", "jeez", "damn", "dang",
    "oops", "yay", "woo", "woohoo", "ugh", "meh", "hmm", "hm", "mm", "mhm", "uh", "um", "huh", "eh",
    # greetings
    "hey", "hi", "hello", "bye",
    # chat acronyms
    "lol", "lmao", "lmfao", "rofl", "ikr", "idk", "haha", "hehe",
    # function words (no verb: "it was great!" answers a question)
    "a", "an", "the", "that", "thats", "this", "so", "me", "too", "you", "i", "really", "very", "much",
    "my", "and", "s",
))
_WORD = re.compile(r"[^\W_]+")
_LAUGH = re.compile(r"(?:a?h+[ae]+)+h*|(?:l+o+)+l+|x+d+")
_RUN = re.compile(r"(\w)\1{2,}")


def _known(word: str) -> bool:
    if word in BACKCHANNEL or _LAUGH.fullmatch(word):
        return True
    if _RUN.search(word):  # an elongated word: "sooo", "cooool"
        return _RUN.sub(r"\1", word) in BACKCHANNEL or _RUN.sub(r"\1\1", word) in BACKCHANNEL
    return False


def _wordless(body: str) -> bool:
    return all(_known(m.group(0)) for m in _WORD.finditer(body.lower()))


#: `_wordless` for recall, which asks about the same candidates call after call
_wordless_cached = functools.lru_cache(maxsize=8192)(_wordless)


def contentless(content: str, metadata: Mapping[str, object] | None = None, *, cached: bool = True) -> bool:
    """Whether ``content`` (a chat message, its ``"Name: "`` label or its metadata's
    ``speaker`` aside) carries no fact: no word, or only backchannel words (see the module).
    ``cached=False`` for a text seen once (a write's flag, a backfill): it would only crowd
    recall's cache of the bodies it asks about.

    >>> contentless("Kate: lol"), contentless("Kate: I went hiking", cached=False)
    (True, False)
    """
    if len(content) > 200:  # nobody types that much to say "ok"
        return False
    test = _wordless_cached if cached else _wordless
    head, colon, rest = content.partition(":")
    if not colon:
        return test(content)
    # the whole message has the words of ``rest`` and more: when ``rest`` states something, so
    # does the message, and its label need not be read (the common case, and a cached one)
    if not test(rest):
        return False
    if test(content):
        return True
    # the label of the metadata's speaker (any case), or a chat label ("Kate: ok")
    labels = {who.lower() for who in (speaker_of(content, metadata), speaker_of(content)) if who}
    return head.strip().lower() in labels
