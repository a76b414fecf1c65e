"""`AtlasConfig`: every tunable of the atlas in one frozen dataclass, with named presets.

>>> AtlasConfig(half_life=3600).half_life
3600
>>> AtlasConfig.linear().scoring
'linear'
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from . import _validate as check
from .errors import InvalidInputError, UnknownFieldError
from .model import Relation

__all__ = ["AtlasConfig"]

DAY = 86_400.0
#: How much relevance flows along each kind of edge during recall (see `shared_core.engine.recall`):
#: the turns around a match fully, the parts, causes and summaries of a memory almost fully,
#: mere similarity little (the vector path already finds similar memories), old versions never.
RELATION_WEIGHTS: tuple[tuple[str, float], ...] = (
    ("before", 1.0), ("after", 1.0), ("responds_to", 1.0), ("part_of", 0.8), ("summarizes", 0.8),
    ("caused_by", 0.8), ("related_to", 0.6), ("contradicts", 0.5), ("similar_to", 0.2),
    ("supersedes", 0.0),
)


def _check_fields(config: object, names: tuple[str, ...], ok: Callable[[Any], bool], must: str) -> None:
    """`InvalidInputError` ``AtlasConfig.<name> must be <must>, got <value>`` for the first of
    ``names`` whose value fails ``ok``.

    >>> _check_fields(AtlasConfig(), ("half_life", "rrf_k"), _positive_number, "a positive number")
    >>> _check_fields(AtlasConfig(), ("weight_model",), _count, "an int >= 0")
    Traceback (most recent call last):
    ...
    shared_core.values.errors.InvalidInputError: AtlasConfig.weight_model must be an int >= 0, got 'simple'
    """
    for name in names:
        value = getattr(config, name)
        if not ok(value):
            raise InvalidInputError(f"AtlasConfig.{name} must be {must}, got {value!r}")


def _number(value: object) -> bool:
    """An int or float, not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _positive_number(value: Any) -> bool:
    return _number(value) and value > 0 and math.isfinite(value)


def _non_negative(value: Any) -> bool:
    """A finite number >= 0 (a bool passes, as 0 or 1)."""
    return isinstance(value, (int, float)) and value >= 0 and math.isfinite(value)


def _non_negative_number(value: Any) -> bool:
    return _number(value) and value >= 0 and math.isfinite(value)


