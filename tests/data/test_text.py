"""Tests of data/text.py: reading, splitting, the character vocabulary, the datasets and a run's
corpus."""

import numpy as np
import pytest

from seqlab.data.errors import DataError
from seqlab.data.text import (
    UNKNOWN_ID,
    CharVocabulary,
    describe_gutenberg_left_out,
    load_corpus,
    load_default_text,
    make_dataset,
    make_stateful_dataset,
    make_window_dataset,
    prepare_corpus,
    read_text,
    scored_chars,
    split_text,
)


def batches(dataset):
    return [(x.numpy(), y.numpy()) for x, y in dataset]


# ---------------------------------------------------------------------------------------------
# Reading


def test_read_text_reads_a_file_and_drops_a_byte_order_mark(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes("\ufeffhé llo\n".encode("utf-8"))
    text, files = read_text(path)
    assert text == "hé llo\n" and files == [path]


def test_read_text_joins_a_folder_in_path_order_and_skips_hidden_files(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "2.txt").write_text("second\n")
    (tmp_path / "a.txt").write_text("first")  # no final line break: one is put in
    (tmp_path / ".hidden.txt").write_text("never read")
    text, files = read_text(tmp_path)
    assert text == "first\nsecond\n"
    assert [f.name for f in files] == ["a.txt", "2.txt"]


def test_undecodable_bytes_name_the_file_line_and_byte_offset(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"ok\ncaf\xe9 au lait\n")
    with pytest.raises(
        DataError,
        match=r"latin1\.txt, line 2: undecodable bytes at byte offset 6 \(0xe9\); expected UTF-8 "
              r"text",
    ):
        read_text(path)


@pytest.mark.parametrize("ending", ["\r\n", "\r"], ids=["crlf", "lone-cr"])
def test_line_endings_are_normalised_as_in_text_mode(tmp_path, ending):
    lines = ["First Citizen:", "Before we proceed any further, hear me speak.", "", "All:"]
    path = tmp_path / "windows.txt"
    path.write_bytes(ending.join(lines + [""]).encode("utf-8"))
    text, _ = read_text(path)
    assert text == "\n".join(lines + [""])
    corpus = prepare_corpus(path, val_fraction=0.2)
    assert "\r" not in corpus.vocabulary.chars and "\n" in corpus.vocabulary.chars
    assert corpus.total_chars == len(text)
    # A folder's files are joined at their normalised ends; lines in messages count the same
    # line breaks, also for undecodable bytes.
    (tmp_path / "more.txt").write_bytes(f"more{ending}caf\xe9{ending}".encode("latin-1"))
    with pytest.raises(DataError, match=r"more\.txt, line 2: undecodable bytes at byte offset "
                                        rf"{4 + len(ending) + 3} \(0xe9\)"):
        read_text(tmp_path)
    (tmp_path / "more.txt").write_bytes(f"more{ending}".encode("utf-8"))
    assert read_text(tmp_path)[0] == "more\n" + text


def test_undecodable_file_inside_a_folder_is_named(tmp_path):
    (tmp_path / "good.txt").write_text("fine\n")
    (tmp_path / "bad.txt").write_bytes(b"\xff")
    with pytest.raises(DataError, match=r"bad\.txt, line 1: undecodable bytes at byte offset 0"):
        read_text(tmp_path)


def test_empty_inputs_are_data_errors(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(DataError, match=r"empty\.txt: the file is empty; expected text"):
        read_text(empty)
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(DataError, match="the folder holds no files; expected text files"):
        read_text(folder)
    (folder / "x.txt").write_text("")
    with pytest.raises(DataError, match="every file in the folder is empty; expected text"):
        read_text(folder)
    # Only line breaks trained a model of one character (the other tasks refuse such files).
    empty.write_text("\n" * 400)
    with pytest.raises(DataError, match=r"empty\.txt: the file holds only blank lines and white "
                                        r"space \(400 characters\); expected text"):
        read_text(empty)
    empty.write_text("\u200b\n\ufeff \u3000\n" * 100)  # invisible characters and spaces
    with pytest.raises(DataError, match=r"empty\.txt: the file holds only blank lines"):
        read_text(empty)
    (folder / "x.txt").write_text(" \n\t\n")
    with pytest.raises(DataError, match="the folder's files hold only blank lines and white "
                                        "space; expected text"):
        read_text(folder)
    with pytest.raises(DataError, match=r"missing\.txt: file or folder not found"):
        read_text(tmp_path / "missing.txt")


def test_default_text_is_the_source_of_a_standard_library_package():
    text, source = load_default_text("json")
    assert "email" not in source and "'json' package" in source
    assert "def dumps(" in text and "class JSONDecoder" in text
    assert len(text) > 10_000
    text, source = load_default_text()  # the default: the email package
    assert "'email' package" in source and len(text) > 100_000


def test_split_keeps_text_order_and_refuses_tiny_texts():
    train, validation = split_text("abcdefghij", 0.2)
    assert (train, validation) == ("abcdefgh", "ij")
    with pytest.raises(DataError, match=r"x\.txt: the text is too short to split: 3 characters "
                                        r"give 3 for training and 0 for validation"):
        split_text("abc", 0.1, source="x.txt")


# ---------------------------------------------------------------------------------------------
# Vocabulary


def test_vocabulary_reserves_padding_and_unknown_ids():
    vocabulary = CharVocabulary.from_text("hello\n")
    assert vocabulary.chars == ["\n", "e", "h", "l", "o"]
    assert vocabulary.size == 7
    ids, unseen = vocabulary.encode("hole\n")
    assert ids.tolist() == [4, 6, 5, 3, 2] and unseen == {}
    assert vocabulary.decode(ids) == "hole\n"
    assert vocabulary.decode([0, 4, 0]) == "h"  # padding is dropped


def test_unseen_characters_follow_the_policy(tmp_path):
    vocabulary = CharVocabulary.from_text("abc\n")
    ids, unseen = vocabulary.encode("abxcxé")
    assert ids.tolist() == [3, 4, UNKNOWN_ID, 5, UNKNOWN_ID, UNKNOWN_ID]
    assert unseen == {"x": 2, "é": 1}
    assert vocabulary.decode(ids) == "ab[UNK]c[UNK][UNK]"
    with pytest.raises(
        DataError,
        match=r"val\.txt, line 2: character 'x' \(offset 3\) is not in the training vocabulary; "
              r"unseen in all: 'x' x1, 'é' x1\. Use the policy 'unknown' \(--unseen-chars unknown\)",
    ):
        vocabulary.encode("ab\nxé", policy="error", source="val.txt")


def test_vocabulary_file_round_trip_keeps_line_breaks_and_spaces(tmp_path):
    vocabulary = CharVocabulary.from_text("a b\n\t\"é")
    path = tmp_path / "vocabulary.txt"
    path.write_text(vocabulary.to_text(), encoding="utf-8")
    assert path.read_text(encoding="utf-8").splitlines()[:2] == ['"\\t"', '"\\n"']
    loaded = CharVocabulary.from_file(path)
    assert loaded.chars == vocabulary.chars
    assert loaded.encode("b é\n")[0].tolist() == vocabulary.encode("b é\n")[0].tolist()
    # Hand-edited lines, each refused naming its line (a JSON number was a TypeError without
    # a file, a repeat quoted the whole vocabulary).
    for text, message in (('"a"\nb\n', r"line 2: not one character as a JSON string: 'b'"),
                          ('"a"\n1\n', r"line 2: not one character as a JSON string: '1'"),
                          ('"a"\n"ab"\n', r"line 2: not one character as a JSON string"),
                          ('"a"\n"b"\n"a"\n', r"line 3: the character 'a' is on line 1 too")):
        path.write_text(text, encoding="utf-8")
        with pytest.raises(DataError, match=message):
            CharVocabulary.from_file(path)
    path.write_bytes(b'"a"\n"\xff"\n')  # not UTF-8: a UnicodeDecodeError without the file
    with pytest.raises(DataError, match=r"vocabulary\.txt, line 2: undecodable bytes"):
        CharVocabulary.from_file(path)


def test_a_vocabulary_of_unicode_line_separators_reads_back(tmp_path):
    # A run trained on text holding U+2028, U+2029 or U+0085 could not be evaluated, predicted
    # or exported: JSON leaves them raw and the reader split lines at them too.
    vocabulary = CharVocabulary.from_text("a\u2028b\u2029c\x85d\n")
    path = tmp_path / "vocabulary.txt"
    path.write_text(vocabulary.to_text(), encoding="utf-8")
    assert len(path.read_text(encoding="utf-8").splitlines()) == len(vocabulary.chars)
    assert CharVocabulary.from_file(path).chars == vocabulary.chars
    # A run written before: the characters raw on their lines.
    path.write_text("".join(f'"{c}"\n' if c != "\n" else '"\\n"\n' for c in vocabulary.chars),
                    encoding="utf-8")
    assert CharVocabulary.from_file(path).chars == vocabulary.chars


# ---------------------------------------------------------------------------------------------
# Datasets


def test_windows_pair_each_input_with_the_next_character():
    ids = np.arange(2, 43)  # 41 ids: 5 windows of 8
    pairs = batches(make_window_dataset(ids, window=8, batch_size=2, seed=1))
    x = np.concatenate([p[0] for p in pairs])
    y = np.concatenate([p[1] for p in pairs])
    assert x.shape == (5, 8) and [len(p[0]) for p in pairs] == [2, 2, 1]
    np.testing.assert_array_equal(y, x + 1)
    # Non-overlapping windows that cover the text once.
    np.testing.assert_array_equal(np.sort(x.reshape(-1)), ids[:40])


def test_windows_are_shuffled_reproducibly_and_kept_in_order_for_evaluation():
    ids = np.arange(200)
    first = batches(make_window_dataset(ids, 9, 4, seed=3))
    again = batches(make_window_dataset(ids, 9, 4, seed=3))
    np.testing.assert_array_equal(first[0][0], again[0][0])
    ordered = batches(make_window_dataset(ids, 9, 4, shuffle=False))
    assert ordered[0][0][:, 0].tolist() == [0, 9, 18, 27]
    assert first[0][0][:, 0].tolist() != [0, 9, 18, 27]


def test_stateful_batches_continue_each_stream_row_by_row():
    ids = np.arange(1000)
    pairs = batches(make_stateful_dataset(ids, batch_size=4, window=10))
    # (1000 - 1) // 40 = 24 full batches; every stream holds 240 consecutive ids.
    assert len(pairs) == 24
    for x, y in pairs:
        assert x.shape == y.shape == (4, 10)
        np.testing.assert_array_equal(y, x + 1)
        np.testing.assert_array_equal(np.diff(x, axis=1), 1)
    for (x, _), (next_x, _) in zip(pairs, pairs[1:]):
        # Row b of batch k+1 starts right where row b of batch k ended.
        np.testing.assert_array_equal(next_x[:, 0], x[:, -1] + 1)
    assert pairs[0][0][:, 0].tolist() == [0, 240, 480, 720]


def test_datasets_refuse_texts_shorter_than_one_batch():
    with pytest.raises(DataError, match=r"t\.txt: the text is too short for stateful batches of 4 "
                                        r"streams x 10 steps: it has 40 characters and needs at "
                                        r"least 41"):
        make_stateful_dataset(np.arange(40), batch_size=4, window=10, source="t.txt")
    with pytest.raises(DataError, match="too short for one window of 10 steps: it has 10 "
                                        "characters and needs at least 11"):
        make_window_dataset(np.arange(10), window=10, batch_size=2)


def test_make_dataset_reads_as_a_stateless_or_stateful_model_and_scored_chars_counts_it():
    ids = np.arange(2, 103)  # 101 ids
    stateless = batches(make_dataset(ids, window=8, batch_size=4))
    assert stateless[0][0][:, 0].tolist() == [2, 10, 18, 26]  # in text order unless shuffled
    shuffled = batches(make_dataset(ids, window=8, batch_size=4, shuffle=True, seed=3))
    np.testing.assert_array_equal(
        shuffled[0][0], batches(make_window_dataset(ids, 8, 4, seed=3))[0][0]
    )
    stateful = batches(make_dataset(ids, window=8, batch_size=3, stateful=True))
    assert [x.shape for x, _ in stateful] == [(3, 8)] * 4
    assert stateful[1][0][:, 0].tolist() == [10, 42, 74]  # 3 streams of 32 ids
    for stateful_mode, pairs, batch_size in ((False, stateless, 4), (True, stateful, 3)):
        counted = sum(x.size for x, _ in pairs)
        assert scored_chars(len(ids), 8, batch_size, stateful=stateful_mode) == counted
    assert scored_chars(101, 8, 4) == 96 and scored_chars(101, 8, 3, stateful=True) == 96
    with pytest.raises(DataError, match=r"t\.txt: the text is too short for one window"):
        make_dataset(np.arange(5), window=8, batch_size=2, source="t.txt")


# ---------------------------------------------------------------------------------------------
# A run's corpus


def test_load_corpus_names_a_file_a_folder_or_the_default(tmp_path):
    (tmp_path / "a.txt").write_text("first\n")
    assert load_corpus(tmp_path / "a.txt") == ("first\n", str(tmp_path / "a.txt"))
    (tmp_path / "b.txt").write_text("second\n")
    assert load_corpus(tmp_path) == ("first\nsecond\n", f"{tmp_path} (2 files)")
    text, source = load_corpus(None)
    assert source.startswith("Python standard library") and text == load_default_text()[0]
    with pytest.raises(DataError, match="file or folder not found"):
        load_corpus(tmp_path / "missing.txt")


def test_prepare_corpus_splits_in_order_and_encodes_with_the_training_vocabulary(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("abcabcabcabcabcabxz!")  # 20 characters: 16 for training, 4 for validation
    corpus = prepare_corpus(path, val_fraction=0.2)
    assert corpus.source == str(path) and corpus.total_chars == 20
    assert corpus.vocabulary.chars == ["a", "b", "c"]
    assert corpus.vocabulary.decode(corpus.train_ids) == "abcabcabcabcabca"
    assert corpus.val_text == "bxz!" and corpus.val_ids.tolist()[0] == 3
    assert corpus.unseen == {"x": 1, "z": 1, "!": 1} and corpus.unused_train_chars == 0
    assert corpus.report() == {
        "source": str(path), "chars": 20, "train_chars": 16, "unused_train_chars": 0,
        "val_chars": 4, "vocabulary_size": 5, "unseen_val_chars": {"x": 1, "z": 1, "!": 1},
    }

    shorter = prepare_corpus(path, val_fraction=0.2, max_train_chars=5)
    assert shorter.unused_train_chars == 11 and len(shorter.train_ids) == 5
    assert shorter.val_text == "bxz!" and shorter.total_chars == 20

    given = CharVocabulary(["a", "b", "x"])
    again = prepare_corpus(path, val_fraction=0.2, vocabulary=given)
    assert again.vocabulary is given and again.unseen == {"z": 1, "!": 1}

    # Offset and line in the file (they were counted from the validation part's start: 1).
    with pytest.raises(DataError, match=r"t\.txt, line 1: character 'x' \(offset 17\) is not "
                                        r"in the training vocabulary"):
        prepare_corpus(path, val_fraction=0.2, unseen_chars="error")
    path.write_text("ab\n" * 41 + "abQ\n")  # Q: line 42, offset 125; validation from line 36
    with pytest.raises(DataError, match=r"t\.txt, line 42: character 'Q' \(offset 125\)"):
        prepare_corpus(path, val_fraction=0.15, unseen_chars="error")
    path.write_text("abcabcabcabcabcabxz!")
    # Where the validation part starts, whatever --max-train-chars keeps (the sample prompt
    # skipped a whole line when the last kept character was no line break).
    path.write_text("abc\n" * 5)  # 20 characters: the validation part is the last line
    assert prepare_corpus(path, val_fraction=0.2, max_train_chars=6).val_starts_a_line
    assert not prepare_corpus(path, val_fraction=0.15).val_starts_a_line
    path.write_text("abcabcabcabcabcabxz!")
    with pytest.raises(DataError, match="the text is too short to split"):
        prepare_corpus(path, val_fraction=0.01)


def test_a_nul_character_is_named_with_its_line(tmp_path):
    # Found by tests/test_fuzz.py: a NUL became an empty character in Keras's StringLookup,
    # whose ValueError came out as a traceback. Every reader decodes through decode_utf8.
    path = tmp_path / "text.txt"
    path.write_bytes(b"first line\nsecond\x00line\n")
    with pytest.raises(DataError, match=r"text\.txt, line 2: a NUL character \(byte 0\) at byte "
                                        r"offset 17; expected text"):
        read_text(path)


@pytest.mark.parametrize("make, sizes", [
    (make_window_dataset, {"window": 0, "batch_size": 2}),
    (make_window_dataset, {"window": -2, "batch_size": 2}),
    (make_window_dataset, {"window": 2.5, "batch_size": 2}),
    (make_window_dataset, {"window": 3, "batch_size": 0}),
    (make_stateful_dataset, {"window": 3, "batch_size": 0}),
    (make_stateful_dataset, {"window": 3, "batch_size": -1}),
    (make_stateful_dataset, {"window": True, "batch_size": 2}),
])
def test_window_and_batch_sizes_that_are_not_positive_integers_are_refused_by_name(make, sizes):
    # A ZeroDivisionError, a reshape's "only one unknown dimension" or a slice's TypeError was
    # all a library user got.
    bad = next(name for name, value in sizes.items()
               if isinstance(value, bool) or not isinstance(value, int) or value < 1)
    with pytest.raises(ValueError, match=rf"{bad} must be a positive integer\. Received: {bad}="):
        make(np.arange(20), **sizes)


@pytest.mark.parametrize("make", [
    lambda ids: make_window_dataset(ids, window=2, batch_size=2, shuffle=False),
    lambda ids: make_stateful_dataset(ids, batch_size=1, window=2),
], ids=["window", "stateful"])
@pytest.mark.parametrize("ids, expected", [
    (np.array([1.7, 2.2, 3.9, 4.0, 5.0]), r"whole numbers from 0 to 2147483647\. Received 1\.7 "
                                          r"at position 0 \(and 2 more\)"),
    (np.array([3, 2, 2**31 + 1, 4, 5]), r"Received 2147483649 at position 2$"),
    (np.array([3, 2, -1, 4, 5]), r"Received -1 at position 2$"),
    ([1.0, 2.0, 3.0, 4.0, float("nan")], r"Received nan at position 4$"),
    (np.arange(10).reshape(2, 5), r"1-D array of character ids\. Received an array of shape "
                                  r"\(2, 5\)"),
    (np.array([True, False, True, True, False]), r"integers \(character ids\)\. Received dtype "
                                                 r"bool"),
    (list("abcde"), r"integers \(character ids\)\. Received dtype <U1"),
])
def test_ids_a_cast_to_int32_would_change_are_refused(make, ids, expected):
    # They were cast silently: 1.7 trained as id 1, 2**31 + 1 as -2147483647, -1 and booleans
    # as ids; strings and 2-D arrays failed inside numpy.
    with pytest.raises(ValueError, match=expected):
        make(ids)


def test_whole_number_float_ids_read_as_their_integers():
    x, y = next(iter(make_window_dataset(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), window=2,
                                         batch_size=2, shuffle=False)))
    assert x.numpy().tolist() == [[1, 2], [3, 4]] and y.numpy().tolist() == [[2, 3], [4, 5]]


def test_encode_refuses_what_is_not_a_string():
    # A list of characters was encoded as if joined; bytes were read as UTF-8 and an unseen
    # byte then reported as an integer.
    vocabulary = CharVocabulary.from_text("abc")
    for text in (["a", "b"], b"ab"):
        with pytest.raises(TypeError, match=r"text must be a string \(decode bytes first\)"):
            vocabulary.encode(text)


def test_a_text_encoded_in_pieces_gives_the_ids_and_offsets_of_one_piece(monkeypatch):
    # A 200 MB text was split into one string tensor element a character: 9 GB, then a
    # segmentation fault inside TensorFlow. It is looked up in pieces now.
    import seqlab.data.text as text_module

    vocabulary = CharVocabulary.from_text("ab \n")
    text = "ab \n" * 50 + "x" + "ba"
    whole, unseen = vocabulary.encode(text)
    monkeypatch.setattr(text_module, "_ENCODE_CHARS", 7)
    pieces, unseen_in_pieces = vocabulary.encode(text)
    np.testing.assert_array_equal(pieces, whole)
    assert pieces.dtype == np.int32 and len(pieces) == len(text)
    assert unseen == unseen_in_pieces == {"x": 1}
    with pytest.raises(DataError, match=r"line 51: character 'x' \(offset 200\)"):
        vocabulary.encode(text, policy="error")
    assert vocabulary.encode("")[0].shape == (0,)



GUTENBERG_HEADER = ("The Project Gutenberg eBook of Tiny Play\n\nThis eBook is for the use of "
                    "anyone anywhere.\n\n*** START OF THE PROJECT GUTENBERG EBOOK TINY PLAY ***"
                    "\n")
GUTENBERG_LICENSE = ("*** END OF THE PROJECT GUTENBERG EBOOK TINY PLAY ***\n\nSection 1. "
                     "General Terms of Use and Redistributing Project Gutenberg works\n")


def test_a_project_gutenberg_books_header_and_license_are_left_out_of_a_corpus(tmp_path):
    # They were trained on, and the license, at the text's end, was most of a short book's
    # validation part.
    book = "ROMEO: But soft!\nJULIET: Ay me.\n" * 20
    folder = tmp_path / "books"
    folder.mkdir()
    framed = folder / "a.txt"
    framed.write_bytes((GUTENBERG_HEADER + book + GUTENBERG_LICENSE).replace("\n", "\r\n")
                       .encode())
    (folder / "b.txt").write_text("my own notes\n")  # no markers: read whole
    assert read_text(framed)[0] == GUTENBERG_HEADER + book + GUTENBERG_LICENSE  # as it is
    left_out = {}
    assert read_text(folder, left_out=left_out)[0] == book + "my own notes\n"
    assert left_out == {framed: len(GUTENBERG_HEADER) + len(GUTENBERG_LICENSE)}
    assert describe_gutenberg_left_out(left_out) == (
        f"Project Gutenberg's header and license (the text outside each book's START and END "
        f"lines) left out: {len(GUTENBERG_HEADER) + len(GUTENBERG_LICENSE):,} characters (a.txt)")
    corpus = prepare_corpus(framed, val_fraction=0.2)
    assert corpus.total_chars == len(book)
    assert corpus.report()["gutenberg_left_out"] == {str(framed): left_out[framed]}
    assert corpus.vocabulary.encode(book[-10:])[1] == {}  # the license's letters are not read
    assert "G" not in corpus.vocabulary.chars
    # A START without an END, or nothing between them: the text as it is.
    for text in (GUTENBERG_HEADER + book, GUTENBERG_HEADER + "\n" + GUTENBERG_LICENSE):
        framed.write_text(text)
        left_out = {}
        assert read_text(framed, left_out=left_out)[0] == text and left_out == {}


def framed_book(title, body):
    return (GUTENBERG_HEADER.replace("TINY PLAY", title) + body
            + GUTENBERG_LICENSE.replace("TINY PLAY", title))


def test_every_book_of_a_file_of_joined_gutenberg_books_is_kept(tmp_path):
    # `cat a.txt b.txt c.txt` of three books: the second and third were left out silently (the
    # first START to the first END was the book, all the rest a license).
    bodies = ["ROMEO: But soft!\n" * 5, "HAMLET: Words, words.\n" * 5, "LEAR: Nothing.\n" * 5]
    text = "".join(framed_book(f"B{i}", body) for i, body in enumerate(bodies))
    path = tmp_path / "joined.txt"
    path.write_text(text)
    left_out = {}
    assert read_text(path, left_out=left_out)[0] == "".join(bodies)
    assert left_out == {path: len(text) - len("".join(bodies))}
    assert left_out[path] == sum(len(framed_book(f"B{i}", "")) for i in range(3))


@pytest.mark.parametrize("text, books", [
    # An END line without a START line: no frame, the text as it is.
    ("intro\n" + GUTENBERG_LICENSE + "more\n", None),
    # An END before the only START, which has no END of its own: as it is.
    (GUTENBERG_LICENSE + GUTENBERG_HEADER + "body\n", None),
    # A second book whose license was cut off (no END): kept to the text's end.
    (framed_book("A", "one\n") + GUTENBERG_HEADER + "two\n", "one\ntwo\n"),
    # A first book without its END: kept up to the next START line.
    (GUTENBERG_HEADER + "one\n" + framed_book("B", "two\n"),
     "one\n" + GUTENBERG_HEADER.partition("*** START")[0] + "two\n"),
    # A stray END between two books lies in what is left out.
    (framed_book("A", "one\n") + GUTENBERG_LICENSE + framed_book("B", "two\n"), "one\ntwo\n"),
    # An empty frame beside a full one: the full one's book.
    (framed_book("A", "") + framed_book("B", "two\n"), "two\n"),
    # Lines that mention the words without the `***` at a line's start are text.
    ("He said *** START OF THE PROJECT GUTENBERG EBOOK X *** twice.\n"
     + framed_book("A", "End of the Project Gutenberg EBook of A\n"
                        "START OF THE PROJECT GUTENBERG EBOOK B\n"
                        " *** END OF THE PROJECT GUTENBERG EBOOK A ***\n"),
     "End of the Project Gutenberg EBook of A\nSTART OF THE PROJECT GUTENBERG EBOOK B\n"
     " *** END OF THE PROJECT GUTENBERG EBOOK A ***\n"),
])
def test_gutenberg_frames_with_a_line_missing_or_mentioned(tmp_path, text, books):
    path = tmp_path / "book.txt"
    path.write_text(text)
    left_out = {}
    kept = read_text(path, left_out=left_out)[0]
    assert kept == (text if books is None else books)
    assert left_out == ({} if books is None else {path: len(text) - len(books)})
