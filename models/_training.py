"""seqlab's models trace their training and evaluation steps once in a user's code, not twice.

Without a distribution strategy Keras 3 (TensorFlow backend) creates the optimizer's and the
compiled loss and metrics' variables inside the first trace of its training step;
`tf.function` then finds variables made in that trace and traces the whole step, forward and
backward, a second time (its rule for variables made on a first call). Building them first, as
Keras itself does under a strategy, saves the second trace: the first `fit` of the tiny CRF
tagger of `tests/models/test_tagger.py` took 7.6-8.4 s through Keras's own `fit` and 5.2-6.2 s
through the tagger's (docs/performance.md), nearly all of it tracing. The trained weights are
the same to the bit.
The run pipelines do it before their own `fit` (`pipelines/lifecycle.py`); `TracesTrainingOnce`
does it in the `fit` and `evaluate` of every seqlab model, for a user's own code.
"""

import keras
import numpy as np
import tensorflow as tf


def build_training_state(model, data):
    """Creates the optimizer's and the compiled loss and metrics' variables before `fit`.

    Under a strategy (Keras builds them itself), where Keras has no such build, or where the
    data's spec is unknown, this does nothing.

    Args:
        model: a compiled Keras model.
        data: the `tf.data.Dataset` that `fit` will read (its element spec is used; no batch
            is read), or the spec of one batch (`batch_spec`), or None.
    """
    symbolic_build = getattr(model, "_symbolic_build", None)
    spec = getattr(data, "element_spec", data)
    if symbolic_build is None or spec is None or getattr(model, "_distribute_strategy", None):
        return
    symbolic_build(data_batch=spec)


def batch_spec(x, y=None, sample_weight=None):
    """The spec of one batch of `fit`'s in-memory data, the batch size left unknown.

    `x`, `y` and `sample_weight` are NumPy arrays or tensors of numbers, booleans or strings,
    alone or nested in tuples, lists and dicts; for anything else (a generator, a Keras
    `PyDataset`, a Python list of numbers) this returns None and Keras builds as it would.
    """
    def spec(value):
        if not isinstance(value, (np.ndarray, tf.Tensor)) or len(value.shape) == 0:
            raise TypeError
        if isinstance(value, tf.Tensor):
            dtype = value.dtype
        else:
            dtype = tf.string if value.dtype.kind in "OSU" else tf.as_dtype(value.dtype)
        return tf.TensorSpec((None, *value.shape[1:]), dtype)

    parts = (x,) if y is None and sample_weight is None else (x, y, sample_weight)
    try:
        return tf.nest.map_structure(spec, parts[:2] if sample_weight is None else parts)
    except TypeError:
        return None


def needs_building(model):
    """Whether the optimizer, the compiled metrics or the compiled loss of `model` still
    has its variables to make."""
    parts = (getattr(model, "optimizer", None), getattr(model, "_compile_metrics", None),
             getattr(model, "_compile_loss", None))
    return any(part is not None and not part.built for part in parts)


class TracesTrainingOnce:
    """Mixin of seqlab's models (listed before `keras.Model`): `fit` and `evaluate` build the
    training state first (`build_training_state`), from a dataset's element spec or the spec
    of the arrays they are given, so that Keras traces the step once (`evaluate` on a model
    loaded from a `.keras` file made its compiled metrics inside the trace too); an unbuilt
    model is built from the spec first, as Keras does under a strategy. A model with an unbuilt
    stateful layer, and data of any other kind, are left to Keras."""

    def fit(self, x=None, y=None, *args, **kwargs):
        self._build_training_state(x, y, kwargs.get("sample_weight"))
        return super().fit(x, y, *args, **kwargs)

    def evaluate(self, x=None, y=None, *args, **kwargs):
        self._build_training_state(x, y, kwargs.get("sample_weight"))
        return super().evaluate(x, y, *args, **kwargs)

    def _build_training_state(self, x, y, sample_weight):
        if not needs_building(self):  # every call after the first (fit's validation too)
            return
        # A model with an unbuilt stateful layer is left to Keras: building it from a spec of
        # unknown batch size fails, as its states need the batch size.
        if any(getattr(layer, "stateful", False) and not layer.built
               for layer in self._flatten_layers()):
            return
        data = x if isinstance(x, tf.data.Dataset) else batch_spec(x, y, sample_weight)
        build_training_state(self, data)


class ForgetsItsStepsOnANewChoice:
    """Mixin of the models whose `choice` says which member (or mean) `call` runs: Keras keeps
    the train, test and predict functions it traced, with the member then chosen inside, so
    `predict` and `evaluate` after `choose` ran the member chosen before, silently. A new
    choice drops them; Keras traces them again on their next use."""

    @property
    def choice(self):
        return self._choice

    @choice.setter
    def choice(self, value):
        if hasattr(self, "_choice") and self._choice == value:
            return
        self._choice = value
        for name in ("train_function", "test_function", "predict_function"):
            if getattr(self, name, None) is not None:
                setattr(self, name, None)


class RestoresItsCompile:
    """For a model whose `compile` is overridden: Keras's `load_model` does not restore the
    compile state of such a model. This one's `compile` takes `keras.Model.compile`'s
    arguments, so the saved ones apply as they are."""

    def compile_from_config(self, config):
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)


class ScalesItsLoss(RestoresItsCompile):
    """Mixin of the models that are float32 themselves (the forecasters: the window's
    statistics and the forecast in the series' units) while their inner layers follow a
    `mixed_float16` policy: Keras wraps the optimizer in a `LossScaleOptimizer` only when the
    model's own policy is `mixed_float16`, so their float16 gradients went unscaled (a
    transformer forecaster's weights were NaN after one epoch on a series near 1e5). Its
    `compile` takes `keras.Model.compile`'s arguments: a saved model's compile is restored."""

    def compile(self, optimizer="rmsprop", *args, auto_scale_loss=True, **kwargs):
        super().compile(optimizer, *args, auto_scale_loss=auto_scale_loss, **kwargs)
        if (auto_scale_loss and self.optimizer is not None
                and not isinstance(self.optimizer, keras.optimizers.LossScaleOptimizer)
                and any(layer.dtype_policy.name == "mixed_float16"
                        for layer in self._flatten_layers(include_self=False))):
            self.optimizer = keras.optimizers.LossScaleOptimizer(
                self.optimizer, name="loss_scale_optimizer")
