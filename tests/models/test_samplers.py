"""Tests of models/samplers.py on toy step functions whose logits are known."""

import numpy as np
import pytest
import tensorflow as tf

from seqlab.models.samplers import GreedySampler, RandomSampler, get_sampler

VOCAB = 7


def counting_step(token_ids, state):
    """A toy model with a state: the next token prefers (token + state) % VOCAB; state counts."""
    count = state["count"] + 1
    favourite = (token_ids + count[:, 0]) % VOCAB
    logits = 3.0 * tf.one_hot(favourite, VOCAB) + 0.1 * tf.cast(tf.range(VOCAB), tf.float32)
    return logits, {"count": count}


def start(batch=1):
    logits = tf.tile(tf.one_hot([2], VOCAB), [batch, 1])
    return logits, {"count": tf.zeros([batch, 1], tf.int32)}


def python_loop(sampler, logits, state, num_steps):
    """The same decoding, one eager step at a time in Python, with explicit state."""
    sampler.start(logits, num_steps)
    tokens = []
    for step in range(num_steps):
        token = tf.cast(sampler.get_next_token(logits, step), tf.int32)
        tokens.append(token.numpy())
        logits, state = counting_step(token, state)
    return np.stack(tokens, axis=1)


def test_greedy_loop_equals_a_python_loop_with_explicit_state():
    sampler = get_sampler("greedy")
    tokens, _, state = sampler(counting_step, *start(), num_steps=6)
    # 2, then (2 + 1) % 7 = 3, (3 + 2) % 7 = 5, (5 + 3) % 7 = 1, ...
    assert tokens.numpy().tolist() == [[2, 3, 5, 1, 5, 3]]
    assert state["count"].numpy().tolist() == [[6]]  # every chosen token was fed back
    np.testing.assert_array_equal(tokens, python_loop(sampler, *start(), 6))


def test_sampling_loop_equals_a_python_loop_and_a_tf_function():
    sampler = RandomSampler(temperature=1.5, seed=[4, 5])
    eager, _, _ = sampler(counting_step, *start(2), num_steps=12)
    np.testing.assert_array_equal(eager, python_loop(sampler, *start(2), 12))
    graph = tf.function(lambda: sampler(counting_step, *start(2), num_steps=12)[0])()
    np.testing.assert_array_equal(eager, graph)


def test_temperature_zero_is_argmax():
    logits = tf.random.stateless_normal([50, VOCAB], seed=[1, 2])
    cold = RandomSampler(temperature=0.0, seed=9)
    cold.start(logits, 1)
    chosen = cold.get_next_token(logits, 0)
    np.testing.assert_array_equal(chosen, np.argmax(logits, axis=-1))
    greedy, _, _ = GreedySampler()(counting_step, *start(), num_steps=8)
    cold, _, _ = RandomSampler(temperature=0.0, seed=1)(counting_step, *start(), num_steps=8)
    np.testing.assert_array_equal(greedy, cold)


def test_temperature_per_row_mixes_greedy_and_sampled_rows():
    logits = tf.zeros([4, VOCAB]) + tf.one_hot([1, 1, 1, 1], VOCAB)
    sampler = RandomSampler(temperature=tf.constant([0.0, 50.0, 0.0, 50.0]), seed=[1, 2, 3, 4])
    sampler.start(logits, 40)
    draws = np.stack([sampler.get_next_token(logits, step).numpy() for step in range(40)])
    assert (draws[:, [0, 2]] == 1).all()
    assert len(np.unique(draws[:, [1, 3]])) > 3  # nearly uniform at a high temperature


def test_same_seed_same_tokens_and_rows_do_not_depend_on_the_batch():
    def run(seeds):
        sampler = RandomSampler(temperature=1.0, seed=tf.constant(seeds))
        return sampler(counting_step, *start(len(seeds)), num_steps=20)[0].numpy()

    first, again = run([7, 8, 9]), run([7, 8, 9])
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first[0], first[1])  # another seed, another sample
    np.testing.assert_array_equal(run([8])[0], first[1])


def test_a_shorter_decoding_is_a_prefix_of_a_longer_one():
    sampler = RandomSampler(temperature=2.0, seed=[3, 11])
    short, _, _ = sampler(counting_step, *start(2), num_steps=5)
    long, _, _ = sampler(counting_step, *start(2), num_steps=40)
    np.testing.assert_array_equal(short, long[:, :5])


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_samples_follow_softmax_of_logits_over_temperature(temperature):
    logits = tf.constant([[1.0, 0.0, 2.0, -1.0]])
    rows = 4000
    sampler = RandomSampler(temperature=temperature, seed=tf.range(rows))

    @tf.function  # one draw for each of 4000 seeds: a graph runs the per-row draws quickly
    def draw(logits):
        sampler.start(logits, 1)
        return sampler.get_next_token(logits, 0)

    draws = draw(tf.tile(logits, [rows, 1])).numpy()
    frequencies = np.bincount(draws, minlength=4) / rows
    expected = tf.nn.softmax(logits[0] / temperature).numpy()
    np.testing.assert_allclose(frequencies, expected, atol=0.03)


