"""`Translator`: the function it computes, cached decoding, generation, config and `.keras`;
`TextTranslator`: text in, text out around it."""

import json
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from seqlab.layers import (
    GRU,
    AdditiveAttention,
    TokenAndPositionEmbedding,
    TransformerDecoderLayer,
    TransformerEncoderLayer,
)
from seqlab.models import BeamSampler, GreedySampler, Translator
from seqlab.models import translator as translator_module
from seqlab.models.translator import TextTranslator

KINDS = ["gru-attention", "transformer"]
START, END = 2, 3
SOURCE_IDS = np.array([[4, 5, 6, 7, 8], [9, 4, 11, 0, 0]], dtype="int32")
TARGET_IN = np.array([[START, 4, 5, 6, 7, 8], [START, 13, 12, 11, 0, 0]], dtype="int32")
FIXTURE = Path(__file__).parents[1] / "fixtures" / "v0.1.0" / "translate"


def tiny_translator(kind, **overrides):
    """An untrained model of `kind`: 12 source ids, 14 target ids."""
    settings = dict(kind=kind, embedding_dim=8, units=8, layers=2, num_heads=2, ff_dim=8,
                    dropout=0.0, max_length=12)
    settings.update(overrides)
    return Translator(12, 14, **settings)


# Tokens by id, 12 source and 14 target ids: padding, unknown, start, end, then words.
SOURCE_TOKENS = ["", "[UNK]", "[START]", "[END]"] + [f"s{i}" for i in range(8)]
TARGET_TOKENS = ["", "[UNK]", "[START]", "[END]"] + [f"t{i}" for i in range(10)]


def split_words(texts):
    return tf.strings.split(texts)


def join_words(tokens):
    """The inverse of `split_words`; "" (padding, or cut after the end) adds no space."""
    joined = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
    return tf.strings.strip(tf.strings.regex_replace(joined, " +", " "))


def text_translator(kind, **overrides):
    """A `TextTranslator` of an untrained model of `kind`, words split at spaces."""
    return TextTranslator(tiny_translator(kind, **overrides), SOURCE_TOKENS, TARGET_TOKENS,
                          split_words, join_words)


def masked_loss():
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)


def functional_reference(model):
    """The same function wired as a functional model from seqlab layers, weights copied by name.

    Outputs `[logits, attention]` (the attention of the additive layer, or the last decoder
    layer's cross-attention averaged over heads).
    """
    source_ids = keras.Input((None,), dtype="int32")
    target_in_ids = keras.Input((None,), dtype="int32")
    source_mask = keras.ops.not_equal(source_ids, 0)
    units, width = model.units, model.embedding_dim
    if model.kind == "gru-attention":
        embedded = keras.layers.Embedding(12, width, mask_zero=True, name="source_embedding")(
            source_ids
        )
        memory, forward, backward = keras.layers.Bidirectional(
            GRU(units, return_sequences=True, return_state=True), name="encoder"
        )(embedded)
        state = keras.layers.Dense(units, activation="tanh", name="bridge")(
            keras.layers.Concatenate()([forward, backward])
        )
        target = keras.layers.Embedding(14, width, mask_zero=True, name="target_embedding")(
            target_in_ids
        )
        states = GRU(units, return_sequences=True, name="decoder")(target, initial_state=[state])
        context, attention = AdditiveAttention(units, name="attention")(
            states, memory, values_mask=source_mask
        )
        hidden = keras.layers.Dense(units, activation="tanh", name="attention_output")(
            keras.layers.Concatenate()([states, context])
        )
    else:
        layer_args = dict(num_heads=model.num_heads, ff_dim=model.ff_dim)
        encoded = TokenAndPositionEmbedding(12, model.max_length, width, mask_zero=True,
                                            name="source_embedding")(source_ids)
        for index in range(model.num_layers):
            encoded = TransformerEncoderLayer(**layer_args, name=f"encoder_{index}")(encoded)
        hidden = TokenAndPositionEmbedding(14, model.max_length, width, mask_zero=True,
                                           name="target_embedding")(target_in_ids)
        for index in range(model.num_layers):
            hidden, attention = TransformerDecoderLayer(**layer_args, name=f"decoder_{index}")(
                hidden, encoded, encoder_mask=source_mask, return_attention_scores=True
            )
        attention = keras.ops.mean(attention, axis=1)
    logits = keras.layers.Dense(14, name="logits")(hidden)
    reference = keras.Model([source_ids, target_in_ids], [logits, attention])
    for layer in reference.layers:
        if layer.weights:
            layer.set_weights(model.get_layer(layer.name).get_weights())
    return reference


