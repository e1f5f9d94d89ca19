"""Tests of models/tagger.py: SequenceTagger against the 0.1.0 functional tagger built from
Keras layers, padding, serialization, training with `fit`, and the BIO constraints."""

import keras
import numpy as np
import pytest

from seqlab.layers import CRF, LSTM, CharacterEncoder
from seqlab.models import SequenceTagger, bio_transition_constraints
from tests.conftest import constructor_arguments

TAGS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
WORDS, CHARS = 30, 12
TINY = dict(word_vocabulary_size=WORDS, char_vocabulary_size=CHARS, num_tags=len(TAGS),
            word_dim=4, char_dim=3, char_units=2, units=3, seed=5)
LENGTHS = [6, 3, 1, 4]


def tiny_tagger(use_crf, **overrides):
    forbidden, starts = bio_transition_constraints(TAGS) if use_crf else (None, None)
    return SequenceTagger(**{**TINY, **overrides}, use_crf=use_crf,
                          forbidden_transitions=forbidden, forbidden_start_tags=starts)


def tiny_batch(seed=0, lengths=LENGTHS, max_chars=5):
    """`(token_ids, char_ids, tag_ids)` with id 0 at padded words and characters."""
    rng = np.random.default_rng(seed)
    time = max(lengths)
    real = np.arange(time)[None, :] < np.array(lengths)[:, None]
    token_ids = np.where(real, rng.integers(1, WORDS, (len(lengths), time)), 0)
    word_chars = rng.integers(1, max_chars + 1, (len(lengths), time))
    char_real = real[..., None] & (np.arange(max_chars) < word_chars[..., None])
    char_ids = np.where(char_real, rng.integers(1, CHARS, char_real.shape), 0)
    tag_ids = np.where(real, rng.integers(0, len(TAGS), real.shape), 0)
    return token_ids.astype("int32"), char_ids.astype("int32"), tag_ids.astype("int32")


def functional_reference(model):
    """seqlab 0.1.0's functional tagger (its `build_model`) with `model`'s weights by name.

    Returns the functional model (to potentials under a CRF, as 0.1.0's `CRFModel` encoder)
    and, for a CRF tagger, a separate `CRF` layer with the CRF's weights.
    """
    token_ids = keras.Input((None,), dtype="int32", name="token_ids")
    char_ids = keras.Input((None, None), dtype="int32", name="char_ids")
    words = keras.layers.Embedding(WORDS, TINY["word_dim"], mask_zero=True,
                                   name="word_embedding")(token_ids)
    chars = CharacterEncoder(CHARS, TINY["char_dim"], TINY["char_units"],
                             kind=model.char_encoder_kind, name="char_encoder")(char_ids)
    hidden = keras.layers.Concatenate(name="word_features")([words, chars])
    hidden = keras.layers.Bidirectional(LSTM(TINY["units"], return_sequences=True),
                                        name="word_bilstm")(hidden)
    if model.use_crf:
        scores = keras.layers.Dense(len(TAGS), name="potentials")(hidden)
    else:
        scores = keras.layers.Dense(len(TAGS), activation="softmax",
                                    name="tag_probabilities")(hidden)
    reference = keras.Model([token_ids, char_ids], scores)
    for layer in reference.layers:
        if layer.weights:
            layer.set_weights(model.get_layer(layer.name).get_weights())
    crf = None
    if model.use_crf:
        forbidden, starts = bio_transition_constraints(TAGS)
        crf = CRF(len(TAGS), forbidden_transitions=forbidden, forbidden_start_tags=starts)
        crf.build((None, None, len(TAGS)))
        crf.set_weights(model.get_layer("crf").get_weights())
    return reference, crf


def randomize(model, seed=1):
    """Random weights everywhere (the CRF's boundary scores start at zero)."""
    rng = np.random.default_rng(seed)
    model.set_weights([rng.normal(scale=0.5, size=w.shape).astype("float32")
                       for w in model.get_weights()])