def test_top_k_samples_only_the_k_best_tokens():
    logits = tf.tile(tf.constant([[0.5, 2.0, 0.0, 1.9, 1.0]]), [300, 1])
    for top_k, expected in [(2, {1, 3}), (1, {1})]:
        sampler = RandomSampler(temperature=5.0, top_k=top_k, seed=tf.range(300))
        sampler.start(logits, 1)
        assert set(sampler.get_next_token(logits, 0).numpy().tolist()) == expected


def test_excluded_tokens_are_never_drawn_at_any_temperature():
    # Tokens 0 and 1 carry the -1e9 that seqlab's models add to ids they must never choose.
    # Divided by a temperature of 1e12 that is -0.001, as likely as the others: the sampler
    # must still leave them out (and a row whose every logit is that low keeps them all).
    rows = 400
    logits = tf.tile(tf.constant([[-1e9, -1e9, 0.5, 2.0, 1.0]]), [rows, 1])
    for temperature in (1.0, 1e12):
        sampler = RandomSampler(temperature=temperature, seed=tf.range(rows))
        sampler.start(logits, 1)
        assert set(sampler.get_next_token(logits, 0).numpy().tolist()) == {2, 3, 4}
    all_low = tf.fill([rows, 3], -1e9)
    sampler = RandomSampler(temperature=1.0, seed=tf.range(rows))
    sampler.start(all_low, 1)
    assert set(sampler.get_next_token(all_low, 0).numpy().tolist()) == {0, 1, 2}


def test_end_token_finishes_rows_and_stops_the_loop_early():
    def step(token_ids, state):
        # Row 0 goes 2 -> 3 -> 4 -> 0 (end); row 1 repeats 5 forever.
        after = tf.where(token_ids == 5, 5, (token_ids + 1) % 5)
        return tf.one_hot(after, VOCAB), state

    logits = tf.one_hot([2, 5], VOCAB)
    tokens, _, _ = GreedySampler()(step, logits, (), num_steps=6, end_token_id=0)
    assert tokens.numpy().tolist() == [[2, 3, 4, 0, 0, 0], [5, 5, 5, 5, 5, 5]]
    both_end = tf.one_hot([3, 4], VOCAB)
    tokens, _, _ = GreedySampler()(step, both_end, (), num_steps=10, end_token_id=0)
    assert tokens.numpy().tolist() == [[3, 4, 0], [4, 0, 0]]  # stopped when both had ended


def test_zero_steps_give_an_empty_sequence_per_row():
    tokens, logits, _ = GreedySampler()(counting_step, *start(3), num_steps=0)
    assert tokens.shape == (3, 0) and logits.shape == (3, VOCAB)


def test_bad_sampler_settings_are_refused():
    with pytest.raises(ValueError, match="sampler must be one of greedy, random, beam. "
                                         "Received: 'nucleus'"):
        get_sampler("nucleus")
    with pytest.raises(ValueError, match="temperature must be 0 \\(argmax\\) or positive"):
        RandomSampler(temperature=-1.0)
    with pytest.raises(ValueError, match="top_k must be a non-negative integer. Received: top_k="):
        RandomSampler(top_k=2.5)
    with pytest.raises(RuntimeError, match=r"call start\(\) before get_next_token\(\)"):
        RandomSampler().get_next_token(tf.zeros([1, 3]), 0)


@pytest.mark.parametrize("name", ["greedy", "random"])
def test_zero_steps_give_an_empty_row_per_batch_row_also_in_a_graph(name):
    def step_fn(token_ids, state):
        return tf.one_hot((token_ids + 1) % 5, 5), state

    sampler = get_sampler(name)

    @tf.function(input_signature=[tf.TensorSpec([None, 5]), tf.TensorSpec([], tf.int32)])
    def decode(logits, num_steps):
        return sampler(step_fn, logits, (), num_steps)[0]

    assert decode(tf.one_hot([2, 4, 0], 5), tf.constant(0)).shape == (3, 0)
    assert decode(tf.one_hot([2], 5), tf.constant(3)).shape == (1, 3)