# The function


@pytest.mark.parametrize("kind", KINDS)
def test_equals_a_functional_model_of_the_same_layers_with_copied_weights(kind):
    model = tiny_translator(kind)
    for weight in model.weights:  # random biases and norms too
        weight.assign(np.random.default_rng(1).normal(size=weight.shape) * 0.3)
    logits, attention = model([SOURCE_IDS, TARGET_IN], return_attention_scores=True)
    expected_logits, expected_attention = functional_reference(model)([SOURCE_IDS, TARGET_IN])
    real = TARGET_IN != 0
    np.testing.assert_allclose(logits.numpy()[real], expected_logits.numpy()[real], atol=1e-5)
    np.testing.assert_allclose(attention.numpy()[real], expected_attention.numpy()[real],
                               atol=1e-5)
    assert attention.shape == (2, 6, 5)
    np.testing.assert_allclose(attention.numpy()[real].sum(axis=-1), 1.0, atol=1e-5)
    assert (attention.numpy()[1, :, 3:] == 0).all()  # source padding gets no attention


def test_weights_of_a_0_1_0_run_copy_by_layer_name_and_give_its_logits():
    settings = json.loads((FIXTURE / "config.json").read_text())["settings"]
    old = keras.saving.load_model(FIXTURE / "model.keras", compile=False)
    model = Translator(
        old.get_layer("source_embedding").vocabulary_size,
        old.get_layer("target_embedding").vocabulary_size,
        kind=settings["model"], embedding_dim=settings["embedding_dim"],
        layers=settings["layers"], num_heads=settings["num_heads"], ff_dim=settings["ff_dim"],
        dropout=settings["dropout"], max_length=settings["max_length"],
    )
    weighted = [layer for layer in old.layers if layer.weights]
    assert {layer.name for layer in weighted} <= {layer.name for layer in model.layers}
    for layer in weighted:
        model.get_layer(layer.name).set_weights(layer.get_weights())
    source = np.array([[5, 9, 1, 4], [7, 0, 0, 0]], "int32")
    target_in = np.array([[START, 6, 8], [START, 5, 0]], "int32")
    real = target_in != 0
    np.testing.assert_allclose(model([source, target_in]).numpy()[real],
                               old([source, target_in]).numpy()[real], atol=1e-5)


@pytest.mark.parametrize("kind", KINDS)
def test_padding_changes_neither_logits_nor_loss(kind):
    model = tiny_translator(kind)
    target_out = np.concatenate([TARGET_IN[:, 1:], [[END], [0]]], axis=1)
    target_out[1, 3] = END  # row 1: three tokens, then the end token, then padding
    logits = model([SOURCE_IDS, TARGET_IN])
    padded_logits = model([np.pad(SOURCE_IDS, [[0, 0], [0, 3]]),
                           np.pad(TARGET_IN, [[0, 0], [0, 2]])])
    np.testing.assert_allclose(padded_logits[:, :6], logits, atol=1e-5)
    loss = float(masked_loss()(target_out, logits))
    padded_loss = float(masked_loss()(np.pad(target_out, [[0, 0], [0, 2]]), padded_logits))
    assert padded_loss == pytest.approx(loss, rel=1e-5)
    # The logits carry the target padding mask whatever the kind, so a loss without
    # ignore_class leaves padding out too: gru-attention's counted the padded positions.
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(logits._keras_mask),
                                  TARGET_IN != 0)
    plain = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    assert float(plain(np.pad(target_out, [[0, 0], [0, 2]]), padded_logits)) == pytest.approx(
        float(plain(target_out, logits)), rel=1e-5)


# Step-by-step decoding and generation


