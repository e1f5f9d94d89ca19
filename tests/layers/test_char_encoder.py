"""CharacterEncoder: one vector per word from its characters."""

import numpy as np
import pytest
import tensorflow as tf

from seqlab.layers import CharacterEncoder
from tests.conftest import run_layer_test


@pytest.mark.parametrize("kind", ["lstm", "cnn"])
def test_character_encoder_ignores_character_padding(kind):
    encoder = CharacterEncoder(10, embedding_dim=4, units=3, kind=kind, seed=1)
    char_ids = np.array([[[1, 2, 3], [4, 0, 0], [0, 0, 0]]], dtype="int32")
    output = encoder(char_ids).numpy()
    assert output.shape == (1, 3, encoder.output_dim)
    np.testing.assert_allclose(encoder(np.pad(char_ids, ((0, 0), (0, 0), (0, 4)))).numpy(),
                               output, atol=1e-6)
    np.testing.assert_array_equal(encoder.compute_mask(char_ids).numpy(), [[True, True, False]])
    # A word's vector depends on its own characters only, not on its neighbours.
    alone = encoder(char_ids[:, :1]).numpy()
    np.testing.assert_allclose(alone[0, 0], output[0, 0], atol=1e-6)
    different = encoder(np.array([[[3, 2, 1]]], dtype="int32")).numpy()
    assert np.abs(different[0, 0] - output[0, 0]).max() > 1e-6


@pytest.mark.parametrize("kind", ["lstm", "cnn"])
def test_words_without_characters_encode_as_empty_words(kind):
    # A batch of empty words (a served request of padding only) has no character step; the
    # BiLSTM's loop of no steps could not stack its outputs.
    encoder = CharacterEncoder(10, embedding_dim=4, units=3, kind=kind, seed=1)
    empty_words = encoder(np.zeros((2, 3, 1), "int32")).numpy()
    np.testing.assert_array_equal(encoder(np.zeros((2, 3, 0), "int32")).numpy(), empty_words)
    traced = tf.function(encoder, input_signature=[tf.TensorSpec([None, None, None], tf.int32)])
    np.testing.assert_array_equal(traced(tf.zeros((2, 3, 0), tf.int32)).numpy(), empty_words)
    np.testing.assert_allclose(traced(tf.constant([[[1, 2]]])).numpy(),
                               encoder(np.array([[[1, 2]]], "int32")).numpy(), atol=1e-6)


@pytest.mark.parametrize("kind", ["lstm", "cnn"])
def test_character_encoder_layer_contract(kind, tmp_path):
    char_ids = np.random.default_rng(0).integers(0, 10, size=(2, 3, 5)).astype("int32")
    run_layer_test(
        CharacterEncoder,
        dict(vocabulary_size=10, embedding_dim=4, units=3, kind=kind, kernel_size=3, seed=1),
        char_ids,
        expected_output_shape=(2, 3, 6 if kind == "lstm" else 3),
        tmp_path=tmp_path,
    )


def test_character_encoder_refuses_bad_arguments():
    with pytest.raises(ValueError, match="Received: kind='gru'"):
        CharacterEncoder(10, kind="gru")
    with pytest.raises(ValueError, match="Received: units=0"):
        CharacterEncoder(10, units=0)
