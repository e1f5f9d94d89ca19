"""seqlab: sequence modelling on Keras 3.

Recurrent (SimpleRNN, LSTM, GRU) and Transformer layers that implement the textbook equations
(`seqlab.layers`), tf.data builders and readers (`seqlab.data`), task models usable in your own
`model.fit` code (`seqlab.models`), and one pipeline per task behind the `seqlab` command line
(`seqlab.pipelines`, `seqlab.cli`).

Importing `seqlab` is cheap: TensorFlow loads only when a subpackage that needs it is imported.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("seqlab")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"