@pytest.mark.parametrize("kind", KINDS)
def test_cached_decode_steps_equal_the_teacher_forced_call(kind):
    model = tiny_translator(kind)
    full = model([SOURCE_IDS, TARGET_IN]).numpy()
    state = model.encode(SOURCE_IDS)
    for position in range(4):  # row 1 has the start token and three target tokens
        logits, state = model.decode_step(TARGET_IN[:, position], state)
        np.testing.assert_allclose(logits.numpy(), full[:, position], atol=1e-5)
    if kind == "transformer":
        assert state["position"].numpy().tolist() == [4, 4]
        assert set(state["caches"][0]) == {"self_key", "self_value", "cross_key", "cross_value"}


def test_transformer_generation_runs_on_the_key_value_cache_only(monkeypatch):
    model = tiny_translator("transformer")
    expected = model.generate(SOURCE_IDS)

    def full_pass(*args, **kwargs):
        raise AssertionError("generation ran the decoder over the whole prefix")

    monkeypatch.setattr(TransformerDecoderLayer, "call", full_pass)
    np.testing.assert_array_equal(model.generate(SOURCE_IDS), expected)
    assert model.generate(SOURCE_IDS, BeamSampler(beam_width=2)).tokens.shape[:2] == (2, 1)


@pytest.mark.parametrize("kind", KINDS)
def test_beam_width_one_is_greedy(kind):
    model = tiny_translator(kind)
    # A bias towards the end token's rivals keeps the outputs long enough to compare.
    model.output_projection.bias.assign(np.linspace(0.0, 1.0, 14).astype("float32"))
    greedy = model.generate(SOURCE_IDS, GreedySampler())
    beam = model.generate(SOURCE_IDS, BeamSampler(beam_width=1, length_penalty=0.0))
    assert greedy.shape[1] > 3
    np.testing.assert_array_equal(beam.tokens[:, 0].numpy(), greedy.numpy())
    np.testing.assert_array_equal(model.generate(SOURCE_IDS, "greedy"), greedy)


@pytest.mark.parametrize("kind", KINDS)
def test_generation_never_chooses_padding_or_start_and_stops_at_max_length(kind):
    model = tiny_translator(kind)
    bias = np.zeros(14, "float32")
    bias[[0, START]] = 100.0  # what an untrained model might prefer
    model.output_projection.bias.assign(bias)
    tokens = model.generate(SOURCE_IDS).numpy()
    # 2 x 5 + 10 = 20 tokens, capped at max_length - 2, then the end token: the decoder's
    # positions hold [START] and 11 tokens.
    assert tokens.shape == (2, 11) and (tokens[:, -1] == END).all()
    assert not np.isin(tokens, [0, START]).any()
    assert model.generate(SOURCE_IDS, max_length=4).shape == (2, 5)
    beam = model.generate(SOURCE_IDS, BeamSampler(beam_width=2, num_return=2), max_length=3)
    assert beam.tokens.shape == (2, 2, 4) and not np.isin(beam.tokens, [0, START]).any()


@pytest.mark.parametrize("kind", KINDS)
def test_each_row_stops_at_twice_its_own_source_length_plus_ten(kind):
    # Outputs were cut at twice the padded batch's length: a short source beside a long one
    # ran on. Each row now ends at 2 x its own tokens + 10 (then the end token, as any row
    # that ended early), with the tokens it would choose alone.
    model = tiny_translator(kind, max_length=40)
    bias = np.zeros(14, "float32")
    bias[END] = -100.0  # an untrained model that never ends by itself
    model.output_projection.bias.assign(bias)
    short, batch = np.array([[4, 0, 0, 0, 0]], "int32"), np.array([[4, 0, 0, 0, 0],
                                                                  [4, 5, 6, 7, 8]], "int32")
    for sampler, pick in ((GreedySampler(), lambda out: out.numpy()),
                          (BeamSampler(beam_width=2), lambda out: out.tokens[:, 0].numpy())):
        alone, together = pick(model.generate(short, sampler)), pick(model.generate(batch,
                                                                                  sampler))
        assert alone.shape == (1, 2 * 1 + 10 + 1) and END not in alone[0, :-1]
        assert together.shape == (2, 2 * 5 + 10 + 1) and END not in together[1, :-1]
        assert alone[0, -1] == together[1, -1] == END  # each row ends at its own limit
        np.testing.assert_array_equal(together[0, :13], alone[0])
        assert (together[0, 13:] == END).all()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("end_bias", [-1.0, 0.5])
