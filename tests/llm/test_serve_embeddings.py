"""``POST /v1/embeddings`` of ``hy-eval serve``: the hashed n-gram stand-in, through the
real ``openai`` SDK (which asks for base64 unless told otherwise)."""

import hashlib
import json
import math
import struct

import openai
import pytest

from hy_eval.llm import EMBEDDING_MODEL, ModelOptions, hashed_embedding, serve_in_thread


@pytest.fixture(scope="module")
def client():
    # No upstream is needed: embeddings never reach the provider.
    options = ModelOptions(
        provider="openai",
        model="gpt-up",
        base_url="http://127.0.0.1:9/v1",
        structured="json_schema",
        cache_mode="off",
        cache_path=None,
    )
    url, token, stop = serve_in_thread(options)
    yield openai.OpenAI(base_url=url, api_key=token, max_retries=0)
    stop()


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b, strict=True))


def embed(client, texts, **kw):
    return client.embeddings.create(model=EMBEDDING_MODEL, input=texts, **kw)


def test_vectors_are_deterministic_and_unit_length(client):
    texts = ["Tim works at Stripe.", "用户在北京工作", "", "!!!"]
    first = embed(client, texts, encoding_format="float")
    second = embed(client, texts, encoding_format="float")
    assert first.model == EMBEDDING_MODEL and "stand-in" in first.model
    assert [d.index for d in first.data] == [0, 1, 2, 3]
    for a, b, text in zip(first.data, second.data, texts, strict=True):
        assert a.embedding == b.embedding == hashed_embedding(text)
        assert len(a.embedding) == 1536
        assert math.fsum(x * x for x in a.embedding) == pytest.approx(1.0, abs=1e-12)
    assert first.usage.prompt_tokens == first.usage.total_tokens > 0


def test_the_sdk_s_default_base64_carries_the_same_vector_as_float32(client):
    text = "John is a nurse in Berlin."
    decoded = embed(client, text).data[0].embedding  # the SDK asked for base64
    exact = hashed_embedding(text)
    packed = [struct.unpack("<f", struct.pack("<f", x))[0] for x in exact]
    assert list(decoded) == packed


def test_dimensions_are_honoured(client):
    vector = embed(client, "coffee", dimensions=64, encoding_format="float").data[0].embedding
    assert len(vector) == 64
    assert math.fsum(x * x for x in vector) == pytest.approx(1.0)
    with pytest.raises(openai.BadRequestError, match="dimensions"):
        embed(client, "coffee", dimensions=0)


def test_texts_that_share_words_are_closer_than_texts_that_do_not():
    tea = hashed_embedding("The user likes green tea.")
    assert cosine(tea, hashed_embedding("the user likes tea")) > 0.6
    assert abs(cosine(tea, hashed_embedding("John moved to Oslo last year."))) < 0.2
    # Case and full-width letters fold; Chinese shares its characters' bigrams.
    assert cosine(hashed_embedding("TEA"), hashed_embedding("ｔｅａ")) == pytest.approx(1.0)
    zh = hashed_embedding("用户喜欢喝绿茶")
    assert cosine(zh, hashed_embedding("用户喜欢喝茶")) > cosine(
        zh, hashed_embedding("约翰搬到了奥斯陆")
    )


def test_the_vectors_are_pinned():
    """A change to the features changes stored vectors: bump EMBEDDING_MODEL's version
    and this digest together."""
    texts = ["Tim works at Stripe.", "用户在北京工作", ""]
    data = json.dumps([hashed_embedding(t, 32) for t in texts]).encode()
    assert EMBEDDING_MODEL == "hy-eval-stand-in-hashed-ngrams-v1"
    assert hashlib.sha256(data).hexdigest()[:16] == PINNED


PINNED = "afde5379ccad05d6"


@pytest.mark.parametrize(
    "kw, words",
    [
        ({"input": [[1, 2, 3]]}, "no token arrays"),
        ({"input": []}, "non-empty list"),
        ({"input": "x", "encoding_format": "int8"}, "encoding_format"),
    ],
)
def test_what_the_stand_in_cannot_take_is_a_400(client, kw, words):
    with pytest.raises(openai.BadRequestError, match=words):
        client.embeddings.create(model=EMBEDDING_MODEL, **kw)


def test_another_embedding_model_is_a_404(client):
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        client.embeddings.create(model="text-embedding-3-small", input="x")
