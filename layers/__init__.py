"""seqlab's Keras layers. Imports only keras and tensorflow.

`from layers import LSTM` gives the layer; every layer is registered for
serialization under the package "seqlab".
"""
