"""Tests of the beam search of models/samplers.py on toy step functions with known scores."""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from seqlab.models.samplers import BeamSampler, GreedySampler, get_sampler, length_penalty

END = 0


class SecondOrderToy:
    """A toy model: log P(next | previous two tokens, position) from a fixed random table.

    The previous-but-one token lives in the state, so beam search must reorder the state with
    its hypotheses to get the scores right.
    """

    def __init__(self, vocab, steps, seed, batch=1):
        rng = np.random.default_rng(seed)
        self.vocab, self.steps = vocab, steps
        self.first = rng.normal(size=(batch, vocab)).astype("float32") * 2
        self.table = rng.normal(size=(steps, vocab, vocab, vocab)).astype("float32") * 2

    def start(self):
        batch = len(self.first)
        state = {"position": tf.zeros([batch], tf.int32), "previous": tf.fill([batch], -1)}
        return tf.constant(self.first), state

    def step(self, token_ids, state):
        # The first token's "previous" is -1: row -1 of the table (any fixed row will do).
        previous = tf.math.floormod(state["previous"], self.vocab)
        index = tf.stack([state["position"], previous, token_ids], axis=1)
        logits = tf.gather_nd(self.table, index)
        return logits, {"position": state["position"] + 1, "previous": token_ids}

    def log_probs(self, row, tokens):
        """log P of a token sequence for batch row `row`, computed directly in NumPy."""

        def log_softmax(x):
            return x - np.log(np.sum(np.exp(x - x.max()))) - x.max()

        total, logits, previous = 0.0, self.first[row], self.vocab - 1
        for position, token in enumerate(tokens):
            total += log_softmax(logits)[token]
            logits, previous = self.table[position, previous, token], token
        return total


def brute_force(toy, row, alpha, n):
    """The n best finished sequences (ending with END within `steps`), by every sequence."""
    scored = {}
    for length in range(1, toy.steps + 1):
        for body in itertools.product(range(1, toy.vocab), repeat=length - 1):
            tokens = body + (END,)
            score = toy.log_probs(row, tokens) / ((5 + length) / 6) ** alpha
            scored[tokens] = score
    best = sorted(scored.items(), key=lambda item: -item[1])[:n]
    return best


def hypotheses(output, row):
    """`[(tokens up to and with END, score)]` of one row of a `BeamSearchOutput`."""
    result = []
    for tokens, score, length in zip(
        output.tokens[row].numpy(), output.scores[row].numpy(), output.lengths[row].numpy()
    ):
        result.append((tuple(int(t) for t in tokens[:length]), float(score)))
    return result


@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.5])
def test_a_beam_as_wide_as_the_search_space_finds_the_brute_force_n_best(alpha):
    # vocab 4 (END + 3 tokens), 4 steps: at most 3 ** 3 = 27 live prefixes and 27 * 4 = 108
    # candidates a step, so a beam of 108 keeps every one and beam search is exhaustive; any
    # error in scoring, the finished set, early stopping or the reordering of the state shows up
    # as a different n-best list.
    toy = SecondOrderToy(vocab=4, steps=4, seed=3, batch=2)
    sampler = BeamSampler(beam_width=108, length_penalty=alpha, num_return=5)
    output = sampler(toy.step, *toy.start(), num_steps=toy.steps, end_token_id=END)
    for row in range(2):
        expected = brute_force(toy, row, alpha, 5)
        found = hypotheses(output, row)
        assert [tokens for tokens, _ in found] == [tokens for tokens, _ in expected]
        np.testing.assert_allclose(
            [s for _, s in found], [s for _, s in expected], rtol=1e-5, atol=1e-5
        )
    assert output.finished.numpy().all()


