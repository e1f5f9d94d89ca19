"""Tests of models/char_lm.py: tiny models, against independent references where there is one."""

from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from seqlab.layers import reset_states
from seqlab.models import CharLanguageModel
from seqlab.models.char_lm import (
    GENERATE_SIGNATURE, MAX_NUM_CHARS, NEVER, ResetStatesAtEpochStart, TextGenerator,
)
from seqlab.models.samplers import GreedySampler, RandomSampler
from tests.conftest import constructor_arguments

VOCAB = 9
OLD_RUN = Path(__file__).parents[1] / "fixtures" / "v0.1.0" / "charrnn"


def tiny(**kwargs):
    arguments = dict(vocabulary_size=VOCAB, units=6, embedding_dim=4, seed=3)
    return CharLanguageModel(**{**arguments, **kwargs})


def random_ids(shape, seed=0):
    """Ids of characters (2 and up: 0 is padding, 1 is a vocabulary's unknown character)."""
    return np.random.default_rng(seed).integers(2, VOCAB, size=shape).astype("int32")


@pytest.mark.parametrize("kwargs", [
    {},
    {"kind": "lstm", "layers": 2, "embedding_dim": 0, "dropout": 0.1, "stateful": True,
     "batch_size": 3, "name": "mine"},
])
def test_get_config_round_trips(kwargs):
    model = tiny(**kwargs)
    config = model.get_config()
    missing = [a for a in constructor_arguments(CharLanguageModel) if a not in config]
    assert not missing
    assert CharLanguageModel.from_config(config).get_config() == config


@pytest.mark.parametrize("kwargs", [{}, {"kind": "lstm", "layers": 2, "embedding_dim": 0}])
def test_keras_save_and_load_give_the_same_outputs(kwargs, tmp_path):
    model = tiny(**kwargs)
    ids = random_ids((2, 7))
    expected = model(ids)
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert type(loaded) is CharLanguageModel and loaded.get_config() == model.get_config()
    np.testing.assert_allclose(loaded(ids), expected, atol=1e-6)
    np.testing.assert_array_equal(loaded.generate(ids[:, :3], 5), model.generate(ids[:, :3], 5))


def test_weights_of_a_0_1_0_functional_model_copy_by_layer_name():
    old = keras.saving.load_model(OLD_RUN / "model.keras")
    model = CharLanguageModel(old.output_shape[-1], kind="gru", units=8, embedding_dim=4, seed=7)
    model.build()
    copied = [layer.name for layer in model.layers if layer.weights]
    for name in copied:
        model.get_layer(name).set_weights(old.get_layer(name).get_weights())
    assert copied == ["embedding", "gru_0", "logits"]
    ids = random_ids((3, 12))
    np.testing.assert_allclose(model(ids), old(ids), atol=1e-6)


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_one_step_at_a_time_equals_the_full_sequence_call(kind):
    model = tiny(kind=kind, layers=2)
    ids = random_ids((3, 8))
    expected = model(ids).numpy()
    states = model.initial_states(3)
    assert [s.shape for s in states] == [(3, 6)] * (4 if kind == "lstm" else 2)
    stepped = []
    for t in range(8):
        logits, states = model.step(ids[:, t], states)
        stepped.append(logits)
    np.testing.assert_allclose(np.stack(stepped, axis=1), expected, atol=1e-5)
    # Two halves read with the carried states, and right padding, change nothing.
    first, states = model.call_with_states(ids[:, :5], model.initial_states(3))
    second, final_states = model.call_with_states(ids[:, 5:], states)
    np.testing.assert_allclose(np.concatenate([first, second], axis=1), expected, atol=1e-5)
    padded = np.pad(ids[:, 5:], [(0, 0), (0, 4)])
    padded_logits, padded_states = model.call_with_states(padded, states)
    np.testing.assert_allclose(padded_logits[:, :3], second, atol=1e-6)
    for padded_state, state in zip(padded_states, final_states):
        np.testing.assert_allclose(padded_state, state, atol=1e-6)


def test_state_names_follow_the_layers():
    assert tiny(kind="lstm", layers=2).state_names == ["lstm_0_h", "lstm_0_c", "lstm_1_h",
                                                        "lstm_1_c"]
    assert tiny().state_names == ["gru_0_h"]


def argmax_loop(model, prompt, num_steps, suppressed):
    """Greedy generation by re-reading the whole text for every new id (the seeds' loop)."""
    ids = list(prompt)
    for _ in range(num_steps):
        logits = model(np.array([ids], "int32"))[0, -1].numpy()
        logits[list(suppressed)] += NEVER
        ids.append(int(np.argmax(logits)))
    return ids[len(prompt):]


