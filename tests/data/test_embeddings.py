"""Tests of data/embeddings.py on small vector files each test writes."""

import gzip

import keras
import numpy as np
import pytest

from seqlab.data.embeddings import (
    PretrainedEmbeddings,
    embedding_coverage,
    pretrained_embeddings,
    read_vectors,
    resolve_vector_file,
)
from seqlab.data.errors import DataError

# Made-up 4-dimensional vectors, written in each layout.
VECTORS = {
    "the": [0.1, 0.2, 0.3, 0.4],
    "film": [-1.0, 0.5, 2.0, 0.0],
    "Paris": [1.5, -0.25, 0.125, 3.0],
    "great": [0.0, 0.0, 1.0, -1.0],
    "paris": [9.0, 9.0, 9.0, 9.0],
    "DULL": [2.0, 2.0, -2.0, 0.5],
}


def assert_vector(vector, word):
    np.testing.assert_array_equal(vector, np.float32(VECTORS[word]))


def vector_lines(vectors, trailing=""):
    return "".join(f"{word} {' '.join(map(str, values))}{trailing}\n"
                   for word, values in vectors.items())


def write_glove(path, vectors=VECTORS):
    path.write_text(vector_lines(vectors), encoding="utf-8")
    return path


def write_word2vec(path, vectors=VECTORS, trailing=""):
    dimension = len(next(iter(vectors.values())))
    path.write_text(f"{len(vectors)} {dimension}\n" + vector_lines(vectors, trailing),
                    encoding="utf-8")
    return path


@pytest.mark.parametrize("layout", ["glove", "word2vec", "fasttext", "glove.gz", "fasttext.gz"])
def test_each_layout_plain_and_gzip_gives_the_file_vectors(tmp_path, layout):
    if layout.startswith("glove"):
        text = vector_lines(VECTORS)
    else:
        # fastText .vec rows end with a space; word2vec text rows do not.
        text = f"{len(VECTORS)} 4\n" + vector_lines(VECTORS, " " if "fasttext" in layout else "")
    path = tmp_path / f"vectors.{'vec' if 'fasttext' in layout else 'txt'}"
    if layout.endswith(".gz"):
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(text.encode("utf-8")))
    else:
        path.write_text(text, encoding="utf-8")
    table = read_vectors(path, ["the", "film", "great", "absent"], case_fallback=False)
    assert table.file_format == ("glove" if layout.startswith("glove") else "word2vec")
    assert table.dimension == 4 and table.rows == len(VECTORS)
    assert sorted(table.vectors) == ["film", "great", "the"]
    for word, vector in table.vectors.items():
        assert vector.dtype == np.float32
        np.testing.assert_array_equal(vector, np.float32(VECTORS[word]))


def test_a_byte_order_mark_before_the_header_or_first_word_is_dropped(tmp_path):
    path = tmp_path / "bom.vec"
    path.write_bytes(b"\xef\xbb\xbf" + write_word2vec(tmp_path / "plain.vec").read_bytes())
    assert read_vectors(path, ["the"]).file_format == "word2vec"
    path.write_bytes(b"\xef\xbb\xbf" + write_glove(tmp_path / "plain.txt").read_bytes())
    assert_vector(read_vectors(path, ["the"]).vectors["the"], "the")


def test_gzip_is_recognised_by_its_bytes_not_its_name(tmp_path):
    path = tmp_path / "vectors.txt"
    path.write_bytes(gzip.compress(vector_lines(VECTORS).encode("utf-8")))
    assert_vector(read_vectors(path, ["film"]).vectors["film"], "film")


def test_a_ragged_row_is_refused_naming_the_file_and_line(tmp_path):
    rows = vector_lines(VECTORS).splitlines()
    rows[3] = "great 0.0 0.0 1.0"  # line 4: three values
    path = tmp_path / "ragged.txt"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(DataError, match=r"ragged\.txt, line 4: 3 values; expected a word and 4 "
                                        r"values \(line 1's dimension\)"):
        read_vectors(path, ["the"])
    # Also in a row whose word is not asked for, and against a header's dimension.
    path = write_word2vec(tmp_path / "ragged.vec")
    text = path.read_text().splitlines()
    text[2] += " 7.0"
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(DataError, match=r"ragged\.vec, line 3: 5 values; expected a word and 4 "
                                        r"values \(the header's dimension\)"):
        read_vectors(path, ["the"])


