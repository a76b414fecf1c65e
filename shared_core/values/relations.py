"""The relation table: built-in `Relation` members, then custom names in registration order.

A relation's *code* is its place in `RELATIONS` (the in-process graph store keeps codes, and a
walk's factors are indexed by them). Custom names are interned here process-wide, so a code
means one name in every atlas of the process; which names an atlas *accepts* is the atlas's own
(`ElasticMemoryAtlas.register_relation`). A name is 1-48 characters of ``a-z 0-9 _`` starting
with a letter (it becomes a FalkorDB relationship type), and not a built-in's.

>>> rel = custom_relation("belongs_to")
>>> rel.value, relation_of("belongs_to") is rel, relation_of("before") is Relation.BEFORE
('belongs_to', True, True)
>>> RELATIONS[RELATION_CODES["belongs_to"]] is rel
True
"""

from __future__ import annotations

import re
import threading

from .errors import InvalidRelationError
from .model import AnyRelation, CustomRelation, Relation

__all__ = ["MAX_CUSTOM_RELATIONS", "RELATIONS", "RELATION_CODES", "custom_relation", "relation_of",
           "valid_relation_name"]

#: How many custom names a process may intern (codes are stored in signed bytes).
MAX_CUSTOM_RELATIONS = 100

#: Every relation by code: the built-ins in `Relation`'s order, then custom names. Append-only.
RELATIONS: list[AnyRelation] = list(Relation)
#: Code by relation and by name (an Enum member hashes as its name, so both keys are kept).
RELATION_CODES: dict[object, int] = {**{r: i for i, r in enumerate(Relation)},
                                     **{r.value: i for i, r in enumerate(Relation)}}

_NAME = re.compile(r"[a-z][a-z0-9_]{0,47}")
_BUILT_IN = frozenset(r.value for r in Relation)
_CUSTOM: dict[str, CustomRelation] = {}
_LOCK = threading.Lock()


def valid_relation_name(name: object) -> str:
    """``name`` if it may name a custom relation; else `InvalidRelationError`."""
    if not isinstance(name, str) or _NAME.fullmatch(name) is None:
        raise InvalidRelationError(f"a relation name is 1-48 characters of a-z, 0-9 and _ starting with a letter, "
                                   f"got {name!r}")
    if name in _BUILT_IN:
        raise InvalidRelationError(f"{name!r} is a built-in relation; it needs no registration")
    return name


def custom_relation(name: object) -> CustomRelation:
    """The interned custom relation of a valid name (interned on first use)."""
    key = valid_relation_name(name)
    found = _CUSTOM.get(key)
    if found is not None:
        return found
    with _LOCK:
        found = _CUSTOM.get(key)
        if found is None:
            if len(_CUSTOM) >= MAX_CUSTOM_RELATIONS:
                raise InvalidRelationError(f"at most {MAX_CUSTOM_RELATIONS} custom relations in one process")
            found = _CUSTOM[key] = CustomRelation(key)
            RELATION_CODES[key] = len(RELATIONS)  # the code first: a reader that sees the relation finds it
            RELATIONS.append(found)
        return found


def relation_of(name: str) -> AnyRelation:
    """The relation stored under ``name``: a built-in, else the custom relation of that name
    (for reading saved or served edges, whose names were validated when written)."""
    code = RELATION_CODES.get(name)
    return RELATIONS[code] if code is not None else custom_relation(name)
