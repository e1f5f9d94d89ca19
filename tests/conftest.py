"""Shared test helpers: a layer check in the spirit of Keras's `run_layer_test`."""

import contextlib
import inspect
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# The tests (and the commands they start) measure their loops and remember them nowhere: a
# user's file in ~/.cache is neither read nor written (tests/layers/test_loop_choice.py sets
# a file of its own where it tests the memory).
os.environ["SEQLAB_LOOP_MEMORY"] = "off"

from seqlab._tf_log import quiet_descriptor_2  # noqa: E402

# TensorFlow's load notices ("Could not find cuda drivers", oneDNN's) ignore the level above;
# imported here first, without seqlab's import hook (the level is set, so `import seqlab` takes
# it for the user's), they were printed after the test summary (pytest's capture held them).
with quiet_descriptor_2():
    import tensorflow as tf  # noqa: E402

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same random state.

    (No `clear_session()` after each test: it cost up to 1.5 s of teardown per
    test, and no test depends on Keras's global name counters.)
    """
    keras.utils.set_random_seed(1234)


@pytest.fixture(autouse=True, scope="session")
def _each_classical_fit_once():
    """Each distinct statsforecast fit runs once per test process; a repeat returns a copy.

    The time-series runs of many tests fit the same automatic models to the same rows (the
    baselines of every run, --model auto's members): statsforecast's exact ARIMA search on
    their short series took most of those tests' time. A fit is a pure function of its rows,
    season and form, so a repeat gets a copy of the first result (tests that make a fit fail
    patch `fit_classical` itself, above this memo; failures are not remembered).
    Processes a test starts fit everything themselves.
    """
    import copy

    from seqlab.models.forecasting import classical

    fitters = {name: getattr(classical, name) for name in ("_fit_ets", "_fit_arima", "_fit_theta")}
    fits = {}

    def remembered(name, fit):
        def fit_once(values, season, model):
            values = np.asarray(values, dtype=np.float64)
            search = "full" if _EXACT_ARIMA_SEARCH[0] or name != "_fit_arima" else "small"
            key = (name, values.tobytes(), season, model, search)
            if key not in fits:
                with _small_arima_search(search == "small"):
                    fits[key] = fit(values, season, model)
            return copy.deepcopy(fits[key])

        return fit_once

    for name, fit in fitters.items():
        setattr(classical, name, remembered(name, fit))
    yield
    for name, fit in fitters.items():
        setattr(classical, name, fit)


# Test modules marked `exact_arima_search` (`pytestmark`) run statsforecast's AutoARIMA search
# as seqlab does.
_EXACT_ARIMA_SEARCH = [False]
# The AutoARIMA search of every other test: orders up to 1 (seasonal too) chosen on the
# conditional sum of squares, then fitted exactly. The member built from the fit is the same
# code either way (orders, coefficients, state recursion, export); the full search is what
# made a tiny series' test spend most of its time in statsforecast (about 4 s a fit on 100 to
# 130 monthly rows against 0.2 s; 8 fits a run with --model auto). tests/models/test_classical.py
# compares the members with statsforecast's own full search.
SMALL_ARIMA_SEARCH = {"max_p": 1, "max_q": 1, "max_P": 1, "max_Q": 1, "approximation": True}


@contextlib.contextmanager
def _small_arima_search(small):
    import statsforecast.models

    if not small:
        yield
        return
    full = statsforecast.models.AutoARIMA

    class SmallSearch(full):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**kwargs, **SMALL_ARIMA_SEARCH})

    statsforecast.models.AutoARIMA = SmallSearch
    try:
        yield
    finally:
        statsforecast.models.AutoARIMA = full


@pytest.fixture(autouse=True, scope="module")
def _arima_search(request):
    _EXACT_ARIMA_SEARCH[0] = request.node.get_closest_marker("exact_arima_search") is not None
    yield
    _EXACT_ARIMA_SEARCH[0] = False


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _symbolic_inputs(input_data):
    return [
        keras.Input(shape=np.shape(x)[1:], dtype=np.asarray(x).dtype.name)
        for x in _as_list(input_data)
    ]


def _numpy(x):
    return keras.tree.map_structure(lambda t: keras.ops.convert_to_numpy(t), x)


def assert_allclose_structure(actual, expected, atol=1e-6):
    actual, expected = keras.tree.flatten(actual), keras.tree.flatten(expected)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), atol=atol, rtol=0)


def constructor_arguments(cls):
    """Names of the explicit constructor arguments of `cls` (not **kwargs)."""
    signature = inspect.signature(cls.__init__)
    return [
        name
        for name, p in signature.parameters.items()
        if name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    ]


def run_layer_test(
    layer_cls,
    init_kwargs,
    input_data,
    call_kwargs=None,
    expected_output_shape=None,
    run_fit=True,
    tmp_path=None,
    atol=1e-6,
):
    """Checks the contract every seqlab layer keeps.

    1. `get_config` holds every constructor argument and `from_config` rebuilds
       an equal config.
    2. An eager call and a call inside a functional model give the same output
       (with the same weights), of the expected shape.
    3. One `fit` step runs and gives a finite loss.
    4. The model saved as `.keras` and loaded again computes the same output.

    Returns the functional model, for further checks by the caller.
    """
    call_kwargs = call_kwargs or {}
    layer = layer_cls(**init_kwargs)
    config = layer.get_config()
    missing = [a for a in constructor_arguments(layer_cls) if a not in config]
    assert not missing, f"get_config() lacks constructor arguments {missing}"
    rebuilt = layer_cls.from_config(config)
    assert rebuilt.get_config() == config

    inputs = _as_list(input_data)
    eager_output = _numpy(layer(*inputs, **call_kwargs))
    if expected_output_shape is not None:
        first = keras.tree.flatten(eager_output)[0]
        assert tuple(first.shape) == tuple(expected_output_shape)

    symbolic = _symbolic_inputs(input_data)
    # A one-input model is built on, and called with, its tensor rather than a list of one.
    model = keras.Model(
        symbolic[0] if len(symbolic) == 1 else symbolic, layer(*symbolic, **call_kwargs)
    )
    model_inputs = inputs[0] if len(inputs) == 1 else inputs
    assert_allclose_structure(_numpy(model(model_inputs)), eager_output, atol=atol)

    if run_fit:
        targets = keras.tree.map_structure(np.zeros_like, eager_output)
        if isinstance(targets, tuple):
            targets = list(targets)
        model.compile(optimizer="adam", loss="mse")
        history = model.fit(
            model_inputs, targets, epochs=1, batch_size=len(inputs[0]), verbose=0
        )
        assert np.isfinite(history.history["loss"][-1])

    if tmp_path is not None:
        expected = _numpy(model(model_inputs))
        path = os.path.join(str(tmp_path), "layer_test.keras")
        model.save(path)
        loaded = keras.saving.load_model(path)
        assert_allclose_structure(_numpy(loaded(model_inputs)), expected, atol=atol)
    return model


def saved_model_round_trip(model, inputs, tmp_path, atol=1e-6):
    """Exports `model` with `model.export` and checks the reloaded graph's output."""
    expected = _numpy(model(inputs))
    path = os.path.join(str(tmp_path), "exported")
    model.export(path, verbose=False)
    reloaded = tf.saved_model.load(path)
    tensors = [tf.constant(x) for x in _as_list(inputs)]
    # A model built on a list of inputs is exported with one list-valued argument.
    arguments = reloaded.serve.input_signature
    if len(arguments) == 1 and isinstance(arguments[0], (list, tuple)):
        tensors = [tensors]
    actual = _numpy(reloaded.serve(*tensors))
    assert_allclose_structure(actual, expected, atol=atol)
    return reloaded