def test_bad_values_headers_and_files_are_refused(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("the 0.1 0.2 0.3 0.4\nfilm 1 x 2 3\n")
    with pytest.raises(DataError, match=r"bad\.txt, line 2: value 2 \('x'\) is not a finite "
                                        "number"):
        read_vectors(path, ["film"])
    path.write_text("the 0.1 0.2 nan 0.4\n")
    with pytest.raises(DataError, match=r"line 1: value 3 \('nan'\) is not a finite number"):
        read_vectors(path, ["the"])
    path.write_text("")
    with pytest.raises(DataError, match=r"bad\.txt: empty file"):
        read_vectors(path, ["the"])
    path.write_text("the\n")
    with pytest.raises(DataError, match=r"line 1: expected a header 'count dimension'"):
        read_vectors(path, ["the"])
    path.write_text("the 0.1 0.2\n\nfilm 0.3 0.4\n")
    with pytest.raises(DataError, match=r"line 2: an empty line; expected a word and 2 values"):
        read_vectors(path, ["the"])
    path.write_text("3 2\nthe 0.1 0.2\nfilm 0.3 0.4\n")
    with pytest.raises(DataError, match=r"line 1: the header announces 3 vectors, but the file "
                                        r"holds 2 \(truncated\?\)"):
        read_vectors(path, ["the"])
    path.write_bytes(b"1 2\n\xff\xfe 0.1 0.2\n")
    with pytest.raises(DataError, match=r"line 2: the word b'\\xff\\xfe' is not UTF-8 text"):
        read_vectors(path, ["the"])
    path.write_bytes(gzip.compress(b"the 0.1 0.2\n" * 50)[:30])
    with pytest.raises(DataError, match=r"bad\.txt: cannot be read \(EOFError"):
        read_vectors(path, ["the"])
    with pytest.raises(DataError, match=r"missing\.txt: file not found"):
        resolve_vector_file(str(tmp_path / "missing.txt"))
    with pytest.raises(DataError, match="is a folder"):
        resolve_vector_file(str(tmp_path))


def test_a_dimension_other_than_the_setting_is_refused_naming_both(tmp_path):
    path = write_glove(tmp_path / "glove.txt")
    with pytest.raises(DataError, match=r"glove\.txt, line 1: 4-dimensional vectors, but "
                                        r"--word-dim is 8; leave --word-dim out to take the "
                                        r"file's dimension, or set it to 4"):
        read_vectors(path, ["the"], dimension=8, setting="--word-dim")
    assert read_vectors(path, ["the"], dimension=4).dimension == 4


def test_case_fallback_prefers_the_exact_word_then_the_lower_case_form(tmp_path):
    path = write_glove(tmp_path / "glove.txt")
    words = ["paris", "Paris", "dull", "The", "Film", "absent"]
    table = read_vectors(path, words)
    # The exact word wins even when a case variant comes first in the file ("Paris", "paris").
    assert_vector(table.vectors["paris"], "paris")
    assert_vector(table.vectors["Paris"], "Paris")
    # A lower-cased vocabulary finds the file's cased word; a cased one the lower-cased word.
    assert_vector(table.vectors["dull"], "DULL")
    assert_vector(table.vectors["The"], "the")
    assert_vector(table.vectors["Film"], "film")
    assert table.case_matched == {"dull", "The", "Film"} and "absent" not in table.vectors
    assert sorted(read_vectors(path, words, case_fallback=False).vectors) == ["Paris", "paris"]


def test_coverage_of_the_vocabulary_and_of_the_training_tokens(tmp_path):
    path = write_glove(tmp_path / "glove.txt")
    # ids: 0 padding, 1 [UNK], then words; the file has the, film, great (not plot, zzz).
    vocabulary = ["", "[UNK]", "the", "film", "plot", "great", "zzz"]
    counts = [99, 3, 10, 4, 2, 1, 5]  # padding's count is never counted
    embeddings = pretrained_embeddings(str(path), vocabulary, counts, first_word_id=2)
    assert embeddings.ids.tolist() == [2, 3, 5]
    # By hand: 3 of the 5 words; tokens 10 + 4 + 1 = 15 of 3 + 10 + 4 + 2 + 1 + 5 = 25.
    assert embeddings.coverage == {
        "vocabulary": {"words": 5, "found": 3, "share": 0.6},
        "training_tokens": {"tokens": 25, "found": 15, "share": 0.6},
    }
    assert embedding_coverage([], 3, 1, [0, 4, 0]) == {
        "vocabulary": {"words": 2, "found": 0, "share": 0.0},
        "training_tokens": {"tokens": 4, "found": 0, "share": 0.0},
    }
    report = embeddings.report(frozen=True)
    assert report["dimension"] == 4 and report["dimension_from"] == "the vector file"
    assert report["format"] == "GloVe text" and report["file_vectors"] == len(VECTORS)
    assert report["frozen"] is True and report["found_by_case_fallback"] == 0
    line = embeddings.summary_line(frozen=False)
    assert "3 of 5 vocabulary words (60.0%" in line and "60.0% of the 25 training tokens" in line
    assert line.endswith("trained further")


def test_the_embedding_matrix_holds_the_file_vectors_and_keeps_the_rest(tmp_path):
    path = write_word2vec(tmp_path / "vectors.vec", trailing=" ")
    vocabulary = ["", "[UNK]", "paris", "the", "plot", "dull"]
    embeddings = pretrained_embeddings(str(path), vocabulary, [0, 1, 1, 1, 1, 1], 2,
                                       dimension=4, setting="--word-dim")
    assert embeddings.dimension_from == "--word-dim" and embeddings.case_matched == 1
    layer = keras.layers.Embedding(len(vocabulary), 4, mask_zero=True)
    layer.build((None, None))
    initial = layer.embeddings.numpy().copy()
    embeddings.copy_into(layer)
    matrix = layer.embeddings.numpy()
    np.testing.assert_array_equal(matrix[0], np.zeros(4))
    for row, word in ((2, "paris"), (3, "the"), (5, "DULL")):
        np.testing.assert_array_equal(matrix[row], np.float32(VECTORS[word]))
    # [UNK] and the word the file lacks keep the layer's initialisation.
    np.testing.assert_array_equal(matrix[[1, 4]], initial[[1, 4]])
    assert layer.trainable
    embeddings.copy_into(layer, freeze=True)
    assert not layer.trainable and not layer.trainable_weights
    with pytest.raises(ValueError, match="the vectors need 4 columns"):
        embeddings.matrix(np.zeros((6, 3)))


def test_copy_into_a_token_and_position_embedding_sets_its_token_table(tmp_path):
    from seqlab.layers import TokenAndPositionEmbedding

    path = write_glove(tmp_path / "glove.txt")
    embeddings = pretrained_embeddings(str(path), ["", "[UNK]", "film"], [0, 1, 1], 2)
    layer = TokenAndPositionEmbedding(3, 8, 4, mask_zero=True)
    layer.build((None, None))
    embeddings.copy_into(layer, freeze=True)
    np.testing.assert_array_equal(layer.token_embedding.embeddings.numpy()[2],
                                  np.float32(VECTORS["film"]))
    assert not layer.token_embedding.trainable


def test_only_the_vocabulary_vectors_are_kept_while_streaming(tmp_path):
    # 20 000 rows of 8 values, 2 asked for: the table holds 2 vectors.
    path = tmp_path / "big.txt.gz"
    rng = np.random.default_rng(0)
    values = rng.normal(size=(20000, 8)).astype(np.float32)
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        for index, row in enumerate(values):
            handle.write(f"w{index} " + " ".join(f"{v:.6f}" for v in row) + "\n")
    table = read_vectors(path, ["w7", "w19999"])
    assert table.rows == 20000 and sorted(table.vectors) == ["w19999", "w7"]
    np.testing.assert_allclose(table.vectors["w19999"], values[19999], atol=1e-6)


def test_pretrained_embeddings_is_a_dataclass_whose_matrix_keeps_rows_without_vectors(tmp_path):
    import dataclasses

    path = write_glove(tmp_path / "glove.txt")
    embeddings = pretrained_embeddings(str(path), ["", "[UNK]", "film"], [0, 0, 2], 2)
    assert isinstance(embeddings, PretrainedEmbeddings) and embeddings.ids.tolist() == [2]
    embeddings = dataclasses.replace(embeddings, ids=np.zeros(0, np.int64),
                                     vectors=np.zeros((0, 4), np.float32))
    matrix = embeddings.matrix(np.ones((3, 4)))
    np.testing.assert_array_equal(matrix, [[0] * 4, [1] * 4, [1] * 4])


def test_a_registered_name_resolves_through_the_data_set_registry(tmp_path, monkeypatch):
    from seqlab.data import datasets

    path = write_glove(tmp_path / "glove.6B.100d.txt")
    asked = []
    monkeypatch.setattr(datasets, "download", lambda name: asked.append(name) or path)
    monkeypatch.chdir(tmp_path)  # no file named glove.6B.100d here: the name is looked up
    embeddings = pretrained_embeddings("glove.6B.100d", ["", "[UNK]", "film"], [0, 0, 1], 2)
    assert asked == ["glove.6B.100d"] and embeddings.path == path
    assert_vector(embeddings.vectors[0], "film")
    with pytest.raises(DataError, match=r"no-such-name: file not found; expected a vector file, "
                                        r"or a registered name such as glove\.6B\.100d"):
        resolve_vector_file("no-such-name")


def test_files_that_are_no_text_vector_file_are_named_for_what_they_are(tmp_path):
    path = tmp_path / "vectors.vec"
    # A binary word2vec file not named .bin: "line 2: 1 values; expected a word and 3 values".
    rows = b"".join(word + b" " + np.float32(values).tobytes() + b"\n"
                    for word, values in [(b"the", [0.1, 0.2, 0.3]), (b"film", [0.5, -0.2, 0.3])])
    path.write_bytes(b"2 3\n" + rows)
    with pytest.raises(DataError, match=r"vectors\.vec, line 2: binary data: binary word2vec "
                                        r"files are not read; convert"):
        read_vectors(path, ["the"])
    # Old Mac line ends: read as one GloVe row of 9 values, matching nothing (exit 0).
    path.write_bytes(b"2 3\rgood 0.1 0.2 0.3\rbad -0.1 -0.2 -0.3\r")
    with pytest.raises(DataError, match=r"line 1: its lines end in a carriage return alone"):
        read_vectors(path, ["good"])
    # A header and no vectors: accepted, with a coverage of 0.
    path.write_text("0 3\n")
    with pytest.raises(DataError, match=r"vectors\.vec: no vectors, only a header"):
        read_vectors(path, ["the"])
    # GloVe's own archive and UTF-16 text were "not UTF-8 text ... a binary word2vec file".
    import zipfile
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("glove.6B.50d.txt", vector_lines(VECTORS))
    with pytest.raises(DataError, match=r"vectors\.vec: a zip archive; expected a vector file, "
                                        r"plain or gzip: extract"):
        read_vectors(path, ["the"])
    path.write_text(vector_lines(VECTORS), encoding="utf-16")
    with pytest.raises(DataError, match=r"vectors\.vec: UTF-16 text; expected UTF-8"):
        read_vectors(path, ["the"])
    # A text file is read whatever its name (a GloVe text file named .bin was refused).
    assert read_vectors(write_glove(tmp_path / "glove.bin"), ["the"]).rows == len(VECTORS)


def test_a_file_without_a_vector_for_any_vocabulary_word_is_refused(tmp_path):
    # The model started as without the file, silently (0 of 6 words, exit status 0).
    path = write_glove(tmp_path / "vectors.txt")
    with pytest.raises(DataError, match=r"vectors\.txt: none of the vocabulary's 2 words has a "
                                        r"vector among the file's 6; expected vectors of the "
                                        r"data's words"):
        pretrained_embeddings(str(path), ["", "[UNK]", "hund", "katze"], [0, 1, 1, 1], 2)
