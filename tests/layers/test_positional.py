"""Tests for layers/positional.py: sinusoidal encoding and the token-plus-position embedding."""

import math

import keras
import numpy as np
import pytest

from seqlab.layers import PositionalEncoding
from seqlab.layers import TokenAndPositionEmbedding
from tests.conftest import run_layer_test
from tests.conftest import saved_model_round_trip

IDS = np.array([[3, 4, 5, 6, 0, 0], [1, 2, 0, 0, 0, 0]])  # id 0 is padding

# PE(pos, 2i) = sin(pos / 10000^(2i/6)), PE(pos, 2i+1) = cos(same), d_model = 6.
PE_POSITION_0 = [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
PE_POSITION_3 = [
    0.1411200080598672,  # sin(3)
    -0.9899924966004454,  # cos(3)
    0.13879810108005056,  # sin(3 / 10000^(1/3))
    0.990320699135675,  # cos(3 / 10000^(1/3))
    0.006463259070189646,  # sin(3 / 10000^(2/3))
    0.9999791129229608,  # cos(3 / 10000^(2/3))
]


def test_positional_encoding_exact_values_at_positions_0_and_3():
    encoding = np.asarray(PositionalEncoding()(np.zeros((2, 4, 6), "float32")))
    np.testing.assert_allclose(encoding[:, 0], [PE_POSITION_0] * 2, atol=1e-6)
    np.testing.assert_allclose(encoding[:, 3], [PE_POSITION_3] * 2, atol=1e-6)


def test_positional_encoding_adds_to_inputs_and_honours_start_index():
    layer = PositionalEncoding()
    x = np.random.default_rng(0).normal(size=(2, 5, 6)).astype("float32")
    encoding = np.asarray(layer(np.zeros_like(x)))
    np.testing.assert_allclose(layer(x), x + encoding, atol=1e-6)
    step = layer(x[:, 3:4], start_index=3)
    np.testing.assert_allclose(step, x[:, 3:4] + encoding[:, 3:4], atol=1e-6)


def masked_mean(outputs, mask):
    mask = mask[..., None].astype("float32")
    return (np.asarray(outputs) * mask).sum(axis=1) / mask.sum(axis=1)


def test_positional_encoding_passes_the_mask_on():
    embedded = keras.layers.Embedding(10, 6, mask_zero=True)(IDS)
    pooled = keras.layers.GlobalAveragePooling1D()(PositionalEncoding()(embedded))
    encoding = np.asarray(PositionalEncoding()(embedded * 0))
    expected = masked_mean(np.asarray(embedded) + encoding, IDS != 0)
    np.testing.assert_allclose(pooled, expected, atol=1e-5)


def test_token_and_position_embedding_scales_tokens_and_adds_positions():
    layer = TokenAndPositionEmbedding(vocabulary_size=10, sequence_length=8, embedding_dim=6)
    outputs = np.asarray(layer(IDS))
    table = np.asarray(layer.token_embedding.embeddings)
    positions = np.asarray(PositionalEncoding()(np.zeros((1, 6, 6), "float32")))
    np.testing.assert_allclose(outputs, math.sqrt(6) * table[IDS] + positions, atol=1e-5)
    np.testing.assert_allclose(outputs[0, 3], math.sqrt(6) * table[6] + PE_POSITION_3, atol=1e-5)
    step = np.asarray(layer(IDS[:, 3:4], start_index=3))
    np.testing.assert_allclose(step, outputs[:, 3:4], atol=1e-5)


def test_token_and_position_embedding_mask_zero_passes_the_padding_mask_on():
    masked = TokenAndPositionEmbedding(10, 8, 6, mask_zero=True)
    outputs = masked(IDS)
    pooled = keras.layers.GlobalAveragePooling1D()(outputs)
    np.testing.assert_allclose(pooled, masked_mean(outputs, IDS != 0), atol=1e-5)
    np.testing.assert_array_equal(masked.compute_mask(IDS), IDS != 0)
    assert TokenAndPositionEmbedding(10, 8, 6).compute_mask(IDS) is None

    inputs = keras.Input((None,), dtype="int32")
    model = keras.Model(inputs, keras.layers.GlobalAveragePooling1D()(masked(inputs)))
    np.testing.assert_allclose(model(IDS), pooled, atol=1e-5)


def test_layer_contracts_and_saved_model(tmp_path):
    run_layer_test(
        PositionalEncoding,
        dict(max_wavelength=500),
        np.zeros((2, 5, 6), "float32"),
        expected_output_shape=(2, 5, 6),
        run_fit=False,  # no weights to train
        tmp_path=tmp_path,
    )
    model = run_layer_test(
        TokenAndPositionEmbedding,
        dict(vocabulary_size=10, sequence_length=8, embedding_dim=6, mask_zero=True),
        IDS,
        expected_output_shape=(2, 6, 6),
        tmp_path=tmp_path,
    )
    saved_model_round_trip(model, IDS, tmp_path)


def test_token_and_position_embedding_rejects_inputs_longer_than_sequence_length():
    with pytest.raises(ValueError, match="Received: inputs_shape=\\(2, 6\\), sequence_length=4"):
        TokenAndPositionEmbedding(10, 4, 6)(IDS)


def test_bad_arguments_raise():
    for make, message in [
        (lambda: TokenAndPositionEmbedding(0, 8, 6), "Received: vocabulary_size=0"),
        (lambda: TokenAndPositionEmbedding(10, -2, 6), "Received: sequence_length=-2"),
        (lambda: TokenAndPositionEmbedding(10, 8, 2.5), "Received: embedding_dim=2.5"),
        (
            lambda: TokenAndPositionEmbedding(10, 8, 6, max_wavelength=1),
            "Received: max_wavelength=1",
        ),
        (lambda: PositionalEncoding(max_wavelength=0), "Received: max_wavelength=0"),
    ]:
        with pytest.raises(ValueError, match=message):
            make()