def test_beam_search_ranks_hypotheses_at_a_rows_limit_as_any_other_whatever_its_batch(
        kind, end_bias):
    """The longest row of a batch was stopped by the loop before its limit's end token: its
    hypotheses of full length stayed unfinished, ranked after every finished one and scored
    by another length, so a short sentence translated differently beside a longer one."""
    keras.utils.set_random_seed(0)
    model = tiny_translator(kind, max_length=40)
    bias = np.zeros(14, "float32")
    bias[END] = end_bias  # -1: hypotheses run to the limit; 0.5: some end early
    model.output_projection.bias.assign(bias)
    short, batch = np.array([[4, 0, 0, 0, 0]], "int32"), np.array([[4, 0, 0, 0, 0],
                                                                  [4, 5, 6, 7, 8]], "int32")
    sampler = BeamSampler(beam_width=3, num_return=3)
    alone, together = model.generate(short, sampler), model.generate(batch, sampler)
    width = alone.tokens.shape[2]  # the batch's rows are padded with the end token
    # As sets: hypotheses whose scores tie to float32 rounding may swap places between the
    # two batch sizes' kernels; their scores, sorted, may differ by that rounding only.
    assert ({tuple(h) for h in alone.tokens[0].numpy()}
            == {tuple(h) for h in together.tokens[0, :, :width].numpy()})
    np.testing.assert_allclose(alone.scores[0], together.scores[0], rtol=1e-5)
    assert (np.diff(alone.scores[0]) <= 0).all()  # best first


@pytest.mark.parametrize("kind", KINDS)
def test_a_batch_of_no_sources_generates_no_rows(kind):
    # The transformer read its position from the first row, which a batch of none lacks.
    model = tiny_translator(kind)
    empty = np.zeros((0, 5), "int32")
    assert model.generate(empty).shape[0] == 0
    assert model.generate(empty, BeamSampler(beam_width=2, num_return=2)).tokens.shape[:2] == (
        0, 2)
    # One row at a time still decodes as in a batch.
    np.testing.assert_array_equal(model.generate(SOURCE_IDS[:1]), model.generate(SOURCE_IDS)[:1])


def test_generation_inside_a_tf_function_equals_eager():
    model = tiny_translator("transformer")
    model.output_projection.bias.assign(np.linspace(0.0, 1.0, 14).astype("float32"))
    generate = tf.function(model.generate,
                           input_signature=[tf.TensorSpec([None, None], tf.int32)])
    np.testing.assert_array_equal(generate(SOURCE_IDS), model.generate(SOURCE_IDS))


@pytest.mark.parametrize("kind", KINDS)
def test_attention_weights_are_the_teacher_forced_calls_and_rows_sum_to_one(kind):
    model = tiny_translator(kind)
    output_ids = tf.constant([[5, 6, 7, 3], [4, 3, 3, 3]])
    weights = model.attention_weights(tf.constant(SOURCE_IDS), output_ids).numpy()
    assert weights.shape == (2, 4, 5)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-5)
    assert (weights[1, :, 3:] == 0).all()  # padding gets no attention
    target_in = np.array([[2, 5, 6, 7], [2, 4, 3, 3]])
    _, expected = model([SOURCE_IDS, target_in], return_attention_scores=True)
    np.testing.assert_allclose(weights, expected, atol=1e-6)


# Text in, text out


def test_texts_become_padded_source_ids_and_output_ids_become_text():
    translator = text_translator("transformer")
    ids = translator.source_ids(tf.constant(["s0 s1 s2", "", "s0 unseen"]))
    assert ids.dtype == tf.int32 and ids.shape == (3, 3) and ids.numpy()[2, 1] == 1  # unknown
    assert ids.numpy().tolist() == [[4, 5, 6], [0, 0, 0], [4, 1, 0]]
    assert translator.source_ids(tf.constant(["", " "])).shape == (2, 1)
    # Each row is cut at its first end token; start tokens and padding are left out.
    output = tf.constant([[4, 5, 6, END, 7], [START, 4, 0, 0, 0], [END, 4, 5, 6, 7]])
    assert translator.to_text(output).numpy().tolist() == [b"t0 t1 t2", b"t0", b""]