def test_greedy_generation_equals_an_argmax_loop_over_the_whole_text():
    model = tiny(kind="lstm", layers=2)
    model.build()
    # Ids 0 and 1 would win every step unless suppressed; id 4 is a close second of id 1.
    model.head.bias.assign(np.array([9.0, 8.0, 0, 0, 7.0, 0, 0, 0, 0], "float32"))
    prompts = [[3, 4, 5, 6], [7], [2, 8]]
    tokens = model.generate(prompts, 12, sampler=GreedySampler(), suppressed_ids=(0, 1))
    assert tokens.shape == (3, 12)
    for prompt, row in zip(prompts, tokens.numpy().tolist()):
        assert row == argmax_loop(model, prompt, 12, suppressed=(0, 1))
    assert not np.isin(tokens, [0, 1]).any()
    # By default only padding is suppressed.
    assert model.generate(prompts, 3).numpy().tolist() == [[1, 1, 1]] * 3


def test_sampled_generation_is_reproducible_and_independent_of_the_batch():
    model = tiny()
    prompts = [[3, 4, 5], [6]]

    def sample(prompts, seed):
        sampler = RandomSampler(temperature=1.5, seed=seed)
        return model.generate(prompts, 15, sampler=sampler).numpy().tolist()

    together = sample(prompts, seed=4)
    assert together == sample(prompts, seed=4) and together != sample(prompts, seed=5)
    # A right-padded row gets the ids it gets alone.
    assert together == [sample([prompt], seed=4)[0] for prompt in prompts]
    compiled = tf.function(lambda ids: model.generate(ids, 15, RandomSampler(1.5, seed=4)))
    assert compiled(tf.ragged.constant(prompts)).numpy().tolist() == together


# The characters of ids 2 to 8 (0 is padding, 1 the unknown character).
CHARS = ["\n", "a", "b", "c", "d", "e", "f"]


def text_generator(model, **kwargs):
    """A `TextGenerator` with plain `StringLookup` layers over `CHARS`."""
    lookup = keras.layers.StringLookup(vocabulary=CHARS, mask_token="", oov_token="[UNK]")
    inverse = keras.layers.StringLookup(vocabulary=CHARS, mask_token="", oov_token="[UNK]",
                                        invert=True)
    return TextGenerator(model, lookup, inverse, **kwargs)


def test_text_generator_greedy_equals_an_argmax_loop_over_the_whole_text():
    model = tiny(kind="lstm", layers=2)
    model.build()
    model.head.bias.assign(np.array([9.0, 8.0, 0, 0, 7.0, 0, 0, 0, 0], "float32"))
    generator = text_generator(model)
    assert generator.suppressed_ids == (0, 1)
    for prompt in ["abc", "f", "d\nea"]:
        ids = [CHARS.index(c) + 2 for c in prompt]
        expected = "".join(CHARS[i - 2] for i in argmax_loop(model, ids, 12, (0, 1)))
        assert generator.generate(prompt, 12, temperature=0.0) == prompt + expected
    # A character outside the vocabulary is read as the unknown id; an empty prompt as "\n".
    unknown = "".join(CHARS[i - 2] for i in argmax_loop(model, [2, 1], 5, (0, 1)))
    assert generator.generate("\nz", 5, temperature=0.0) == "\nz" + unknown
    assert generator.generate("", 5, temperature=0.0) == generator.generate("\n", 5, 0.0)[1:]
    # Only padding suppressed: the unknown character (bias 8) wins every step.
    assert text_generator(model, suppressed_ids=(0,)).generate("ab", 2, 0.0) == "ab[UNK][UNK]"


def test_text_generator_graph_takes_one_length_per_prompt():
    generator = text_generator(tiny())
    compiled = tf.function(generator.generate_strings, input_signature=GENERATE_SIGNATURE)
    texts = compiled(tf.constant(["ab", "c", "", "dd"]), tf.constant([5, 0, 3, -2]),
                     tf.zeros([4]), tf.zeros([4], tf.int32)).numpy().tolist()
    assert [t.decode("utf-8") for t in texts] == [
        generator.generate("ab", 5, temperature=0.0), "c",
        generator.generate("", 3, temperature=0.0), "dd",
    ]


def test_text_generator_seeds_reproduce_samples_and_temperature_zero_ignores_them():
    generator = text_generator(tiny())
    first = generator.generate("abc", 40, temperature=1.5, seed=1)
    assert len(first) == 43 and first.startswith("abc") and "[UNK]" not in first
    assert generator.generate("abc", 40, temperature=1.5, seed=1) == first
    assert generator.generate("abc", 40, temperature=1.5, seed=2) != first
    greedy = generator.generate("abc", 40, temperature=0.0, seed=1)
    assert generator.generate("abc", 40, temperature=0.0, seed=2) == greedy
    assert generator.generate("abc", 40, temperature=1.5, seed=3, top_k=1) == greedy
    # A padded batch of prompts gives each prompt the text it gets alone.
    batch = generator.generate(["abc", "d\nfe"], 9, temperature=1.0, seed=4)
    assert batch == [generator.generate(p, 9, temperature=1.0, seed=4) for p in ["abc", "d\nfe"]]
    # As the SavedModel refuses them: -1 was read as 0 and 2.9 as 2, without a word.
    for bad in (-1, 2.9, True, MAX_NUM_CHARS + 1):
        with pytest.raises(ValueError, match=rf"num_chars must be a whole number in \[0, "
                                             rf"MAX_NUM_CHARS={MAX_NUM_CHARS}\]\. Received: "
                                             rf"num_chars={bad!r}"):
            generator.generate("abc", bad)
    assert generator.generate("abc", np.int64(0)) == "abc"
    # The signature's seed is int32: 2**40 failed binding the inputs and 1.7 was read as 1.
    # A negative seed, which the SavedModel refuses, was taken.
    for bad in (2**40, 1.7, True, -1):
        with pytest.raises(ValueError, match=rf"seed must be a whole number in \[0, 2147483647\] "
                                             rf"\(as the SavedModel's\), or None for a fresh one\. "
                                             rf"Received: seed={bad!r}"):
            generator.generate("abc", 3, seed=bad)
    assert len(generator.generate("abc", 3, seed=None)) == 6  # a fresh seed, as RandomSampler
    assert generator.generate([], 3) == []  # was a graph error stacking an empty list


