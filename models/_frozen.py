"""Layers frozen inside a seqlab model stay frozen through its `.keras` file.

Keras's file keeps a subclassed model's constructor arguments and its weights, not the
`trainable` flag of the layers its constructor builds. A run whose pretrained word vectors
were frozen (`--freeze-embeddings`) came back from `keras.saving.load_model` with them
trainable: fine-tuning the loaded model trained them, and the optimizer state saved with the
file (slots for the trainable weights only) no longer matched and was skipped with a warning.
"""

import keras

CONFIG_KEY = "frozen_layers"


def named_layers(layer, prefix=""):
    """`(path, layer)` of every layer inside `layer`, by attribute names: `"word_embedding"`,
    `"members.0.embedding"`, `"embedding.token_embedding"`. The paths come from the code, not
    from Keras's layer names (whose counters differ from one process to the next)."""
    seen = {id(layer)}

    def walk(owner, prefix):
        for name, value in vars(owner).items():
            if name.startswith("_"):
                continue
            items = ([(f"{prefix}{name}.{i}", v) for i, v in enumerate(value)]
                     if isinstance(value, (list, tuple)) else [(f"{prefix}{name}", value)])
            for path, item in items:
                if isinstance(item, keras.layers.Layer) and id(item) not in seen:
                    seen.add(id(item))
                    yield path, item
                    yield from walk(item, f"{path}.")

    yield from walk(layer, prefix)


class KeepsFrozenLayers:
    """Mixin of seqlab's subclassed models (listed before `keras.Model`): `get_config` names
    the layers inside the model that are not trainable (`named_layers`), and `from_config`
    makes them not trainable again in the model it rebuilds (seqlab's models build every
    layer in their constructor). A config without frozen layers is unchanged (files saved
    before this kept none)."""

    def get_config(self):
        config = super().get_config()
        frozen = sorted(path for path, layer in named_layers(self) if not layer.trainable)
        if frozen:
            config[CONFIG_KEY] = frozen
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        frozen = config.pop(CONFIG_KEY, [])
        if not isinstance(frozen, list) or not all(isinstance(p, str) for p in frozen):
            raise ValueError(f"{cls.__name__}: `{CONFIG_KEY}` in the saved config must be a "
                             f"list of layer paths. Received: {frozen!r}")
        model = super().from_config(config, custom_objects)
        layers = dict(named_layers(model))
        missing = [path for path in frozen if path not in layers]
        if missing:
            raise ValueError(
                f"{cls.__name__}: the saved config names frozen layers that the model rebuilt "
                f"from it does not have: {', '.join(missing)}")
        for path in frozen:
            layers[path].trainable = False
        return model