def test_translations_greedy_and_beam_and_empty_text_to_empty_text():
    translator = text_translator("gru-attention")
    translator.model.output_projection.bias.assign(np.linspace(0.0, 1.0, 14).astype("float32"))
    texts = ["s0 s1 s2", "", "s3", "unseen s4"]
    greedy = translator.translate(texts, batch_size=2)
    tokens = translator.model.generate(translator.source_ids(tf.constant(texts[:1])))
    assert greedy[0] == translator.to_text(tokens).numpy()[0].decode() and greedy[1] == ""
    assert greedy == translator.translate(texts, beam_width=1, length_penalty=0.0)
    best = translator.translate(texts, beam_width=3, num_return=2)
    assert [len(hypotheses) for hypotheses in best] == [2] * 4
    assert all(first[1] >= second[1] for first, second in best if first[0])
    assert [first[0] for first, _ in best] == translator.translate(texts, beam_width=3)
    translations, scores = translator.decode_texts(tf.constant(texts), 3, 0.6, 2)
    assert translations.shape == (4, 2) and scores.shape == (4, 2)
    # One str is one text (it was read as a list of its characters, each translated).
    assert translator.translate(texts[0]) == greedy[0]
    assert translator.translate(texts[0], beam_width=3, num_return=2) == best[0]
    with pytest.raises(ValueError, match=r"num_return > 1 needs beam search \(beam_width\)"):
        translator.translate(texts, num_return=2)  # one translation each, silently


def test_batches_by_length_group_texts_of_similar_length_shortest_first():
    translator = text_translator("transformer")
    texts = ["a b c", "a", "a b", "a", ""]
    assert [b.tolist() for b in translator.batches_by_length(texts, 2)] == [[4, 1], [3, 2], [0]]
    assert translator.batches_by_length([], 2) == []
    # A wide beam over long outputs: batches cut at MAX_REQUEST_POSITIONS positions (texts x
    # hypotheses x (longest text + max_length)), as the SavedModel's requests are; a text
    # alone always decodes. A beam of 64 with --max-length 10000 ran out of memory in a
    # batch of the training's 64 texts, after training.
    max_length = translator.model.max_length
    positions = translator_module.MAX_REQUEST_POSITIONS
    wide = positions // (2 * (3 + max_length))  # texts of 3 tokens that fit in one batch
    batches = translator.batches_by_length(["a b c"] * (wide + 1), 10**6, hypotheses=2)
    assert [len(b) for b in batches] == [wide, 1]
    too_wide = positions // (1 + max_length) + 1  # hypotheses beyond the limit for one text
    assert [len(b) for b in translator.batches_by_length(["a"] * 3, 64, too_wide)] == [1, 1, 1]


@pytest.mark.parametrize("kind", KINDS)
def test_attention_of_a_text_is_the_greedy_outputs(kind):
    translator = text_translator(kind)
    source_tokens, output_tokens, weights = translator.attention("s0 unseen s2")
    assert source_tokens == ["s0", "unseen", "s2"]
    tokens = translator.model.generate(translator.source_ids(tf.constant(["s0 unseen s2"])))
    expected = [TARGET_TOKENS[i] for i in tokens[0].numpy()]
    assert output_tokens == expected[: expected.index("[END]") + 1 if "[END]" in expected
                                     else None]
    assert weights.shape == (len(output_tokens), 3)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-5)
    source_tokens, _, weights = translator.attention("")
    assert source_tokens == [] and weights.shape[1] == 1  # the one padding position


def test_vocabularies_must_match_the_models_ids():
    with pytest.raises(ValueError, match="target_vocabulary must hold one token per id of the "
                                         "model \\(14\\). Received: 13 tokens"):
        TextTranslator(tiny_translator("transformer"), SOURCE_TOKENS, TARGET_TOKENS[:-1],
                       split_words, join_words)


# Training, config and saving


@pytest.mark.parametrize("kind", KINDS)
def test_learns_a_copy_task_with_model_fit(kind):
    rng = np.random.default_rng(0)
    source = rng.integers(4, 12, size=(64, 4)).astype("int32")
    target_in = np.concatenate([np.full((64, 1), START), source], axis=1).astype("int32")
    target_out = np.concatenate([source, np.full((64, 1), END)], axis=1).astype("int32")
    dataset = tf.data.Dataset.from_tensor_slices(((source, target_in), target_out)).batch(16)
    model = tiny_translator(kind, embedding_dim=16, units=16, layers=1, ff_dim=16)
    model.compile(optimizer=keras.optimizers.Adam(0.02), loss=masked_loss())
    history = model.fit(dataset, epochs=6, verbose=0, shuffle=False).history["loss"]
    assert history[-1] < 0.7 * history[0], history