@pytest.mark.parametrize("use_crf", [False, True])
@pytest.mark.parametrize("char_encoder_kind", ["lstm", "cnn"])
def test_equals_the_functional_tagger_of_0_1_0_with_weights_copied_by_name(use_crf,
                                                                           char_encoder_kind):
    model = tiny_tagger(use_crf, char_encoder_kind=char_encoder_kind)
    randomize(model)
    expected_names = {"word_embedding", "char_encoder", "word_bilstm",
                      "potentials" if use_crf else "tag_probabilities"} | (
                          {"crf"} if use_crf else set())
    assert {layer.name for layer in model.layers if layer.weights} == expected_names
    reference, crf = functional_reference(model)
    token_ids, char_ids, tag_ids = tiny_batch()
    real = token_ids != 0
    scores = model((token_ids, char_ids)).numpy()
    reference_scores = reference([token_ids, char_ids]).numpy()
    np.testing.assert_allclose(scores[real], reference_scores[real], atol=1e-5)
    decoded = model.decode((token_ids, char_ids)).numpy()
    if use_crf:
        expected_tags = crf(reference_scores, mask=real).numpy()
        model.compile()
        loss = model.evaluate((token_ids, char_ids), tag_ids, batch_size=len(LENGTHS),
                              verbose=0)
        nll = -crf.log_likelihood(reference_scores, tag_ids, real).numpy()
        assert loss == pytest.approx(np.mean(nll), rel=1e-5)
    else:
        expected_tags = np.where(real, reference_scores.argmax(-1), 0)
    np.testing.assert_array_equal(decoded, expected_tags)


@pytest.mark.parametrize("use_crf", [False, True])
def test_padding_changes_no_output_loss_or_tag(use_crf):
    model = tiny_tagger(use_crf, dropout=0.0)
    randomize(model)
    model.compile()
    token_ids, char_ids, tag_ids = tiny_batch()
    real = token_ids != 0

    def pad(x, steps, chars=0):
        return np.pad(x, [(0, 0), (0, steps)] + ([(0, chars)] if x.ndim == 3 else []))

    padded = (pad(token_ids, 4), pad(char_ids, 4, 2))
    scores = model((token_ids, char_ids)).numpy()
    padded_scores = model(padded).numpy()
    np.testing.assert_allclose(padded_scores[:, :token_ids.shape[1]][real], scores[real],
                               atol=1e-5)  # other shapes, other float32 blocking
    decoded = model.decode(padded).numpy()
    np.testing.assert_array_equal(decoded[:, :token_ids.shape[1]],
                                  model.decode((token_ids, char_ids)).numpy())
    assert (decoded[pad(real, 4) == 0] == 0).all()
    one_row = model.decode((token_ids[2:3, :LENGTHS[2]], char_ids[2:3, :LENGTHS[2]])).numpy()
    np.testing.assert_array_equal(one_row[0], decoded[2, :LENGTHS[2]])

    batch = len(LENGTHS)
    loss = model.evaluate((token_ids, char_ids), tag_ids, batch_size=batch, verbose=0)
    padded_loss = model.evaluate(padded, pad(tag_ids, 4), batch_size=batch, verbose=0)
    assert padded_loss == pytest.approx(loss, rel=1e-5)
    if not use_crf:  # the mean over the real tokens, not the padded ones
        gold = np.take_along_axis(scores, tag_ids[..., None], -1)[..., 0]
        assert loss == pytest.approx(-np.mean(np.log(gold[real])), rel=1e-5)


@pytest.mark.parametrize("use_crf", [False, True])
def test_predict_tag_ids_gives_each_sentence_its_tags_without_padding(use_crf):
    model = tiny_tagger(use_crf)
    randomize(model)
    token_ids, char_ids, tag_ids = tiny_batch()
    decoded = model.decode((token_ids, char_ids)).numpy()
    expected = [row[:n].tolist() for row, n in zip(decoded, LENGTHS)]
    decode_function = model.make_decode_function()
    np.testing.assert_array_equal(decode_function(token_ids, char_ids).numpy(), decoded)
    # Whatever follows the char ids (a dataset's tags) is ignored.
    in_one_batch = model.predict_tag_ids([(token_ids, char_ids, tag_ids)], decode_function)
    # Each sentence alone, one padded step kept: see the test below for batches one step long.
    one_by_one = model.predict_tag_ids(
        [(token_ids[i:i + 1, :n + 1], char_ids[i:i + 1, :n + 1]) for i, n in enumerate(LENGTHS)],
        decode_function,
    )
    padded = model.predict_tag_ids(
        [(np.pad(token_ids, [(0, 0), (0, 3)]), np.pad(char_ids, [(0, 0), (0, 3), (0, 2)]))]
    )
    assert in_one_batch == one_by_one == padded == expected
    assert all(isinstance(tag_id, int) for row in in_one_batch for tag_id in row)


@pytest.mark.parametrize("use_crf", [False, True])
def test_decode_function_tags_a_batch_of_one_word_sentences(use_crf):
    model = tiny_tagger(use_crf)
    token_ids, char_ids, _ = tiny_batch(lengths=[1, 1])
    np.testing.assert_array_equal(model.make_decode_function()(token_ids, char_ids).numpy(),
                                  model.decode((token_ids, char_ids)).numpy())