def test_generate_refuses_ids_it_would_read_as_others():
    """Float ids were truncated (4.7 read as 4); a suppressed id of -1 suppressed the last id
    and one past the vocabulary was numpy's IndexError."""
    model = tiny()
    for bad in (np.array([[4.7, 5.2]]), [[2.5]]):
        with pytest.raises(ValueError, match=rf"prompt_ids must be integer ids in \[0, {VOCAB}\)"):
            model.generate(bad, 3)
    with pytest.raises(ValueError, match=r"prompt_ids must be \[batch, time\] \(rank 2\)"):
        model.generate(np.array([2, 3]), 3)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=rf"prompt_ids must lie in \[0, vocabulary_size={VOCAB}\)"):
        model.generate([[2, VOCAB]], 3)
    for bad in (-1, VOCAB, 1.0):
        with pytest.raises(ValueError, match=rf"suppressed_ids must be ids in \[0, "
                                             rf"vocabulary_size={VOCAB}\)\. Received: {bad!r}"):
            model.generate([[2, 3]], 3, suppressed_ids=(0, bad))


def test_generation_leaves_a_stateful_models_states_alone():
    model = tiny(stateful=True, batch_size=2)
    ids = random_ids((2, 6))
    model(ids)
    stored = model.recurrent[0].states[0].numpy()
    assert np.abs(stored).sum() > 0
    # Any batch size, read from zero states, not from the stored ones.
    stateless = tiny()
    stateless.build()
    stateless.set_weights(model.get_weights())
    np.testing.assert_array_equal(model.generate([[3, 4], [5], [6]], 6),
                                  stateless.generate([[3, 4], [5], [6]], 6))
    np.testing.assert_array_equal(model.recurrent[0].states[0].numpy(), stored)


def test_fit_in_user_code_stateless_and_stateful():
    text = np.tile(np.arange(2, VOCAB, dtype="int32"), 40)  # a cycle through the ids
    windows = text[: 30 * 9].reshape(30, 9)
    dataset = tf.data.Dataset.from_tensor_slices((windows[:, :-1], windows[:, 1:])).batch(6)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model = tiny()
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss=loss)
    history = model.fit(dataset, epochs=4, verbose=0, shuffle=False).history["loss"]
    assert history[-1] < history[0] - 0.5
    # The cycle is learned: greedy generation continues it.
    assert model.generate([[2, 3, 4]], 6).numpy().tolist() == [[5, 6, 7, 8, 2, 3]]

    # Stateful: the callback zeroes the states carried over from the previous epoch.
    stateful = tiny(stateful=True, batch_size=6, kind="lstm")
    stateful.compile(optimizer=keras.optimizers.Adam(0.05), loss=loss)
    state_sums = []
    probe = keras.callbacks.LambdaCallback(
        on_epoch_begin=lambda epoch, logs: state_sums.append(stored_state_sum(stateful)),
        on_epoch_end=lambda epoch, logs: state_sums.append(stored_state_sum(stateful)),
    )
    history = stateful.fit(dataset, epochs=2, verbose=0, shuffle=False,
                           callbacks=[ResetStatesAtEpochStart(), probe]).history["loss"]
    assert np.isfinite(history).all()
    assert state_sums[0] == state_sums[2] == 0 and state_sums[1] > 0 and state_sums[3] > 0
    assert reset_states(stateful) == 1 and stored_state_sum(stateful) == 0


def stored_state_sum(model):
    """The sum of the first layer's stored states (0 before the model is built)."""
    states = model.recurrent[0].states or []
    return float(sum(np.abs(state.numpy()).sum() for state in states))


def test_bad_arguments_are_value_errors():
    with pytest.raises(ValueError, match="kind must be one of gru, lstm. Received: kind='rnn'"):
        tiny(kind="rnn")
    with pytest.raises(ValueError, match="units must be at least 1. Received: units=0"):
        tiny(units=0)
    with pytest.raises(ValueError, match="a stateful model needs its batch size"):
        tiny(stateful=True)
    with pytest.raises(ValueError, match=r"dropout must lie in \[0, 1\)"):
        tiny(dropout=1.0)
    with pytest.raises(ValueError, match="BeamSampler returns hypotheses"):
        tiny().generate([[2]], 3, sampler="beam")
