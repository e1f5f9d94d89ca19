"""seqlab's Keras layers. Imports only keras and tensorflow.

`from layers import LSTM` gives the layer; every layer is registered for
serialization under the package "seqlab".
"""

from layers.attention import AdditiveAttention, MultiHeadAttention, scaled_dot_product_attention
from layers.char_encoder import CharacterEncoder
from layers.crf import CRF, CRFModel
from layers.gru import GRU, GRUCell
from layers.lstm import LSTM, LSTMCell
from layers.pooling import MaskedMaxPooling, MaskedMeanPooling
from layers.positional import PositionalEncoding, TokenAndPositionEmbedding
from layers.rnn_base import reset_states
from layers.simple_rnn import SimpleRNN, SimpleRNNCell
from layers.token_dropout import TokenDropout
from layers.transformer import TransformerDecoderLayer, TransformerEncoderLayer
