"""Tests of layers/crf.py: the CRF's quantities against brute-force enumeration, masks,
gradients, training with CRFModel, serialization and argument checks."""

import itertools
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from seqlab.layers import CRF, LSTM, CRFModel
from seqlab.layers.crf import FORBIDDEN_SCORE
from tests.conftest import assert_allclose_structure, run_layer_test, saved_model_round_trip

NUM_TAGS = 3
# Row 0: all real; row 1: padding at the end; row 2: a hole; row 3: one step; row 4: none.
MASK = np.array(
    [[1, 1, 1, 1], [1, 1, 1, 0], [1, 0, 1, 1], [0, 1, 0, 0], [0, 0, 0, 0]], dtype=bool
)


def random_crf(use_boundary_transitions=True, seed=0):
    crf = CRF(NUM_TAGS, use_boundary_transitions=use_boundary_transitions)
    crf.build((None, None, NUM_TAGS))
    rng = np.random.default_rng(seed)
    crf.transitions.assign(rng.normal(size=(NUM_TAGS, NUM_TAGS)).astype("float32"))
    if use_boundary_transitions:
        crf.start_transitions.assign(rng.normal(size=NUM_TAGS).astype("float32"))
        crf.end_transitions.assign(rng.normal(size=NUM_TAGS).astype("float32"))
    return crf


def potentials_like(mask, seed=1):
    return np.random.default_rng(seed).normal(size=mask.shape + (NUM_TAGS,)).astype("float32")


def enumerate_scores(crf, potentials, mask):
    """{tag sequence over the real steps: s(x, y)} for one row, by the definition."""
    transitions = crf.transitions.numpy()
    start = crf.start_transitions.numpy() if crf.use_boundary_transitions else np.zeros(NUM_TAGS)
    end = crf.end_transitions.numpy() if crf.use_boundary_transitions else np.zeros(NUM_TAGS)
    steps = np.flatnonzero(mask)
    scores = {}
    for tags in itertools.product(range(NUM_TAGS), repeat=len(steps)):
        if not tags:
            scores[tags] = 0.0
            continue
        score = start[tags[0]] + end[tags[-1]]
        score += sum(potentials[t, tag] for t, tag in zip(steps, tags))
        score += sum(transitions[a, b] for a, b in zip(tags[:-1], tags[1:]))
        scores[tags] = score
    return scores


def log_sum_exp(values):
    values = np.asarray(list(values), dtype="float64")
    return float(np.log(np.sum(np.exp(values - values.max()))) + values.max())


@pytest.mark.parametrize("use_boundary_transitions", [True, False])
def test_log_partition_and_viterbi_match_brute_force_enumeration(use_boundary_transitions):
    crf = random_crf(use_boundary_transitions)
    potentials = potentials_like(MASK)
    log_z = crf.log_partition(potentials, MASK).numpy()
    tags, best_scores = crf.viterbi_decode(potentials, MASK)
    tags, best_scores = tags.numpy(), best_scores.numpy()
    for row in range(len(MASK)):
        scores = enumerate_scores(crf, potentials[row], MASK[row])
        expected_log_z = log_sum_exp(scores.values()) if MASK[row].any() else 0.0
        np.testing.assert_allclose(log_z[row], expected_log_z, atol=1e-5)
        best = max(scores, key=scores.get)
        expected_tags = np.zeros(MASK.shape[1], dtype=int)
        expected_tags[np.flatnonzero(MASK[row])] = best
        np.testing.assert_array_equal(tags[row], expected_tags)
        np.testing.assert_allclose(best_scores[row], scores[best], atol=1e-5)