def test_a_small_beam_finds_the_best_sequence_that_greedy_misses():
    # Token 1 is the likelier first token (0.6), but every continuation of it is uncertain;
    # token 2 (0.4) is followed by END with probability 0.9. Best: [2, END], 0.36 > 0.6 * 0.5.
    def step(token_ids, state):
        after_one = tf.math.log([[0.25, 0.5, 0.25]])  # END, 1, 2
        after_two = tf.math.log([[0.9, 0.05, 0.05]])
        logits = tf.where((token_ids == 1)[:, None], after_one, after_two)
        return logits, state

    first = tf.math.log([[1e-6, 0.6, 0.4]])
    greedy, _, _ = GreedySampler()(step, first, (), num_steps=3, end_token_id=END)
    assert greedy.numpy().tolist() == [[1, 1, 1]]
    output = BeamSampler(beam_width=2, length_penalty=0.0)(
        step, first, (), num_steps=3, end_token_id=END
    )
    assert hypotheses(output, 0)[0][0] == (2, END)
    np.testing.assert_allclose(output.log_probs.numpy(), [[np.log(0.4 * 0.9)]], rtol=1e-5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_width_one_equals_greedy(seed):
    toy = SecondOrderToy(vocab=6, steps=8, seed=seed, batch=4)
    greedy, _, _ = GreedySampler()(toy.step, *toy.start(), num_steps=8, end_token_id=END)
    beam = BeamSampler(beam_width=1, length_penalty=0.0)(
        toy.step, *toy.start(), num_steps=8, end_token_id=END
    )
    np.testing.assert_array_equal(beam.tokens[:, 0].numpy(), greedy.numpy())


def test_finished_hypotheses_are_kept_and_not_extended():
    # After END the toy would strongly prefer token 3: an extended hypothesis would show it.
    def step(token_ids, state):
        logits = tf.where(
            (token_ids == END)[:, None],
            tf.constant([[0.0, 0.0, 0.0, 9.0]]),
            tf.constant([[2.0, 1.0, 0.5, -1.0]]),
        )
        return logits, state

    output = BeamSampler(beam_width=3, length_penalty=0.6, num_return=3)(
        step, tf.constant([[0.0, 2.0, 1.0, 0.0]]), (), num_steps=5, end_token_id=END
    )
    log_softmax = tf.nn.log_softmax([2.0, 1.0, 0.5, -1.0]).numpy()
    for tokens, length, log_prob, score in zip(
        output.tokens[0].numpy(), output.lengths[0].numpy(), output.log_probs[0].numpy(),
        output.scores[0].numpy(),
    ):
        assert tokens[length - 1] == END and (tokens[length:] == END).all()
        assert END not in tokens[: length - 1]
        first = tf.nn.log_softmax([0.0, 2.0, 1.0, 0.0]).numpy()[tokens[0]]
        expected = first + sum(log_softmax[t] for t in tokens[1:length])
        np.testing.assert_allclose(log_prob, expected, rtol=1e-5)
        np.testing.assert_allclose(score, log_prob / ((5 + length) / 6) ** 0.6, rtol=1e-5)


def test_rows_of_a_batch_are_searched_independently_and_the_graph_equals_eager():
    toy = SecondOrderToy(vocab=5, steps=6, seed=7, batch=3)
    sampler = BeamSampler(beam_width=3, length_penalty=0.6, num_return=2)
    batch = sampler(toy.step, *toy.start(), num_steps=6, end_token_id=END)
    for row in range(3):
        single = SecondOrderToy(vocab=5, steps=6, seed=7, batch=3)
        single.first = toy.first[row : row + 1]
        alone = sampler(single.step, *single.start(), num_steps=6, end_token_id=END)
        expected, found = hypotheses(batch, row), hypotheses(alone, 0)
        assert [tokens for tokens, _ in found] == [tokens for tokens, _ in expected]
        np.testing.assert_allclose([s for _, s in found], [s for _, s in expected], rtol=1e-6)

    @tf.function(input_signature=[tf.TensorSpec([None, 5]), tf.TensorSpec([], tf.int32)])
    def search(first, num_steps):
        state = {"position": tf.zeros([tf.shape(first)[0]], tf.int32),
                 "previous": tf.fill([tf.shape(first)[0]], -1)}
        return sampler(toy.step, first, state, num_steps, end_token_id=END)

    graph = search(tf.constant(toy.first), tf.constant(6))
    for eager_part, graph_part in zip(batch, graph):
        np.testing.assert_allclose(eager_part.numpy(), graph_part.numpy(), rtol=1e-6)


def test_unfinished_hypotheses_fill_the_n_best_list_after_the_finished_ones():
    # END is nearly impossible: at most a few hypotheses end within 3 steps.
    toy = SecondOrderToy(vocab=4, steps=3, seed=5)
    toy.table[..., END] -= 30.0
    toy.first[..., END] = 0.0  # one likely single-token hypothesis: [END]
    output = BeamSampler(beam_width=4, length_penalty=1.0, num_return=4)(
        toy.step, *toy.start(), num_steps=3, end_token_id=END
    )
    finished = output.finished[0].numpy()
    assert finished[0] and not finished[1:].any()
    assert hypotheses(output, 0)[0][0] == (END,)
    assert (output.lengths[0, 1:].numpy() == 3).all()
    unfinished_scores = output.scores[0, 1:].numpy()
    assert (np.diff(unfinished_scores) <= 0).all()
    np.testing.assert_allclose(
        unfinished_scores, output.log_probs[0, 1:].numpy() / length_penalty(3, 1.0).numpy(),
        rtol=1e-6,
    )


def test_without_an_end_token_every_hypothesis_runs_all_steps():
    toy = SecondOrderToy(vocab=4, steps=5, seed=11)
    output = BeamSampler(beam_width=2, num_return=2)(toy.step, *toy.start(), num_steps=5)
    assert output.tokens.shape == (1, 2, 5)
    assert not output.finished.numpy().any() and (output.lengths.numpy() == 5).all()


def test_beam_search_is_chosen_by_name():
    sampler = get_sampler("beam", beam_width=3, length_penalty=1.0, num_return=2)
    assert isinstance(sampler, BeamSampler)
    assert repr(sampler) == "BeamSampler(beam_width=3, length_penalty=1.0, num_return=2)"


def test_bad_beam_settings_are_refused():
    with pytest.raises(ValueError, match="beam_width must be a positive integer. Received: "
                                         "beam_width=0"):
        BeamSampler(beam_width=0)
    with pytest.raises(ValueError, match="length_penalty \\(alpha\\) must be a number >= 0"):
        BeamSampler(length_penalty=-0.5)
    with pytest.raises(ValueError, match="num_return must be an integer from 1 to "
                                         "beam_width=2. Received: num_return=3"):
        BeamSampler(beam_width=2, num_return=3)