def _unit(value: Any) -> bool:
    return _number(value) and 0 <= value <= 1


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _int_from_1(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


@dataclass(frozen=True, slots=True, kw_only=True)
class AtlasConfig:
    """Configuration of an `ElasticMemoryAtlas`. Build variants with presets or ``replace``.

    Weights: a memory starts at ``importance``; recall multiplies it by ``reinforce_factor``
    up to ``weight_cap``; it halves every ``half_life`` (seconds, or writes to its namespace
    when ``decay_unit="turns"``) down to ``weight_floor``. ``weight_model="rich"`` adds the
    seed's access, recency and association terms (see `shared_core.formulas.decay.rich_weight`).

    Recall (see `shared_core.engine.recall`): the vector, keyword, time and recent paths each bring
    ``candidate_ratio * top_k`` candidates (at least ``candidate_min``, at most ``candidate_k``;
    the cosine of the ``candidate_k``-th best memory is the floor of the similarity scale);
    ``fusion="convex"`` sums their scaled scores with ``vector_weight``, ``keyword_weight``,
    ``time_weight`` and ``recent_weight`` (``"rrf"``: reciprocal rank fusion with ``rrf_k``); then
    the best ``top_k`` candidates (``seed_ratio * top_k`` in a recall of at least ``seed_min_k``;
    at most ``graph_seeds``) pass relevance along their edges for
    ``graph_hops`` hops, times ``graph_hop_decay`` per hop and ``relation_weights`` per edge
    kind, scaled by ``graph_weight``; after each hop only the ``graph_beam`` x seeds most
    activated nodes walk on (None: every node reached). ``time_reference`` is what relative cues ("last week")
    count from: the clock, or the newest memory (``"latest"``). ``relevance_floor``: a memory is
    returned (and reinforced) only if its cosine with the query reaches the floor, it shares a
    query word, it lies in the time range the query names, it is one of the session's latest
    turns, or the graph reaches it from such a memory; a query unrelated to every memory returns
    nothing (None: no floor). The fusion weights and ``graph_hop_decay`` are kept by
    leave-one-conversation-out on LoCoMo (`benchmarks/README.md`, "Fusion weights cross-validated").

    Entities (`shared_core.text.entities`; off by default: on LoCoMo they did not pay for their
    write cost): with ``entity_extraction="keyphrases"`` each new memory's names, speaker and
    best ``entity_phrases`` key phrases (YAKE, no model) become entity nodes linked to it by
    ``mentions`` edges (``"llm"``: the atlas's ``llm`` lists them, YAKE when it fails). Recall
    can then add an ``entity`` path, weighted ``entity_weight``: the memories that mention an
    entity the query names, best cosine first; and walk seed -> entity -> memory with the factor
    ``entity_walk`` (times ``graph_hop_decay``) through entities that at most
    ``entity_max_mentions`` memories mention (0 for either: not used; either above 0 needs an
    extraction).

    Feedback (`shared_core.engine.feedback`; on by default, chosen by leave-one-conversation-out
    on LoCoMo, `benchmarks/README.md`): with ``feedback_weight`` > 0 recall
    runs a second candidate generation from the first round's ``feedback_docs`` best hits (the
    query's vector plus ``feedback_beta`` times their mean vector, and the query plus their
    ``feedback_terms`` best words) and fuses its candidates as one more path, weighted
    ``feedback_weight``, so evidence that shares nothing with the query but much with its best
    answers becomes a candidate. Only a recall of at least ``feedback_min_k`` memories (a
    context's: 0.05 per token of budget) runs it: a short lookup wants the query's own best.

    Speakers (`shared_core.engine.decompose`; on by default, chosen by leave-one-conversation-out on
    LoCoMo, `benchmarks/README.md`): with ``speaker_weight`` > 0 a recall of at least
    ``speaker_min_k`` memories whose query names the speaker of one of the first round's
    ``speaker_docs`` best candidates (metadata ``speaker`` or a ``"Name:"`` label; named in any
    case, by a word of a full name, or by a short form: `shared_core.formulas.subqueries.speaker_words`) runs one more
    candidate generation for the query without the names, keeps each speaker's own memories, and
    fuses them as a ``speaker`` path weighted ``speaker_weight`` (the atlas embeds the sub-query,
    in the query's own model call when it has seen the speakers); for a list or count question
    (`shared_core.formulas.questions.analyze_query`) the weight is ``speaker_list_factor`` times
    ``speaker_weight`` (1.0: as for any question; 3.0 chosen leaving one conversation out).

    Limits: a memory holds at most ``max_content_chars`` characters and a query at most
    ``max_query_chars``; longer ones are refused with `InvalidInputError`, never cut.

    Context: `build_context` recalls ``context_candidates`` memories per token of budget (20 to
    400) to pack, after the session's last ``working_memory`` turns. A packed memory brings the
    turns just before and after it in its session along when they are at most
    ``context_neighbours`` tokens long (a question and its short answer, a message split over
    several; `shared_core.engine.neighbours`); 0 packs the recalled memories only. The preset, 12,
    was chosen by leave-one-conversation-out on LoCoMo and on LoCoMo cut into one message per
    sentence (`benchmarks/README.md`).

    List and count questions ("What are Kate's hobbies?", "How many times...", see
    `shared_core.formulas.questions`) recall ``list_candidates`` times as many memories for the
    context, and the packing takes them in maximal-marginal-relevance order with
    ``list_diversity`` (0 keeps the order by score, see `shared_core.formulas.diversity`). Both
    are off by default: chosen by leave-one-conversation-out on LoCoMo, they did not pay their
    way (`benchmarks/README.md`).

    Capacity: ``max_nodes`` and ``max_bytes`` cap the memories (see `shared_core.engine.lifecycle.manager`);
    ``max_namespaces`` caps the namespaces that hold memories (None: no limit), and a write that
    would start one more raises `NamespaceLimitError` and stores nothing.

    Scoring: ``"multiplicative"`` ranks by relevance * weight**weight_exponent *
    recency**recency_exponent; ``"linear"`` by the seed's 0.5 relevance + 0.3 weight + 0.2 recency.
    """

    # elastic weights
    half_life: float = 30 * DAY
    decay_unit: Literal["seconds", "turns"] = "seconds"
    weight_floor: float = 0.05
    reinforce_factor: float = 1.2
    weight_cap: float = 3.0
    weight_model: Literal["simple", "rich"] = "simple"
    # capacity and expiry
    max_nodes: int | None = None
    eviction_batch: float = 0.02
    #: the share of its eviction value that a memory of small talk or of the day's chatter keeps
    #: against a durable fact of equal weight and links (`shared_core.engine.lifecycle.capacity.fact_salience`);
    #: 1.0 turns the content out of the eviction order
    episodic_value: float = 0.03
    default_ttl: float | None = None
    max_content_chars: int = 100_000
    # the longest query retrieve/build_context accept (longer: InvalidInputError). The embedder
    # reads a query's first 256 word pieces (about 1,000 characters) and only the keyword path
    # reads on, so 8,192 characters (about 2,000 tokens) holds any question and a pasted
    # paragraph, and bounds the keyword path's work
    max_query_chars: int = 8192
    # auto-linking on add
    similar_threshold: float = 0.6
    similar_top: int = 3
    link_temporal: bool = True
    # vector index: exact (numpy) below ann_threshold vectors per namespace, approximate (faiss
    # IVF, see shared_core.store.memory.ann_index) from there on; None keeps every namespace exact.
    # The write path's exact link search costs each new memory n dot products against about
    # 4 sqrt(n) approximate, which sets the threshold.
    # ann_probe_fraction: the share of the IVF lists a search scans (at least 24 lists)
    # ann_vector_dtype: how the approximate index stores a vector. "float16" (faiss
    # IndexIVFScalarQuantizer, QT_fp16) halves the bytes its scans read and the index holds. The
    # stored vectors are rounded to float16 (a relative error below 2**-11 a component): the
    # index's get/get_many/vectors/similarities return them rounded, and an atlas saved from it
    # saves them rounded. "float32" keeps IndexIVFFlat's exact vectors and answers. The exact
    # index below ann_threshold always stores float32.
    ann_threshold: int | None = 2048
    ann_probe_fraction: float = 0.08
    ann_vector_dtype: Literal["float16", "float32"] = "float16"
    # recall
    scoring: Literal["multiplicative", "linear"] = "multiplicative"
    linear_weights: tuple[float, float, float] = (0.5, 0.3, 0.2)
    weight_exponent: float = 0.25
    recency_exponent: float = 0.15
    recency_half_life: float = 90 * DAY
    fusion: Literal["convex", "rrf"] = "convex"
    candidate_k: int = 200
    candidate_min: int = 40
    candidate_ratio: float = 4.0
    rrf_k: float = 60.0
    vector_weight: float = 0.5
    keyword_weight: float = 0.5
    graph_weight: float = 1.0
    recent_weight: float = 0.3
    time_weight: float = 0.5
    time_reference: Literal["clock", "latest"] = "clock"
    relevance_floor: float | None = 0.1
    graph_hops: int = 2
    graph_hop_decay: float = 0.45
    graph_seeds: int = 100
    seed_ratio: float = 2.0
    seed_min_k: int = 40
    graph_fanout: int = 8
    graph_beam: float | None = 1.0
    relation_weights: tuple[tuple[str, float], ...] = RELATION_WEIGHTS
    recency_window: int = 5
    cross_session: bool = False
    cross_session_penalty: float = 0.85
    # entities (shared_core.text.entities; recall's entity path and walk: shared_core.engine.recall)
    entity_extraction: Literal["off", "keyphrases", "llm"] = "off"
    entity_phrases: int = 3
    entity_weight: float = 0.0
    entity_walk: float = 0.0
    entity_max_mentions: int = 50
    # context
    working_memory: int = 10
    context_candidates: float = 0.05
    context_neighbours: int = 12
    # list and count questions (shared_core.formulas.questions): their context recalls
    # list_candidates times as many memories and packs them in MMR order with list_diversity
    # (shared_core.formulas.diversity)
    list_diversity: float = 0.0
    list_candidates: float = 1.0
    # recall's second round (shared_core.engine.feedback): pseudo-relevance feedback
    feedback_weight: float = 0.5
    feedback_docs: int = 5
    feedback_terms: int = 8
    feedback_beta: float = 1.0
    feedback_min_k: int = 40
    # query decomposition by speaker (shared_core.engine.decompose): the speaker path
    speaker_weight: float = 1.0
    speaker_docs: int = 20
    speaker_min_k: int = 0
    speaker_list_factor: float = 3.0
    truncation_marker: str = " …[truncated]"
    # lifecycle (see shared_core.engine.lifecycle.manager; all off by default, on in AtlasConfig.managed())
    write_filter: bool = False
    write_threshold: float = 0.3
    contradiction_check: bool = False
    contradiction_similarity: float = 0.5
    contradiction_neighbors: int = 5
    contradiction_factor: float = 0.5
    compress_every: int | None = None
    merge_threshold: float = 0.92
    summary_below: float = 0.5
    #: Cosine at which two faded memories are neighbours in the graph whose Louvain communities
    #: become cluster summaries (chosen on LoCoMo dev, see benchmarks/README.md "Lifecycle quality").
    cluster_threshold: float = 0.35
    summary_min_size: int = 3
    summary_fade: float = 0.7
    chapter_size: int = 500
    max_bytes: int | None = None
    max_namespaces: int | None = None
    cleanup_pressure: float = 0.7
    prune_below: float | None = None
    prune_idle: float = 30 * DAY
    prune_every: int = 200

    def __new__(cls, *args: Any, **kwargs: Any) -> AtlasConfig:
        """Refuse positional arguments and unknown keywords with `UnknownFieldError` (an
        `InvalidInputError` and a `TypeError`) naming the closest field, before ``__init__``'s
        bare ``TypeError``."""
        if args:
            raise UnknownFieldError(f"AtlasConfig takes keyword arguments only, got {len(args)} positional")
        known = cls.__dataclass_fields__
        if not kwargs.keys() <= known.keys():
            raise UnknownFieldError.for_names("AtlasConfig", set(kwargs) - set(known), known)
        return object.__new__(cls)

    def __post_init__(self) -> None:
        positive = ("half_life", "reinforce_factor", "weight_cap", "recency_half_life", "rrf_k",
                    "max_content_chars")
        _check_fields(self, positive, _positive_number, "a positive number")
        non_negative = ("weight_floor", "weight_exponent", "recency_exponent", "vector_weight",
                        "keyword_weight", "graph_weight", "recent_weight", "time_weight",
                        "graph_hop_decay", "similar_threshold", "entity_weight", "entity_walk", "feedback_weight",
                        "feedback_beta", "speaker_weight", "speaker_list_factor")
        _check_fields(self, non_negative, _non_negative, ">= 0")
        _check_fields(self, ("max_query_chars",), _int_from_1, "an int >= 1")
        counts = ("similar_top", "candidate_k", "candidate_min", "graph_hops", "graph_seeds", "graph_fanout",
                  "recency_window", "working_memory", "entity_phrases", "entity_max_mentions", "feedback_docs",
                  "feedback_terms", "feedback_min_k", "context_neighbours", "speaker_docs", "speaker_min_k",
                  "seed_min_k")
        _check_fields(self, counts, _count, "an int >= 0")
        if self.ann_threshold is not None and (not isinstance(self.ann_threshold, int)
                                               or isinstance(self.ann_threshold, bool) or self.ann_threshold < 64):
            raise InvalidInputError(f"ann_threshold must be None or an int >= 64, got {self.ann_threshold!r}")
        if not isinstance(self.ann_probe_fraction, (int, float)) or not 0 < self.ann_probe_fraction <= 1:
            raise InvalidInputError(f"ann_probe_fraction must be in (0, 1], got {self.ann_probe_fraction!r}")
        if self.ann_vector_dtype not in ("float16", "float32"):
            raise InvalidInputError(f"ann_vector_dtype must be 'float16' or 'float32', got {self.ann_vector_dtype!r}")
        if self.relevance_floor is not None and (isinstance(self.relevance_floor, bool)
                                                 or not isinstance(self.relevance_floor, (int, float))
                                                 or not -1 <= self.relevance_floor <= 1):
            raise InvalidInputError(
                f"relevance_floor must be None or a number in [-1, 1], got {self.relevance_floor!r}")
        if self.graph_beam is not None and (isinstance(self.graph_beam, bool)
                                            or not isinstance(self.graph_beam, (int, float))
                                            or not 0 < self.graph_beam < math.inf):
            raise InvalidInputError(f"graph_beam must be None or a positive number, got {self.graph_beam!r}")
        if isinstance(self.context_candidates, bool) or not isinstance(self.context_candidates, (int, float)) \
                or not 0 < self.context_candidates < math.inf:
            raise InvalidInputError(f"context_candidates must be a positive number, got {self.context_candidates!r}")
        if isinstance(self.list_diversity, bool) or not isinstance(self.list_diversity, (int, float)) \
                or not 0 <= self.list_diversity <= 1:
            raise InvalidInputError(f"list_diversity must be a number in [0, 1], got {self.list_diversity!r}")
        if isinstance(self.list_candidates, bool) or not isinstance(self.list_candidates, (int, float)) \
                or not 1 <= self.list_candidates <= 20:
            raise InvalidInputError(f"list_candidates must be a number in [1, 20], got {self.list_candidates!r}")
        for name in ("candidate_ratio", "seed_ratio"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
                raise InvalidInputError(f"{name} must be a positive number, got {value!r}")
        if self.weight_floor >= self.weight_cap:
            raise InvalidInputError(
                f"weight_floor ({self.weight_floor}) must be below weight_cap ({self.weight_cap})")
        if self.max_nodes is not None and (not isinstance(self.max_nodes, int) or self.max_nodes < 1):
            raise InvalidInputError(f"max_nodes must be None or an int >= 1, got {self.max_nodes!r}")
        if not 0 < self.eviction_batch <= 0.5:
            raise InvalidInputError(f"eviction_batch must be in (0, 0.5], got {self.eviction_batch!r}")
        check.ttl(self.default_ttl, "AtlasConfig.default_ttl")
        if not 0 < self.cross_session_penalty <= 1:
            raise InvalidInputError(
                f"cross_session_penalty must be in (0, 1], got {self.cross_session_penalty!r}")
        if self.decay_unit not in ("seconds", "turns"):
            raise InvalidInputError(f"decay_unit must be 'seconds' or 'turns', got {self.decay_unit!r}")
        if self.weight_model not in ("simple", "rich"):
            raise InvalidInputError(f"weight_model must be 'simple' or 'rich', got {self.weight_model!r}")
        if self.fusion not in ("convex", "rrf"):
            raise InvalidInputError(f"fusion must be 'convex' or 'rrf', got {self.fusion!r}")
        if self.entity_extraction not in ("off", "keyphrases", "llm"):
            raise InvalidInputError(
                f"entity_extraction must be 'off', 'keyphrases' or 'llm', got {self.entity_extraction!r}")
        if self.entity_extraction == "off" and (self.entity_weight > 0 or self.entity_walk > 0):
            raise InvalidInputError("entity_weight and entity_walk need entity_extraction 'keyphrases' or 'llm' "
                                    "(with 'off' no memory has entities)")
        if self.time_reference not in ("clock", "latest"):
            raise InvalidInputError(f"time_reference must be 'clock' or 'latest', got {self.time_reference!r}")
        known = {r.value for r in Relation}
        for pair in self.relation_weights:
            if (not isinstance(pair, tuple) or len(pair) != 2 or pair[0] not in known
                    or not isinstance(pair[1], (int, float)) or not 0 <= pair[1] < math.inf):
                raise InvalidInputError(
                    f"relation_weights items must be (relation, weight >= 0) with a relation in "
                    f"{sorted(known)}, got {pair!r}")
        if self.scoring not in ("multiplicative", "linear"):
            raise InvalidInputError(
                f"scoring must be 'multiplicative' or 'linear', got {self.scoring!r}")
        if len(self.linear_weights) != 3 or any(w < 0 for w in self.linear_weights):
            raise InvalidInputError(f"linear_weights must be 3 numbers >= 0, got {self.linear_weights!r}")
        if not 0 <= self.similar_threshold <= 1:
            raise InvalidInputError(
                f"similar_threshold must be in [0, 1], got {self.similar_threshold!r}")
        self._check_lifecycle()

    def _check_lifecycle(self) -> None:
        unit = ("write_threshold", "contradiction_similarity", "contradiction_factor", "merge_threshold",
                "summary_fade", "cleanup_pressure", "cluster_threshold", "episodic_value")
        _check_fields(self, unit, _unit, "a number in [0, 1]")
        _check_fields(self, ("contradiction_neighbors", "summary_min_size", "chapter_size", "prune_every"),
                      _int_from_1, "an int >= 1")
        _check_fields(self, ("compress_every", "max_bytes", "max_namespaces"),
                      lambda v: v is None or _int_from_1(v), "None or an int >= 1")
        _check_fields(self, ("write_filter", "contradiction_check"), lambda v: isinstance(v, bool), "True or False")
        _check_fields(self, ("summary_below", "prune_idle"), _non_negative_number, "a number >= 0")
        _check_fields(self, ("prune_below",), lambda v: v is None or _non_negative_number(v), "a number >= 0")

    def replace(self, **changes: Any) -> AtlasConfig:
        """A copy with ``changes`` applied (and validated)."""
        known = {f.name for f in fields(self)}
        unknown = set(changes) - known
        if unknown:
            raise UnknownFieldError.for_names("AtlasConfig", unknown, known)
        return replace(self, **changes)

    # -- presets ---------------------------------------------------------------------------
    @classmethod
    def default(cls, **overrides: Any) -> AtlasConfig:
        """Multiplicative similarity x weight x recency; 30-day half-life."""
        return cls(**overrides)

    @classmethod
    def linear(cls, **overrides: Any) -> AtlasConfig:
        """The seed's linear score: 0.5 similarity + 0.3 weight + 0.2 recency."""
        return cls(**{"scoring": "linear", **overrides})

    @classmethod
    def rich(cls, **overrides: Any) -> AtlasConfig:
        """The seed's richer weight: importance + log(1 + accesses) + recency + association - decay."""
        return cls(**{"weight_model": "rich", **overrides})

    @classmethod
    def chat(cls, **overrides: Any) -> AtlasConfig:
        """A chat agent's working memory: decay counted in turns (half-life 200 writes)."""
        return cls(**{"decay_unit": "turns", "half_life": 200, "recency_window": 8, **overrides})

    @classmethod
    def managed(cls, **overrides: Any) -> AtlasConfig:
        """A self-cleaning memory: the write filter, the contradiction check, compression every
        200 writes and the cleanup rule (weight below 0.2 and unused for 30 days: removed)."""
        return cls(**{"write_filter": True, "contradiction_check": True, "compress_every": 200,
                      "prune_below": 0.2, **overrides})

    @classmethod
    def archive(cls, **overrides: Any) -> AtlasConfig:
        """Imported history or benchmarks: no time-based ranking, every memory counts alike.

        The clock is "now", possibly years after the history: recency against it would only
        favour the last imported sessions, so it is off; relative time cues ("last week") count
        back from the newest memory instead of the clock.
        """
        return cls(**{"weight_exponent": 0.0, "recency_exponent": 0.0, "recent_weight": 0.0,
                      "half_life": 1e12, "time_reference": "latest", **overrides})

    @classmethod
    def rrf(cls, **overrides: Any) -> AtlasConfig:
        """Reciprocal rank fusion of the paths (k = 60) instead of the calibrated weighted sum."""
        return cls(**{"fusion": "rrf", "vector_weight": 1.0, "keyword_weight": 1.0, **overrides})