@pytest.mark.parametrize("with_mask", [True, False])
def test_viterbi_of_sequences_one_step_long_in_a_graph(with_mask):
    # One step: the best tag maximises potential + start + end; inside a tf.function (as in
    # a SavedModel) the backward pass has no later step to read.
    crf = random_crf()
    potentials = potentials_like(np.ones((4, 1), bool), seed=3)
    mask = np.array([[True], [True], [False], [True]]) if with_mask else None
    # The time dimension unknown when traced, as in an exported serving signature.
    signature = [tf.TensorSpec([None, None, NUM_TAGS], tf.float32)]
    if with_mask:
        signature.append(tf.TensorSpec([None, None], tf.bool))
    tags, scores = tf.function(crf.viterbi_decode, input_signature=signature)(
        *([potentials, mask] if with_mask else [potentials])
    )
    totals = potentials[:, 0] + crf.start_transitions.numpy() + crf.end_transitions.numpy()
    expected = np.argmax(totals, axis=1)
    real = np.array([True, True, not with_mask, True])
    np.testing.assert_array_equal(tags.numpy()[real, 0], expected[real])
    np.testing.assert_allclose(scores.numpy()[real], totals.max(axis=1)[real], atol=1e-6)
    if with_mask:
        assert tags.numpy()[2, 0] == 0 and scores.numpy()[2] == 0


def test_forbidden_transitions_are_never_decoded_and_drop_out_of_the_partition():
    crf = random_crf()
    forbidden, forbidden_starts = [[0, 1], [2, 1], [1, 1]], [1]
    constrained = CRF(NUM_TAGS, forbidden_transitions=forbidden,
                      forbidden_start_tags=forbidden_starts)
    constrained.build((None, None, NUM_TAGS))
    constrained.set_weights(crf.get_weights())
    potentials = potentials_like(MASK, seed=5)
    potentials[..., 1] += 3.0  # tag 1 would win everywhere without the constraints
    log_z = constrained.log_partition(potentials, MASK).numpy()
    tags = constrained(potentials, mask=MASK).numpy()
    for row in range(len(MASK)):
        allowed = {
            path: score for path, score in enumerate_scores(crf, potentials[row], MASK[row]).items()
            if not (path and path[0] in forbidden_starts)
            and not any([a, b] in forbidden for a, b in zip(path[:-1], path[1:]))
        }
        expected_log_z = log_sum_exp(allowed.values()) if MASK[row].any() else 0.0
        np.testing.assert_allclose(log_z[row], expected_log_z, atol=1e-4)
        best = max(allowed, key=allowed.get)
        np.testing.assert_array_equal(tags[row][MASK[row]], best)


def test_sequence_score_and_likelihood_match_the_definition():
    crf = random_crf()
    potentials = potentials_like(MASK)
    rng = np.random.default_rng(3)
    tag_ids = rng.integers(0, NUM_TAGS, size=MASK.shape)
    score = crf.sequence_score(potentials, tag_ids, MASK).numpy()
    likelihood = crf.log_likelihood(potentials, tag_ids, MASK).numpy()
    for row in range(len(MASK)):
        scores = enumerate_scores(crf, potentials[row], MASK[row])
        gold = tuple(tag_ids[row][MASK[row]])
        np.testing.assert_allclose(score[row], scores[gold], atol=1e-5)
        expected = scores[gold] - (log_sum_exp(scores.values()) if MASK[row].any() else 0.0)
        np.testing.assert_allclose(likelihood[row], expected, atol=1e-5)
    assert np.all(likelihood <= 1e-6)


def test_no_mask_equals_an_all_true_mask():
    crf = random_crf()
    potentials = potentials_like(MASK)
    everything = np.ones(MASK.shape, bool)
    assert_allclose_structure(
        crf.log_partition(potentials), crf.log_partition(potentials, everything), atol=1e-6
    )
    assert_allclose_structure(
        crf.viterbi_decode(potentials), crf.viterbi_decode(potentials, everything), atol=1e-6
    )