@pytest.mark.parametrize("use_crf", [False, True])
def test_config_round_trip(use_crf):
    model = tiny_tagger(use_crf, char_encoder_kind="cnn", char_kernel_size=2, dropout=0.25)
    config = model.get_config()
    missing = [name for name in constructor_arguments(SequenceTagger) if name not in config]
    assert not missing
    assert keras.tree.flatten(config) == keras.tree.flatten(
        SequenceTagger.from_config(config).get_config()
    )
    if use_crf:
        forbidden, starts = bio_transition_constraints(TAGS)
        assert config["forbidden_transitions"] == sorted(forbidden)
        assert config["forbidden_start_tags"] == starts


@pytest.mark.parametrize("use_crf", [False, True])
def test_fit_learns_a_tiny_tagging_rule_and_the_keras_file_keeps_it(use_crf, tmp_path):
    """Tag = a function of the word id: `fit` lowers the loss and tags well; the saved and
    loaded model gives the same outputs and keeps its optimizer state."""
    token_ids, char_ids, _ = tiny_batch(seed=3, lengths=[7, 5, 6, 3, 7, 4, 2, 6])
    # Words below 10 are O, 10-19 start a LOC entity and 20-29 start a PER one.
    tag_ids = np.where(token_ids == 0, 0, np.select(
        [token_ids < 10, token_ids < 20], [0, 1], 3)).astype("int32")
    model = tiny_tagger(use_crf, dropout=0.0, units=8, word_dim=8)
    model.compile(keras.optimizers.Adam(0.05))
    history = model.fit((token_ids, char_ids), tag_ids, epochs=20, batch_size=8, verbose=0)
    losses = history.history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < 0.3 * losses[0]
    decoded = model.decode((token_ids, char_ids)).numpy()
    real = token_ids != 0
    assert np.mean(decoded[real] == tag_ids[real]) > 0.9

    path = tmp_path / "tagger.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, SequenceTagger) and loaded.use_crf == use_crf
    np.testing.assert_allclose(loaded((token_ids, char_ids)).numpy(),
                               model((token_ids, char_ids)).numpy(), atol=1e-6)
    np.testing.assert_array_equal(loaded.decode((token_ids, char_ids)).numpy(), decoded)
    assert int(loaded.optimizer.iterations) == int(model.optimizer.iterations) == 20
    np.testing.assert_allclose(loaded.optimizer.variables[-1].numpy(),
                               model.optimizer.variables[-1].numpy())


def test_crf_decoding_keeps_the_bio_constraints_before_training():
    model = tiny_tagger(True)
    randomize(model, seed=4)
    token_ids, char_ids, _ = tiny_batch(seed=5)
    for row, length in zip(model.decode((token_ids, char_ids)).numpy(), LENGTHS):
        tags = [TAGS[i] for i in row[:length]]
        for previous, tag in zip(["O"] + tags, tags):
            assert not tag.startswith("I-") or previous[2:] == tag[2:]


def test_bio_constraints_forbid_exactly_the_invalid_transitions():
    forbidden, starts = bio_transition_constraints(TAGS)
    assert starts == [2, 4]
    assert sorted(forbidden) == [[0, 2], [0, 4], [1, 4], [2, 4], [3, 2], [4, 2]]


def test_inputs_of_another_rank_are_refused_naming_both_shapes():
    # Character ids of rank 2 failed in the character encoder with "tuple index out of range".
    token_ids, char_ids, _ = tiny_batch()
    for model in (tiny_tagger(False), tiny_tagger(True)):
        with pytest.raises(ValueError, match=r"SequenceTagger reads \(token_ids \[batch, time\], "
                                             r"char_ids \[batch, time, chars\]\)\. Received: "
                                             r"shapes \(4, 6\) and \(4, 6\)"):
            model.decode((token_ids, char_ids[:, :, 0]))


def test_invalid_arguments_are_refused():
    with pytest.raises(ValueError, match="Received: units=0"):
        SequenceTagger(**{**TINY, "units": 0})
    with pytest.raises(ValueError, match="Received: dropout=1.0"):
        SequenceTagger(**{**TINY, "dropout": 1.0})
    with pytest.raises(ValueError, match="Received: char_encoder_kind='gru'"):
        SequenceTagger(**TINY, char_encoder_kind="gru")
    with pytest.raises(ValueError, match="need use_crf=True"):
        SequenceTagger(**TINY, forbidden_start_tags=[2])
    with pytest.raises(ValueError, match="compile it with loss='auto'"):
        tiny_tagger(True).compile(loss="mse")
