"""seqlab's Keras layers. Imports only keras and tensorflow.

`from layers import LSTM` gives the layer; every layer is registered for
serialization under the package "seqlab".
"""

from seqlab.layers.attention import AdditiveAttention, MultiHeadAttention, scaled_dot_product_attention
from seqlab.layers.char_encoder import CharacterEncoder
from seqlab.layers.crf import CRF, CRFModel
from seqlab.layers.gru import GRU, GRUCell
from seqlab.layers.lstm import LSTM, LSTMCell
from seqlab.layers.pooling import MaskedMaxPooling, MaskedMeanPooling
from seqlab.layers.positional import PositionalEncoding, TokenAndPositionEmbedding
from seqlab.layers.rnn_base import portable_loops, reset_states
from seqlab.layers.simple_rnn import SimpleRNN, SimpleRNNCell
from seqlab.layers.token_dropout import TokenDropout
from seqlab.layers.transformer import TransformerDecoderLayer, TransformerEncoderLayer
