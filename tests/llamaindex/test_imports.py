"""The public surface of llamaindex_atlas, pinned; LlamaIndex idioms every class follows."""

from __future__ import annotations

import doctest
import subprocess
import sys

import pytest
from llama_index.core.bridge.pydantic import BaseModel

import llamaindex_atlas
from llamaindex_atlas import AtlasMemory, AtlasMemoryBlock, AtlasRetriever, _convert
from shared_core import ElasticMemoryAtlas, HashingEmbedder

EXPECTED_ALL = ["AtlasMemory", "AtlasMemoryBlock", "AtlasRetriever", "__version__"]


def test_all_is_pinned() -> None:
    assert sorted(llamaindex_atlas.__all__) == sorted(EXPECTED_ALL)
    for name in EXPECTED_ALL:
        assert hasattr(llamaindex_atlas, name)


def test_version_comes_from_the_distribution() -> None:
    import shared_core

    assert llamaindex_atlas.__version__ == shared_core.__version__


@pytest.mark.parametrize("cls", [AtlasMemory, AtlasMemoryBlock, AtlasRetriever])
def test_class_name_is_defined(cls: type) -> None:
    assert cls.class_name() == cls.__name__  # type: ignore[attr-defined]


@pytest.mark.parametrize("cls", [AtlasMemory, AtlasMemoryBlock])
def test_every_pydantic_field_is_described_and_the_atlas_is_private(cls: type[BaseModel]) -> None:
    undescribed = [name for name, field in cls.model_fields.items() if not field.description]
    assert undescribed == []
    assert "atlas" not in cls.model_fields
    assert "_atlas" in cls.__private_attributes__


@pytest.mark.parametrize("cls", [AtlasMemory, AtlasMemoryBlock, AtlasRetriever])
def test_atlas_namespace_are_keywords_of_init_and_from_defaults(cls: type) -> None:
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=16))
    for build in (cls, cls.from_defaults):  # type: ignore[attr-defined]
        obj = build(atlas=atlas, namespace="alice", session_id="s1")
        assert obj.atlas is atlas
        assert obj.namespace == "alice"
        assert obj.session_id == "s1"


@pytest.mark.parametrize("cls", [AtlasMemory, AtlasMemoryBlock])
def test_token_limit_and_style_are_keywords_of_init_and_from_defaults(cls: type) -> None:
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=16))
    for build in (cls, cls.from_defaults):  # type: ignore[attr-defined]
        obj = build(atlas=atlas, token_limit=123, style="bullet")
        assert (obj.token_limit, obj.style) == (123, "bullet")


@pytest.mark.parametrize("cls", [AtlasMemory, AtlasMemoryBlock, AtlasRetriever])
def test_a_new_atlas_is_made_when_none_is_given(cls: type) -> None:
    first, second = cls(), cls()
    assert isinstance(first.atlas, ElasticMemoryAtlas)
    assert first.atlas is not second.atlas


@pytest.mark.parametrize("cls", [AtlasMemory, AtlasMemoryBlock, AtlasRetriever])
def test_anything_but_an_atlas_is_refused(cls: type) -> None:
    with pytest.raises(TypeError, match="ElasticMemoryAtlas"):
        cls(atlas={"not": "an atlas"})


def test_docstring_examples_run() -> None:
    result = doctest.testmod(_convert, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


def test_shared_core_does_not_pull_in_llama_index() -> None:
    code = "import sys, shared_core; print(any(m.startswith('llama_index') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