def test_gradients_are_finite_and_the_log_partition_gradient_is_the_marginals():
    crf = random_crf()
    potentials = tf.constant(potentials_like(MASK))
    tag_ids = np.zeros(MASK.shape, dtype="int32")
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(potentials)
        log_z_of_row_2 = crf.log_partition(potentials, MASK)[2]
        loss = -tf.reduce_sum(crf.log_likelihood(potentials, tag_ids, MASK))
    for gradient in tape.gradient(loss, [potentials] + crf.trainable_variables):
        assert np.all(np.isfinite(gradient.numpy()))
    # d log Z / d x_t[j] = p(y_t = j | x): check row 2 (with a hole) by enumeration.
    marginals = tape.gradient(log_z_of_row_2, potentials).numpy()[2]
    scores = enumerate_scores(crf, potentials.numpy()[2], MASK[2])
    log_z_row = log_sum_exp(scores.values())
    expected = np.zeros((MASK.shape[1], NUM_TAGS))
    for tags, score in scores.items():
        for t, tag in zip(np.flatnonzero(MASK[2]), tags):
            expected[t, tag] += np.exp(score - log_z_row)
    np.testing.assert_allclose(marginals, expected, atol=1e-5)


def test_masked_steps_change_nothing():
    """Padding values and extra padding leave every quantity unchanged."""
    crf = random_crf()
    potentials = potentials_like(MASK)
    tag_ids = np.random.default_rng(4).integers(0, NUM_TAGS, size=MASK.shape)
    noisy = np.where(MASK[..., None], potentials, 100.0).astype("float32")
    longer_mask = np.pad(MASK, ((0, 0), (0, 3)))
    longer = np.pad(potentials, ((0, 0), (0, 3), (0, 0)), constant_values=-7.0)
    longer_tags = np.pad(tag_ids, ((0, 0), (0, 3)), constant_values=2)
    expected = crf.log_likelihood(potentials, tag_ids, MASK).numpy()
    np.testing.assert_allclose(crf.log_likelihood(noisy, tag_ids, MASK), expected, atol=1e-5)
    np.testing.assert_allclose(
        crf.log_likelihood(longer, longer_tags, longer_mask), expected, atol=1e-5
    )
    tags = crf(potentials, mask=MASK).numpy()
    np.testing.assert_array_equal(crf(longer, mask=longer_mask).numpy()[:, :4], tags)
    np.testing.assert_array_equal(crf(noisy, mask=MASK).numpy(), tags)


def test_layer_contract(tmp_path):
    potentials = potentials_like(MASK)
    model = run_layer_test(
        CRF,
        {"num_tags": NUM_TAGS, "use_boundary_transitions": True,
         "transitions_regularizer": "l2", "forbidden_transitions": [[0, 2]],
         "forbidden_start_tags": [2]},
        potentials,
        expected_output_shape=(len(MASK), MASK.shape[1]),
        run_fit=False,  # the output is integer tags; training goes through CRFModel
        tmp_path=tmp_path,
    )
    assert model.outputs[0].dtype == "int32"
    saved_model_round_trip(model, potentials, tmp_path)


def test_the_mask_of_an_embedding_reaches_the_crf():
    token_ids = keras.Input((None,), dtype="int32")
    hidden = keras.layers.Embedding(10, 4, mask_zero=True)(token_ids)
    tags = CRF(NUM_TAGS)(keras.layers.Dense(NUM_TAGS)(hidden))
    model = keras.Model(token_ids, tags)
    x = np.array([[3, 4, 5, 0, 0], [6, 0, 0, 0, 0]])
    decoded = model(x).numpy()
    assert np.all(decoded[x == 0] == 0)
    np.testing.assert_array_equal(model(x[:, :3]).numpy(), decoded[:, :3])


def tagger(num_tags=NUM_TAGS, recurrent=False):
    """Embedding (mask_zero) [-> BiLSTM] -> Dense potentials -> CRF."""
    token_ids = keras.Input((None,), dtype="int32")
    hidden = keras.layers.Embedding(20, 8, mask_zero=True)(token_ids)
    if recurrent:
        hidden = keras.layers.Bidirectional(LSTM(4, return_sequences=True))(hidden)
    return CRFModel(keras.Model(token_ids, keras.layers.Dense(num_tags)(hidden)))


def toy_tagging_data(rows=32, time=6):
    """Tag = token id mod 3, padding at the end of every row."""
    rng = np.random.default_rng(0)
    x = rng.integers(1, 20, size=(rows, time))
    lengths = rng.integers(2, time + 1, size=rows)
    x[np.arange(time)[None, :] >= lengths[:, None]] = 0
    return x.astype("int32"), (x % NUM_TAGS).astype("int32")


