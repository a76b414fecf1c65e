"""The real components load and work with no network: the MiniLM embedder and the cl100k counter."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from shared_core import ElasticMemoryAtlas, MiniLMEmbedder, TiktokenCounter

pytestmark = pytest.mark.integration

_NO_NETWORK = """
import socket
def _refuse(*a, **k):
    raise OSError("network access attempted")
socket.socket.connect = _refuse
socket.create_connection = _refuse
socket.getaddrinfo = _refuse
"""


def test_model_and_encoding_load_with_the_network_cut_off() -> None:
    code = _NO_NETWORK + (
        "from shared_core import MiniLMEmbedder, TiktokenCounter\n"
        "v = MiniLMEmbedder().embed(['hello world'])\n"
        "assert v.shape == (1, 384)\n"
        "print(TiktokenCounter().count('hello world'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2"


def test_minilm_is_a_semantic_model() -> None:
    e = MiniLMEmbedder()
    v = e.embed(["The user prefers oat milk in coffee", "What milk does the user like?",
                 "The quarterly report is due on Friday"])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    assert v[0] @ v[1] > 0.5 > v[0] @ v[2]
    # batching does not change a text's vector
    assert np.allclose(e.embed(["What milk does the user like?"])[0], v[1], atol=1e-4)


_VARIED = ["", "ok", "The user prefers oat milk in coffee", "What milk does the user like?",
           "Caroline: I went to the LGBTQ support group yesterday and it was so powerful. [shares a photo]",
           "naïve café résumé — 東京 🚀", "word " * 400,  # past the 256-token window: truncated
           "Melanie: That's great! How did the pottery class go, and did you finish the bowl for your mum?",
           "short one", "The quarterly report is due on Friday"]


def test_batched_vectors_match_each_text_alone() -> None:
    """Length-sorted, per-batch padding gives each text the vector it gets alone (no padding at all)."""
    alone_model = MiniLMEmbedder(cache_size=0)
    alone = np.concatenate([alone_model.embed([t]) for t in _VARIED])
    for batch_size in (1, 3, 32):
        batched = MiniLMEmbedder(cache_size=0, batch_size=batch_size).embed(_VARIED)
        assert batched.shape == (len(_VARIED), 384)
        assert np.abs(batched - alone).max() < 1e-5, batch_size
    shuffled = [5, 0, 9, 2, 7, 1, 8, 3, 6, 4]
    again = alone_model.embed([_VARIED[i] for i in shuffled])
    assert np.abs(again - alone[shuffled]).max() < 1e-5  # rows follow the caller's order


def test_int8_compute_keeps_the_vectors_and_their_batch_independence() -> None:
    """compute="int8" (integer matmuls): close to the fp32 kernels' vectors, the same in any batch."""
    fp32 = MiniLMEmbedder(cache_size=0, compute="fp32").embed(_VARIED)
    model = MiniLMEmbedder(cache_size=0, compute="int8")
    alone = np.concatenate([model.embed([t]) for t in _VARIED])
    assert np.allclose(np.linalg.norm(alone, axis=1), 1.0, atol=1e-4)
    assert float(np.einsum("ij,ij->i", alone, fp32).min()) > 0.99
    for batch_size in (3, 32):
        batched = MiniLMEmbedder(cache_size=0, compute="int8", batch_size=batch_size).embed(_VARIED)
        assert np.abs(batched - alone).max() < 1e-5, batch_size


def test_idle_threads_sleep_unless_spin_is_asked_and_the_vectors_do_not_change() -> None:
    """spin=False (default) reaches onnxruntime as allow_spinning 0; spin=True leaves its default."""
    quiet = MiniLMEmbedder(cache_size=0)
    spinning = MiniLMEmbedder(cache_size=0, spin=True)
    vectors = quiet.embed(_VARIED)
    assert np.abs(vectors - spinning.embed(_VARIED)).max() < 1e-6
    assert quiet._session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning") == "0"
    with pytest.raises(Exception, match="allow_spinning"):  # not set: onnxruntime spins
        spinning._session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning")


def test_the_cache_answers_repeats_with_the_models_vectors() -> None:
    e = MiniLMEmbedder(cache_size=4)
    first = e.embed(["What milk does the user like?", "The quarterly report is due on Friday"])
    first[0] = 0.0  # the caller's matrix is its own
    repeat = e.embed(["What milk does the user like?"])
    assert e.cache_info()[0] == 1
    assert np.abs(repeat - MiniLMEmbedder(cache_size=0).embed(["What milk does the user like?"])).max() < 1e-5


def test_cl100k_counts_match_known_values() -> None:
    counter = TiktokenCounter()
    assert counter.count("") == 0
    assert counter.count("hello world") == 2
    assert counter.count("tiktoken is great!") == 6
    assert counter.count("<|endoftext|>") > 1  # special text is counted as ordinary text
    text = "Elastic Atlas packs memories into a budget: 1,234 tokens, exactly."
    assert counter.decode(counter.encode(text)) == text


def test_default_atlas_end_to_end() -> None:
    atlas = ElasticMemoryAtlas()
    atlas.add_memories(["User prefers oat milk", "User's sister lives in Berlin", "The car needs new tyres"],
                       namespace="alice", session_id="s1")
    hits = atlas.retrieve("what kind of milk does the user drink?", namespace="alice", top_k=1)
    assert hits[0].node.content == "User prefers oat milk"
    ctx = atlas.build_context("where does her sister live?", namespace="alice", token_budget=120, style="bullet")
    assert ctx.tokens == atlas.count_tokens(ctx.text) <= 120
    assert "Berlin" in ctx.text