@pytest.mark.parametrize("kind", KINDS)
def test_config_round_trip_and_keras_file_give_the_same_outputs(kind, tmp_path):
    model = tiny_translator(kind, dropout=0.1, seed=5, start_token_id=1, end_token_id=13)
    rebuilt = Translator.from_config(model.get_config())
    assert rebuilt.get_config() == model.get_config()
    rebuilt.set_weights(model.get_weights())
    expected = model([SOURCE_IDS, TARGET_IN])
    np.testing.assert_allclose(rebuilt([SOURCE_IDS, TARGET_IN]), expected, atol=1e-6)

    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert isinstance(loaded, Translator) and loaded.get_config() == model.get_config()
    np.testing.assert_allclose(loaded([SOURCE_IDS, TARGET_IN]), expected, atol=1e-6)
    np.testing.assert_array_equal(loaded.generate(SOURCE_IDS), model.generate(SOURCE_IDS))


def test_bad_settings_are_refused_with_the_value():
    with pytest.raises(ValueError, match="kind must be one of gru-attention, transformer"):
        Translator(12, 14, kind="lstm")
    with pytest.raises(ValueError, match="embedding_dim must be divisible by num_heads"):
        Translator(12, 14, embedding_dim=10, num_heads=4)
    with pytest.raises(ValueError, match="layers must be at least 1. Received: layers=0"):
        Translator(12, 14, layers=0)
    with pytest.raises(ValueError, match="max_length must be at least 2. Received: max_length=1"):
        Translator(12, 14, max_length=1)
    with pytest.raises(ValueError, match="end_token_id must be a target id other than padding"):
        Translator(12, 14, end_token_id=14)


@pytest.mark.parametrize("kind", KINDS)
def test_generate_refuses_source_ids_outside_the_vocabulary_of_another_dtype_or_rank(kind):
    # Negative ids were looked up (an embedding row chosen silently), float ids truncated.
    model = tiny_translator(kind)
    in_range = r"source_ids must lie in \[0, source_vocabulary_size=12\)"
    for bad in ([[4, -1]], [[4, 12]], [[4, 2**32 + 4]]):
        with pytest.raises(tf.errors.InvalidArgumentError, match=in_range):
            model.generate(np.array(bad, "int64"))
    for bad in (np.array([[4.7, 5.0]]), tf.constant([[4.0]]), [[4.5]]):
        with pytest.raises(ValueError, match=r"source_ids must be integer ids in \[0, 12\)"):
            model.generate(bad)
    with pytest.raises(ValueError, match=r"source_ids must be \[batch, time\] \(rank 2\)"):
        model.generate(np.array([4, 5], "int32"))
    with pytest.raises(ValueError, match=r"max_length must be at least 0\. Received: "
                                         r"max_length=-3"):
        model.generate(SOURCE_IDS, max_length=-3)  # was [B, 0] without a word
    # In a graph traced for any shape, the rank and the values are checked when it runs.
    generate = tf.function(model.generate, input_signature=[tf.TensorSpec(None, tf.int32)])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"source_ids must be \[batch, time\]"):
        generate(np.array([4, 5], "int32"))
    with pytest.raises(tf.errors.InvalidArgumentError, match=in_range):
        generate(np.array([[4, -1]], "int32"))
    # Good ids of any integer dtype generate as int32 ids do.
    np.testing.assert_array_equal(generate(SOURCE_IDS), model.generate(SOURCE_IDS))
    np.testing.assert_array_equal(model.generate(SOURCE_IDS.astype("int64")),
                                  model.generate(SOURCE_IDS))
    # A vocabulary larger than a narrow dtype holds: its size, cast to int8, wrapped to -56.
    wide = Translator(200, 14, kind=kind, embedding_dim=8, units=8, layers=1, num_heads=2,
                      ff_dim=8, max_length=6)
    np.testing.assert_array_equal(wide.generate(SOURCE_IDS.astype("int8")),
                                  wide.generate(SOURCE_IDS))