def test_crf_model_learns_and_padding_changes_no_loss(tmp_path):
    model = tagger()
    model.compile(keras.optimizers.Adam(0.05))
    x, y = toy_tagging_data()
    history = model.fit(x, y, epochs=8, batch_size=16, verbose=0).history["loss"]
    assert history[-1] < 0.5 * history[0]
    decoded = model.predict(x, verbose=0)
    assert np.mean(decoded[x != 0] == y[x != 0]) > 0.9
    assert np.all(decoded[x == 0] == 0)

    loss = model.evaluate(x, y, batch_size=32, verbose=0)
    padded_x, padded_y = np.pad(x, ((0, 0), (0, 4))), np.pad(y, ((0, 0), (0, 4)))
    padded_loss = model.evaluate(padded_x, padded_y, batch_size=32, verbose=0)
    assert padded_loss == pytest.approx(loss, abs=1e-5)
    np.testing.assert_array_equal(model.predict(padded_x, verbose=0)[:, :6], decoded)

    path = tmp_path / "tagger.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, CRFModel)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), decoded)
    assert loaded.crf.get_config() == model.crf.get_config()
    # The SavedModel of a CRFModel is checked with the NER pipeline's serving signature
    # (tests/pipelines/test_ner.py); the CRF layer's own with `test_layer_contract`.


