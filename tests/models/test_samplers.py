"""Tests of models/samplers.py on toy step functions whose logits are known."""

import numpy as np
import pytest
import tensorflow as tf

from seqlab.models.samplers import BeamSampler, GreedySampler, RandomSampler, get_sampler

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


@pytest.mark.parametrize("temperature", [1e-37, 1.2e-38, 1e-45])
def test_a_tiny_positive_temperature_is_argmax_not_an_overflow(temperature):
    # 50 / 1e-37 overflows float32: the softmax was NaN, every draw the excluded id 0.
    rows = 200
    logits = tf.tile(tf.constant([[-1e9, 50.0, 3.0, 1.0]]), [rows, 1])
    sampler = RandomSampler(temperature=temperature, seed=tf.range(rows))
    sampler.start(logits, 1)
    np.testing.assert_array_equal(sampler.get_next_token(logits, 0), np.ones(rows))


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


def next_token_step(token_ids, state):
    return tf.one_hot((token_ids + 1) % 4, 4), state


@pytest.mark.parametrize("name", ["greedy", "random"])
def test_an_empty_batch_gives_an_empty_result_eagerly_and_in_a_graph(name):
    # An empty batch once made the random sampler's per-row draws (tf.map_fn) fail.
    sampler = get_sampler(name)
    tokens, logits, _ = sampler(next_token_step, tf.zeros([0, 4]), (), 3)
    assert tokens.shape == (0, 3) and logits.shape == (0, 4)

    @tf.function(input_signature=[tf.TensorSpec([None, 4]), tf.TensorSpec([], tf.int32)])
    def decode(logits, num_steps):
        return sampler(next_token_step, logits, (), num_steps)[0]

    assert decode(tf.zeros([0, 4]), tf.constant(3)).shape == (0, 3)
    assert decode(tf.one_hot([1, 2], 4), tf.constant(3)).shape == (2, 3)


@pytest.mark.parametrize("temperature", [float("nan"), float("inf"), np.float32("nan")])
def test_a_python_temperature_that_is_not_finite_is_refused(temperature):
    with pytest.raises(ValueError, match="temperature must be 0 \\(argmax\\) or positive and "
                                         "finite. Received: temperature="):
        RandomSampler(temperature=temperature)


def test_a_tensor_temperature_with_nan_fails_instead_of_decoding_by_argmax():
    # NaN > 0 is False: the NaN row was decoded by argmax without a word.
    sampler = RandomSampler(temperature=tf.constant([1.0, float("nan")]), seed=[1, 2])
    logits = tf.zeros([2, 4])
    with pytest.raises(tf.errors.InvalidArgumentError, match="temperature must be finite"):
        sampler(next_token_step, logits, (), 2)

    @tf.function(input_signature=[tf.TensorSpec([None])])
    def decode(temperature):
        sampled = RandomSampler(temperature=temperature, seed=3)
        return sampled(next_token_step, tf.zeros([2, 4]), (), 2)[0]

    assert decode(tf.constant([0.0, 2.0])).shape == (2, 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="temperature must be finite"):
        decode(tf.constant([float("inf"), 1.0]))
    # A negative one is no argmax either (-0.5 > 0 is False, as NaN's was).
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"temperature must be 0 \(argmax\) or positive"):
        decode(tf.constant([1.0, -0.5]))


def test_a_bool_top_k_is_refused():
    with pytest.raises(ValueError, match="top_k must be a non-negative integer. "
                                         "Received: top_k=True"):
        RandomSampler(top_k=True)


def test_seed_none_draws_a_seed_as_keras_does_and_odd_seeds_are_refused():
    # seed=None was taken, then failed at the first decoding converting None to a tensor.
    logits, state = start(batch=2)
    tokens = python_loop(RandomSampler(1.0, seed=None), logits, state, 4)
    assert tokens.shape == (2, 4)
    # Drawn at random: 20 samplers of one seed would have a chance of 2**-589 (31 bits each).
    seeds = {RandomSampler(seed=None).seed for _ in range(20)}
    assert len(seeds) > 1 and all(isinstance(seed, int) for seed in seeds)
    for seed in (True, 1.5):
        with pytest.raises(ValueError, match=r"seed must be an int, an int tensor or None"):
            RandomSampler(seed=seed)


@pytest.mark.parametrize("name", ["greedy", "random", "beam"])
def test_a_negative_num_steps_is_refused_alike_by_every_sampler(name):
    sampler = get_sampler(name)
    for num_steps in (-1, True, 2.0):
        with pytest.raises(ValueError, match="num_steps must be a non-negative integer. "
                                             f"Received: num_steps={num_steps!r}"):
            sampler(next_token_step, tf.one_hot([1], 4), (), num_steps)
    # A tensor is not refused: the largest of an empty batch's limits is the most negative
    # int32 (as models/translator.py computes it), and that decodes no step.
    output = sampler(next_token_step, tf.one_hot([1], 4), (), tf.constant(-2**31))
    tokens = output.tokens if name == "beam" else output[0]
    assert tokens.shape[0] == 1 and tokens.shape[-1] == 0


@pytest.mark.parametrize("end_token_id", [None, 0])
def test_beam_slots_beyond_the_distinct_hypotheses_are_empty_and_marked(end_token_id):
    # Vocabulary 4 and 1 step: 4 hypotheses exist, 6 are asked for. The last 2 slots once
    # repeated a real hypothesis's tokens and length.
    logits = tf.constant([[0.0, 1.0, 2.0, 3.0]])
    output = BeamSampler(beam_width=6, length_penalty=0.0, num_return=6)(
        next_token_step, logits, (), 1, end_token_id=end_token_id
    )
    tokens, scores, log_probs, lengths, finished = (part[0].numpy() for part in output)
    real = np.isfinite(scores)
    assert real.tolist() == [True] * 4 + [False] * 2
    assert sorted(tokens[real, 0].tolist()) == [0, 1, 2, 3]  # each hypothesis once
    np.testing.assert_allclose(
        np.sort(log_probs[real]), np.sort(tf.nn.log_softmax(logits[0]).numpy()), rtol=1e-6
    )
    assert (lengths[real] == 1).all() and (lengths[~real] == 0).all()
    assert (log_probs[~real] == -np.inf).all() and not finished[~real].any()
    assert (tokens[~real] == (end_token_id or 0)).all()
    assert finished.sum() == (1 if end_token_id == 0 else 0)