def test_sample_weights_weight_sequences():
    model = tagger(recurrent=True)  # the mask also flows through seqlab's LSTM
    assert isinstance(CRFModel(model.encoder, CRF(NUM_TAGS)), CRFModel)  # crf by position
    model.compile("adam")
    x, y = toy_tagging_data(rows=4)
    per_sequence = model.negative_log_likelihood(x, y).numpy()
    weights = np.array([1.0, 0.0, 0.0, 2.0])
    expected = (per_sequence[0] + 2 * per_sequence[3]) / 4
    assert model.evaluate(x, y, sample_weight=weights, verbose=0) == pytest.approx(
        expected, rel=1e-5
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_tags": 0}, "Received: num_tags=0"),
        ({"num_tags": 2.5}, "Received: num_tags=2.5"),
        ({"num_tags": True}, "Received: num_tags=True"),
        ({"num_tags": 3, "use_boundary_transitions": "yes"},
         "Received: use_boundary_transitions='yes'"),
        ({"num_tags": 3, "forbidden_transitions": [[0, 3]]},
         r"Received: forbidden_transitions=\[\[0, 3\]\]"),
        ({"num_tags": 3, "forbidden_transitions": [[0, 1, 2]]},
         r"must hold pairs \[from_tag, to_tag\]"),
        ({"num_tags": 3, "forbidden_start_tags": [-1]},
         r"Received: forbidden_start_tags=\[-1\]"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CRF(**kwargs)


def test_potentials_of_the_wrong_width_raise_value_error():
    with pytest.raises(ValueError, match=r"num_tags=3. Received: input_shape=\(None, 5, 4\)"):
        CRF(3).build((None, 5, 4))


def test_crf_model_refuses_a_crf_it_cannot_use():
    encoder = tagger().encoder
    with pytest.raises(ValueError, match="Received: crf='crf'"):
        CRFModel(encoder, crf="crf")
    two_outputs = keras.Model(encoder.inputs, [encoder.outputs[0], encoder.outputs[0]])
    with pytest.raises(ValueError, match="Pass `crf=CRF"):
        CRFModel(two_outputs)


def test_tag_ids_of_another_shape_than_the_potentials_are_refused():
    # Extra columns of tag_ids were dropped without a word by the reordering of the steps.
    crf = random_crf()
    potentials = potentials_like(MASK)
    longer = np.zeros((len(MASK), MASK.shape[1] + 1), "int32")
    for method in (crf.sequence_score, crf.log_likelihood):
        with pytest.raises(ValueError, match=r"tag_ids must have the shape \[batch, time\] of the "
                                             r"potentials, \(5, 4\). Received: tag_ids.shape="
                                             r"\(5, 5\)"):
            method(potentials, longer, MASK)
        with pytest.raises(ValueError, match="Received: tag_ids.shape=\\(5,\\)"):
            method(potentials, longer[:, 0])

    @tf.function(input_signature=[tf.TensorSpec([None, None, NUM_TAGS]),
                                  tf.TensorSpec([None, None], tf.int32)])
    def score(potentials, tag_ids):
        return crf.sequence_score(potentials, tag_ids)

    tag_ids = longer[:, :-1]
    np.testing.assert_allclose(score(potentials, tag_ids), crf.sequence_score(potentials, tag_ids))
    for wrong in (longer, tag_ids[1:]):
        with pytest.raises(tf.errors.InvalidArgumentError, match="tag_ids must have the shape"):
            score(potentials, wrong)


def test_zero_time_steps_give_score_zero_and_empty_tags_eagerly_and_in_a_graph():
    crf = random_crf()
    potentials = np.zeros((2, 0, NUM_TAGS), "float32")
    tag_ids = np.zeros((2, 0), "int32")
    for mask in (None, np.zeros((2, 0), bool)):
        np.testing.assert_array_equal(crf.log_partition(potentials, mask), [0.0, 0.0])
        np.testing.assert_array_equal(crf.sequence_score(potentials, tag_ids, mask), [0.0, 0.0])
        np.testing.assert_array_equal(crf.log_likelihood(potentials, tag_ids, mask), [0.0, 0.0])
        tags, scores = crf.viterbi_decode(potentials, mask)
        assert tags.shape == (2, 0) and tags.dtype == tf.int32
        np.testing.assert_array_equal(scores, [0.0, 0.0])
        assert crf(potentials, mask=mask).shape == (2, 0)

    @tf.function(input_signature=[tf.TensorSpec([None, None, NUM_TAGS]),
                                  tf.TensorSpec([None, None], tf.int32)])
    def everything(potentials, tag_ids):
        return (crf.log_partition(potentials), crf.log_likelihood(potentials, tag_ids),
                *crf.viterbi_decode(potentials), crf(potentials))

    log_z, likelihood, tags, scores, called = everything(potentials, tag_ids)
    np.testing.assert_array_equal(np.stack([log_z, likelihood, scores]), np.zeros((3, 2)))
    assert tags.shape == (2, 0) and called.shape == (2, 0)
    # The same graph still decodes sequences with steps.
    some = potentials_like(MASK)
    _, _, tags, scores, _ = everything(some, np.zeros(MASK.shape, "int32"))
    expected_tags, expected_scores = crf.viterbi_decode(some)
    np.testing.assert_array_equal(tags, expected_tags)
    np.testing.assert_allclose(scores, expected_scores, atol=1e-6)


def test_potentials_of_another_rank_or_number_of_tags_are_refused_on_every_call():
    crf = random_crf()  # built for 3 tags
    message = r"potentials must have the shape \[batch, time, num_tags=3\]. Received: "
    for wrong in (np.zeros((2, 4, 4), "float32"), np.zeros((2, 4), "float32")):
        shape = re.escape(str(wrong.shape))
        for call in (crf, crf.viterbi_decode, crf.log_partition,
                     lambda x: crf.sequence_score(x, np.zeros((2, 4), "int32"))):
            with pytest.raises(ValueError, match=message + "potentials.shape=" + shape):
                call(wrong)

    @tf.function(input_signature=[tf.TensorSpec(None)])
    def decode(potentials):
        return crf.viterbi_decode(potentials)[0]

    assert decode(potentials_like(MASK)).shape == MASK.shape
    for wrong in (np.zeros((2, 4, 4), "float32"), np.zeros((2, 4), "float32")):
        with pytest.raises(tf.errors.InvalidArgumentError, match="potentials must have the shape"):
            decode(wrong)


def test_a_mask_traced_without_a_rank_is_read_as_batch_by_time():
    # log Z's fold began with zeros of a known shape and met a mask of unknown rank.
    crf = random_crf()
    potentials = potentials_like(MASK)
    traced = tf.function(lambda x, mask: (crf.log_partition(x, mask), crf(x, mask=mask)[0]),
                         input_signature=[tf.TensorSpec([None, None, NUM_TAGS]),
                                          tf.TensorSpec(None, tf.bool)])
    log_z, tags = traced(potentials, MASK)
    np.testing.assert_allclose(log_z, crf.log_partition(potentials, MASK), rtol=1e-6)
    np.testing.assert_array_equal(tags, crf(potentials, mask=MASK)[0])


def constrained_crf(forbidden, forbidden_starts, seed=0):
    crf = CRF(NUM_TAGS, forbidden_transitions=forbidden, forbidden_start_tags=forbidden_starts)
    crf.build((None, None, NUM_TAGS))
    crf.set_weights(random_crf(seed=seed).get_weights())
    return crf


def violations(crf, path):
    """How many forbidden transitions and start tags the tag sequence `path` uses."""
    forbidden = {tuple(pair) for pair in crf.forbidden_transitions}
    count = sum((a, b) in forbidden for a, b in zip(path[:-1], path[1:]))
    return count + int(bool(path) and path[0] in crf.forbidden_start_tags)


def penalised_scores(crf, potentials, mask):
    """{tag sequence: s(x, y)} with FORBIDDEN_SCORE on each forbidden step, in float64."""
    scores = enumerate_scores(crf, potentials.astype("float64"), mask)
    return {path: score + FORBIDDEN_SCORE * violations(crf, path)
            for path, score in scores.items()}


def test_viterbi_never_decodes_a_forbidden_step_however_large_the_potentials():
    # Tag 1 gets 1e5 at every step but may not start a sequence nor follow itself. With the
    # -1e4 penalty alone, 1 1 1 1 won; the best allowed sequence alternates with tag 1.
    crf = constrained_crf([[1, 1]], [1])
    potentials = potentials_like(MASK, seed=7)
    potentials[..., 1] += 1e5
    signature = [tf.TensorSpec([None, None, NUM_TAGS]), tf.TensorSpec([None, None], tf.bool)]
    graph = tf.function(crf.viterbi_decode, input_signature=signature)
    for tags, best_scores in (crf.viterbi_decode(potentials, MASK), graph(potentials, MASK)):
        tags, best_scores = tags.numpy(), best_scores.numpy()
        for row in range(len(MASK)):
            scores = penalised_scores(crf, potentials[row], MASK[row])
            allowed = {path: score for path, score in scores.items() if not violations(crf, path)}
            best = max(allowed.values())
            path = tuple(tags[row][MASK[row]])
            assert path in allowed  # float32 near 2e5: check the score, not an exact tie-break
            np.testing.assert_allclose(allowed[path], best, atol=0.1)
            np.testing.assert_allclose(best_scores[row], best, atol=0.1)
    # The likelihood keeps its finite penalty: log Z as with FORBIDDEN_SCORE, the saved numbers.
    moderate = potentials_like(MASK, seed=7)
    log_z = crf.log_partition(moderate, MASK).numpy()
    for row in range(len(MASK)):
        scores = penalised_scores(crf, moderate[row], MASK[row])
        expected = log_sum_exp(scores.values()) if MASK[row].any() else 0.0
        np.testing.assert_allclose(log_z[row], expected, atol=1e-4)


def test_without_any_allowed_sequence_viterbi_falls_back_to_the_penalised_best():
    # Every transition is forbidden: only the one-step row (row 3) has an allowed sequence.
    crf = constrained_crf([[i, j] for i in range(NUM_TAGS) for j in range(NUM_TAGS)], [])
    potentials = potentials_like(MASK, seed=8)
    tags, best_scores = crf.viterbi_decode(potentials, MASK)
    for row in range(len(MASK)):
        scores = penalised_scores(crf, potentials[row], MASK[row])
        best = max(scores, key=scores.get)
        np.testing.assert_array_equal(tags.numpy()[row][MASK[row]], best)
        np.testing.assert_allclose(best_scores.numpy()[row], scores[best], atol=1e-2)
    assert np.isfinite(best_scores.numpy()).all()
