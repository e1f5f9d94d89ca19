"""Tests of data/translation.py: readers, reversible tokens, vocabularies, batches."""

import re

import numpy as np
import pytest
import tensorflow as tf

from seqlab.data.errors import DataError
from seqlab.data.translation import (
    END_ID,
    START_ID,
    SPACE_MARK,
    TRAIN_BUCKET_WIDTH,
    UNK_ID,
    SentencePairs,
    Vocabulary,
    detokenize,
    encode_pairs,
    find_split_files,
    left_out_line,
    load_data,
    load_sample,
    make_dataset,
    planned_batches,
    read_aligned,
    read_pairs,
    read_sources,
    read_test_pairs,
    read_tsv_pairs,
    split_pairs,
    tokenize,
)


def write(path, text, encoding="utf-8"):
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return path


def strings(tensor):
    return [t.decode("utf-8") for t in tensor.numpy()]


# Tokens


def test_tokens_keep_case_punctuation_and_where_the_spaces_were():
    tokens = tokenize(["A man's bike.", "Ein Mädchen (7) sagt: \"Hallo!\""])
    assert strings(tokens[0]) == ["A", "▁man", "'", "s", "▁bike", "."]
    assert strings(tokens[1]) == [
        "Ein", "▁Mädchen", "▁(", "7", ")", "▁sagt", ":", '▁"', "Hallo", "!", '"'
    ]


@pytest.mark.parametrize(
    "text",
    [
        "A man is riding a bike.",
        "Zwei junge weiße Männer sind im Freien in der Nähe vieler Büsche.",
        "It's 3.5 km -- \"far\", isn't it?!",
        "  Leading,\ttabs   and    runs of spaces  ",
        "naïve café, Ångström; 東京 (Tokyo)",
        "",
    ],
)
def test_detokenize_inverts_tokenize_up_to_whitespace_runs(text):
    restored = strings(detokenize(tokenize([text])))[0]
    assert restored == " ".join(text.split())


def test_a_literal_space_mark_in_the_text_reads_as_a_space():
    assert strings(tokenize([f"a{SPACE_MARK}b"])[0]) == ["a", "▁b"]


def test_unknown_words_in_output_are_written_as_words_of_their_own():
    tokens = tf.constant([["Ein", "▁Boston", "[UNK]", "▁läuft", "."],
                          ["[UNK]", "[UNK]", "!", "", ""]])
    assert strings(detokenize(tokens)) == ["Ein Boston [UNK] läuft.", "[UNK] [UNK]!"]


# Vocabularies


def test_vocabulary_reserves_four_ids_and_orders_by_frequency_then_alphabet(tmp_path):
    tokens = tokenize(["A dog. A cat.", "A cow."])
    vocabulary = Vocabulary.build(tokens)
    assert vocabulary.tokens == ["", "[UNK]", "[START]", "[END]", ".", "A", "▁A", "▁cat",
                                 "▁cow", "▁dog"]
    assert Vocabulary.build(tokens, min_count=3).tokens[4:] == ["."]
    assert Vocabulary.build(tokens, max_size=6).tokens[4:] == [".", "A"]
    vocabulary.save(tmp_path / "vocabulary.txt")
    assert (tmp_path / "vocabulary.txt").read_text(encoding="utf-8").splitlines()[0] == "."
    assert Vocabulary.load(tmp_path / "vocabulary.txt").tokens == vocabulary.tokens
    (tmp_path / "vocabulary.txt").write_bytes(b".\nA\n\xe9t\xe9\n")  # Latin-1, not UTF-8
    with pytest.raises(DataError, match=r"vocabulary\.txt, line 3: undecodable bytes"):
        Vocabulary.load(tmp_path / "vocabulary.txt")
    # An edited line was refused without naming the file or the line.
    for text, message in ((".\nA\n\n▁dog\n", r"line 3: '' cannot be a token; expected one "
                                              r"token per line"),
                          (".\n[END]\n", r"line 2: '\[END\]' cannot be a token"),
                          (".\n A\n", r"line 2: ' A' cannot be a token"),
                          (".\nA\n.\n", r"line 3: the token '\.' is on line 1 too; expected "
                                         r"each token once")):
        (tmp_path / "vocabulary.txt").write_text(text, encoding="utf-8")
        with pytest.raises(DataError, match=rf"vocabulary\.txt, {message}"):
            Vocabulary.load(tmp_path / "vocabulary.txt")


def test_lookup_maps_unknown_tokens_to_unk_and_inverts_padding_to_empty():
    vocabulary = Vocabulary.build(tokenize(["A dog."]))
    ids = vocabulary.lookup_layer()(tokenize(["A cat."]))
    assert ids.to_list() == [[vocabulary.tokens.index("A"), UNK_ID, vocabulary.tokens.index(".")]]
    back = vocabulary.lookup_layer(invert=True)(tf.constant([[5, 0, START_ID, END_ID]]))
    assert strings(back[0]) == ["A", "", "[START]", "[END]"]


def test_vocabulary_refuses_reserved_or_blank_tokens():
    with pytest.raises(ValueError, match="vocabulary tokens must be non-empty"):
        Vocabulary(["[END]"])
    with pytest.raises(ValueError, match="vocabulary tokens must be unique"):
        Vocabulary(["a", "a"])


# Readers


def test_aligned_files_are_read_line_for_line(tmp_path):
    source = write(tmp_path / "train.en", "\ufeffA dog.\nTwo cats sleep.\n")
    target = write(tmp_path / "train.de", "Ein Hund.\r\nZwei Katzen schlafen.\r\n")
    pairs = read_aligned(source, target)
    assert pairs.sources == ["A dog.", "Two cats sleep."]
    assert pairs.targets == ["Ein Hund.", "Zwei Katzen schlafen."]
    assert pairs.origins[1] == (str(source), 2)


def test_misaligned_files_name_the_file_and_the_first_line_without_a_pair(tmp_path):
    source = write(tmp_path / "src.txt", "One.\nTwo.\nThree.\n")
    target = write(tmp_path / "tgt.txt", "Eins.\nZwei.\n")
    message = (
        f"{re.escape(str(source))}, line 3: the aligned files have different line counts "
        r"\(src.txt: 3, tgt.txt: 2\)"
    )
    with pytest.raises(DataError, match=message):
        read_aligned(source, target)
    with pytest.raises(DataError, match=re.escape(f"{source}, line 3")):
        read_aligned(target, source)


def test_pairs_with_an_empty_line_on_either_side_are_left_out_and_counted(tmp_path):
    # Europarl's aligned files have many empty lines; each was refused in turn, so a user
    # edited and reran again and again. fairseq, Marian and OpenNMT leave such pairs out.
    source = write(tmp_path / "src.txt", "One.\nTwo.\n\nFour.\n\n")
    target = write(tmp_path / "tgt.txt", "Eins.\n  \nDrei.\nVier.\n\n")
    pairs = read_aligned(source, target)
    assert list(zip(pairs.sources, pairs.targets)) == [("One.", "Eins."), ("Four.", "Vier.")]
    assert pairs.origins == [(str(source), 1), (str(source), 4)]
    assert pairs.empty_lines == [2, 3, 5]
    assert pairs.empty_report() == {"file": f"{source} + {target}", "count": 3,
                                    "first": [2, 3, 5]}
    assert pairs.subset([0]).empty_lines == []
    assert read_aligned(source, source).empty_report()["first"] == [3, 5]
    # The line counts still have to agree: an extra empty line shifts every pair after it.
    with pytest.raises(DataError, match="different line counts"):
        read_aligned(source, write(tmp_path / "short.txt", "Eins.\n\nDrei.\nVier.\n"))


def test_no_pair_left_without_an_empty_side_is_refused_naming_the_files(tmp_path):
    source = write(tmp_path / "src.txt", "One.\n\n")
    target = write(tmp_path / "tgt.txt", "\nZwei.\n")
    with pytest.raises(DataError, match=re.escape(
            f"{source} + {target}: no sentence pair is left: each of the 2 has an empty side (an "
            "empty line in src.txt or tgt.txt); expected pairs of sentences")):
        read_aligned(source, target)
    tsv = write(tmp_path / "blank.tsv", "Go.\t \n\n")
    with pytest.raises(DataError, match=re.escape(
            f"{tsv}: no sentence pair is left: each of the 2 has an empty side (a blank line, or "
            "an empty column 1 or 2)")):
        read_tsv_pairs(tsv)


def test_left_out_pairs_are_said_by_split_in_the_report(tmp_path):
    lines = [f"S{k}." for k in range(12)]
    source = write(tmp_path / "src.txt", "".join(f"{line}\n" for line in lines))
    target = write(tmp_path / "tgt.txt", "".join("\n" if k % 2 else f"T{k}.\n"
                                                 for k in range(12)))
    prepared = load_data(src=source, tgt=target, val_fraction=0.2, test_fraction=0.2, seed=0)
    assert len(prepared.train) + len(prepared.val) + len(prepared.tests["test"]) == 6
    report = {"file": f"{source} + {target}", "count": 6, "first": [2, 4, 6, 8, 10]}
    assert prepared.left_out_empty == {"train": report}
    assert prepared.encode(batch_size=2).report()["left_out_empty_side"] == {"train": report}
    assert left_out_line(report) == (
        f"left out (a side empty): 6 pairs of {source} + {target}, lines 2, 4, 6, 8, 10 and 1 "
        "more")
    assert left_out_line({"file": "a.tsv", "count": 1, "first": [3]}) == (
        "left out (a side empty): 1 pair of a.tsv, line 3")


def test_missing_empty_and_undecodable_files_are_errors(tmp_path):
    good = write(tmp_path / "good.txt", "One.\n")
    with pytest.raises(DataError, match=re.escape(f"{tmp_path / 'nope.txt'}: file not found")):
        read_aligned(tmp_path / "nope.txt", good)
    empty = write(tmp_path / "empty.txt", "\n \n")
    with pytest.raises(DataError, match=r"empty.txt: the file holds only blank lines and white "
                                        r"space \(3 characters\); expected one "
                                        r"sentence"):
        read_aligned(good, empty)
    latin = write(tmp_path / "latin.txt", "One.\nZwei Männer.\n", encoding="latin-1")
    with pytest.raises(DataError, match=r"latin.txt, line 2: undecodable bytes .*expected UTF-8"):
        read_aligned(good, latin)


def test_tsv_pairs_ignore_extra_columns_and_can_swap_the_direction(tmp_path):
    path = write(
        tmp_path / "deu.txt",
        "Go.\tGeh.\tCC-BY 2.0 (France) Attribution: tatoeba.org #2877272\n"
        "Hi.\tHallo!\tCC-BY 2.0 (France) Attribution: tatoeba.org #538123\n",
    )
    pairs = read_tsv_pairs(path)
    assert pairs.sources == ["Go.", "Hi."] and pairs.targets == ["Geh.", "Hallo!"]
    assert read_tsv_pairs(path, columns=(2, 1)).sources == ["Geh.", "Hallo!"]


def test_sentences_to_translate_are_lines_or_a_tsv_source_column(tmp_path):
    # predict's input: a file of pairs was translated whole, the reference after its tab
    # included; its source column is what training and evaluation read.
    lines = write(tmp_path / "lines.txt", "Go.\n\nHi there.\n")
    assert read_sources(lines) == ["Go.", "", "Hi there."]
    assert read_sources(lines, column=2) == ["Go.", "", "Hi there."]
    tsv = write(tmp_path / "pairs.tsv", "Go.\tGeh.\tCC-BY\nHi.\tHallo!\tCC-BY\n")
    assert read_sources(tsv) == ["Go.", "Hi."]
    assert read_sources(tsv, column=2) == ["Geh.", "Hallo!"]
    short = write(tmp_path / "short.tsv", "Go.\tGeh.\tCC-BY\nHi.\tHallo!\n")
    with pytest.raises(DataError, match=r"short.tsv, line 2: the line has 2 tab-separated "
                                        r"column\(s\); expected at least 3: the file is read "
                                        r"as a TSV \(line 1 holds a tab\) whose source"):
        read_sources(short, column=3)
    # A line without a tab beside one with: "A man\tis walking." was translated "A man",
    # silently, beside lines translated whole.
    mixed = write(tmp_path / "mixed.txt", "A dog sleeps.\n\nA man\tis walking.\n")
    for column in (1, 2):
        with pytest.raises(DataError, match=r"mixed.txt, line 1: the line holds no tab, but "
                                            r"line 3 does; expected a TSV of pairs"):
            read_sources(mixed, column=column)


def test_bad_tsv_lines_are_errors_with_file_and_line(tmp_path):
    path = write(tmp_path / "pairs.tsv", "Go.\tGeh.\nHi.\n")
    with pytest.raises(DataError, match=r"pairs.tsv, line 2: the line has 1 tab-separated "
                                        r"column\(s\); expected at least 2"):
        read_tsv_pairs(path)
    # A blank line or an empty sentence is an empty pair, left out and counted (it was refused).
    path = write(tmp_path / "gap.tsv", "Go.\t \tCC-BY\n\nHi.\tHallo.\n\tTschüss.\n \n")
    pairs = read_tsv_pairs(path)
    assert list(zip(pairs.sources, pairs.targets)) == [("Hi.", "Hallo.")]
    assert pairs.origins == [(str(path), 3)] and pairs.empty_lines == [1, 2, 4, 5]


@pytest.mark.parametrize("ending", ["\r\n", "\r"], ids=["crlf", "lone-cr"])
def test_line_endings_are_normalised_as_in_text_mode(tmp_path, ending):
    pairs = [("Go.", "Geh."), ("Hi there.", "Hallo!"), ("Run!", "Lauf!"), ("Wait.", "Warte.")]
    tsv = write(tmp_path / "pairs.tsv",
                "".join(f"{source}\t{target}\tCC-BY 2.0{ending}" for source, target in pairs))
    read = read_tsv_pairs(tsv)
    assert list(zip(read.sources, read.targets)) == pairs
    assert read.origins[-1] == (str(tsv), 4)
    source = write(tmp_path / "train.en", "".join(s + ending for s, _ in pairs))
    target = write(tmp_path / "train.de", "".join(t + ending for _, t in pairs))
    aligned = read_aligned(source, target)
    assert list(zip(aligned.sources, aligned.targets)) == pairs
    prepared = load_data(src=source, tgt=target, val_fraction=0.25, test_fraction=0.25,
                         seed=0).encode(batch_size=2)
    tokens = prepared.source_vocabulary.tokens + prepared.target_vocabulary.tokens
    assert not any("\r" in token for token in tokens) and "▁there" in tokens
    # Lines in messages count the same line breaks.
    gap = write(tmp_path / "gap.tsv", f"Go.\tGeh.{ending}{ending}Hi.\tHallo.{ending}")
    assert read_tsv_pairs(gap).empty_lines == [2]
    latin = write(tmp_path / "latin.de", f"Eins.{ending}Zwei Männer.{ending}", "latin-1")
    with pytest.raises(DataError, match="latin.de, line 2: undecodable bytes"):
        read_aligned(write(tmp_path / "two.en", "One.\nTwo men.\n"), latin)


def test_split_files_of_a_folder_are_found_by_language(tmp_path):
    for stem in ("train", "val", "test_2016_flickr", "test_2017_mscoco"):
        for lang in ("en", "de"):
            write(tmp_path / f"{stem}.{lang}", "x\n")
    write(tmp_path / "train.fr", "x\n")
    splits = find_split_files(tmp_path, "en", "de")
    assert list(splits) == ["train", "val", "test_2016_flickr", "test_2017_mscoco"]
    assert splits["val"] == (tmp_path / "val.en", tmp_path / "val.de")
    with pytest.raises(DataError, match="expected the aligned files train.en and train.es"):
        find_split_files(tmp_path, "en", "es")
    only_tests = tmp_path / "only_tests"
    only_tests.mkdir()
    write(only_tests / "test_a.en", "x\n")
    write(only_tests / "test_a.de", "x\n")
    assert list(find_split_files(only_tests, "en", "de", require_train=False)) == ["test_a"]
    write(tmp_path / "test_extra.en", "x\n")
    with pytest.raises(DataError, match="test_extra.en: test_extra.en has no aligned "
                                        "test_extra.de"):
        find_split_files(tmp_path, "en", "de")


def test_split_pairs_is_seeded_disjoint_and_complete(tmp_path):
    path = write(tmp_path / "pairs.tsv", "".join(f"s{i}\tt{i}\n" for i in range(50)))
    pairs = read_tsv_pairs(path)
    train, val, test = split_pairs(pairs, 0.1, 0.2, seed=3)
    assert (len(train), len(val), len(test)) == (35, 5, 10)
    assert sorted(train.sources + val.sources + test.sources) == sorted(pairs.sources)
    assert split_pairs(pairs, 0.1, 0.2, seed=3)[2].sources == test.sources
    assert len(split_pairs(pairs, 0.0, 0.2, seed=3)[1]) == 0
    with pytest.raises(DataError, match="2 sentence pairs are too few to split off"):
        split_pairs(pairs.subset(range(2)), 0.4, 0.4, seed=0)


def test_read_pairs_reads_aligned_files_a_split_folder_or_a_tsv(tmp_path):
    write(tmp_path / "a.en", "One.\nTwo.\n")
    write(tmp_path / "a.de", "Eins.\nZwei.\n")
    given, source = read_pairs(src=tmp_path / "a.en", tgt=tmp_path / "a.de", split="test")
    assert list(given) == ["test"] and given["test"].targets == ["Eins.", "Zwei."]
    assert source == f"{tmp_path / 'a.en'} + {tmp_path / 'a.de'}"
    tsv = write(tmp_path / "pairs.tsv", "x\tOne.\tEins.\n")
    given, source = read_pairs(tsv, columns=[3, 2])
    assert given["train"].sources == ["Eins."] and source == str(tsv)
    folder = tmp_path / "folder"
    folder.mkdir()
    for stem in ("train", "dev", "test_a"):
        write(folder / f"{stem}.en", "One.\n")
        write(folder / f"{stem}.de", "Eins.\n")
    given, _ = read_pairs(folder, languages=("en", "de"))
    assert list(given) == ["train", "dev", "test_a"]


def test_load_data_holds_out_the_splits_the_data_lacks(tmp_path):
    tsv = write(tmp_path / "pairs.tsv", "".join(f"s{i}\tt{i}\n" for i in range(40)))
    prepared = load_data(tsv, val_fraction=0.1, test_fraction=0.2, seed=3)
    assert (len(prepared.train), len(prepared.val), list(prepared.tests)) == (28, 4, ["test"])
    held_test = split_pairs(read_tsv_pairs(tsv), 0.1, 0.2, seed=3)[2]
    assert prepared.tests["test"].sources == held_test.sources
    assert prepared.notes == ["val: 4 pairs held out of the training data (10%, seeded)",
                              "test: 8 pairs held out of the training data (20%, seeded)"]
    for stem in ("train", "test_b", "test_a"):
        write(tmp_path / f"{stem}.en", "".join(f"s{i}\n" for i in range(10)))
        write(tmp_path / f"{stem}.de", "".join(f"t{i}\n" for i in range(10)))
    prepared = load_data(tmp_path, languages=("en", "de"), val_fraction=0.2, seed=0)
    assert (len(prepared.train), len(prepared.val)) == (8, 2)
    assert list(prepared.tests) == ["test_a", "test_b"] and len(prepared.notes) == 1
    assert load_data().source == load_sample().name


def test_read_test_pairs_takes_a_folders_test_files_and_refuses_a_folder_without(tmp_path):
    for stem in ("train", "val", "test_a"):
        write(tmp_path / f"{stem}.en", "One.\n")
        write(tmp_path / f"{stem}.de", "Eins.\n")
    assert list(read_test_pairs(tmp_path, languages=("en", "de"))) == ["test_a"]
    tsv = write(tmp_path / "pairs.tsv", "One.\tEins.\n")
    assert list(read_test_pairs(tsv)) == ["test"]
    (tmp_path / "test_a.en").unlink()
    (tmp_path / "test_a.de").unlink()
    with pytest.raises(DataError, match=re.escape(f"{tmp_path}: no aligned test*.en / test*.de")):
        read_test_pairs(tmp_path, languages=("en", "de"))


def test_the_embedded_sample_reads_cleanly():
    pairs = load_sample()
    assert len(pairs) > 200
    assert "A man is riding a bike." in pairs.sources
    assert "seqlab smoke-test sample" in pairs.name


# Batches


def test_batches_are_source_target_in_and_target_out_with_start_end_and_padding(tmp_path):
    path = write(tmp_path / "pairs.tsv",
                 "A dog.\tEin Hund.\nTwo big cats sleep.\tZwei große Katzen schlafen.\n")
    pairs = read_tsv_pairs(path)
    source_vocabulary = Vocabulary.build(tokenize(pairs.sources))
    target_vocabulary = Vocabulary.build(tokenize(pairs.targets))
    encoded = encode_pairs(pairs, source_vocabulary.lookup_layer(),
                           target_vocabulary.lookup_layer())
    ((source, target_in), target_out), = list(
        make_dataset(encoded.source_ids, encoded.target_ids, batch_size=2)
    )
    assert source.dtype == tf.int32 and source.shape == (2, 5)
    assert source.numpy()[0, 3:].tolist() == [0, 0]  # "A", "▁dog", "." then padding
    hund = [target_vocabulary.tokens.index(t) for t in ["Ein", "▁Hund", "."]]
    assert target_in.numpy()[0, :4].tolist() == [START_ID] + hund
    assert target_out.numpy()[0, :4].tolist() == hund + [END_ID]
    assert target_in.numpy()[0, 4:].tolist() == target_out.numpy()[0, 4:].tolist() == [0, 0]
    assert target_in.shape == target_out.shape == (2, 6)


def test_encode_builds_vocabularies_ids_and_the_planned_batches_of_the_training_split(tmp_path):
    rng = np.random.default_rng(1)
    lines = [f"{' '.join(['w'] * a)}\t{' '.join(['v'] * b)}\n"
             for a, b in rng.integers(1, 15, (60, 2))]
    tsv = write(tmp_path / "pairs.tsv", "".join(lines))
    prepared = load_data(tsv, val_fraction=0.2, test_fraction=0.1, seed=0)
    assert prepared.encode(max_length=10, batch_size=4, max_test_tokens=10) is prepared
    assert prepared.source_vocabulary.tokens[4:] == ["▁w", "w"]  # the more frequent first
    assert prepared.train_ids.skipped > 0 and prepared.val_ids.source_ids.nrows() > 0
    train, val = prepared.datasets(batch_size=4, seed=0)
    assert prepared.batches == len(list(train)) == int(train.cardinality())
    report = prepared.report()
    assert report["pairs"] == {"train": 42, "val": 12, "test": 6}
    assert report["skipped_longer_than_max_length"]["train"] == prepared.train_ids.skipped
    # A test source longer than the model takes is left out too (translating it could run out
    # of memory), and counted.
    kept = prepared.tests["test"].sources
    assert report["skipped_longer_than_max_length"]["test"] == 6 - len(kept) > 0
    assert all(len(source.split()) <= 10 for source in kept)
    assert report["vocabulary"] == {"source": 6, "target": 6}
    # Sources also in training, counted by hand (60 lines of 1 to 14 "w": many repeat).
    seen = set(prepared.train.sources)
    assert report["also_in_training"] == {
        "val": sum(source in seen for source in prepared.val.sources),
        "test": sum(source in seen for source in kept)}
    assert report["also_in_training"]["test"] > 0
    assert sum(int(s.shape[0]) for (s, _), _ in val) == 12 - prepared.val_ids.skipped
    long_pairs = write(tmp_path / "long.tsv", "".join(f"a b c {i}\tx y z\n" for i in range(9)))
    with pytest.raises(DataError, match="long.tsv: every training pair is longer than "
                                        "max_length=3 tokens"):
        load_data(long_pairs, seed=0).encode(max_length=3)
    # A --min-count above every token's count left only [UNK]: it trained, and translated
    # everything to [UNK].
    with pytest.raises(DataError, match=r"pairs.tsv: --min-count 1000 leaves no source token in "
                                        r"the vocabulary: the most frequent, '▁w', occurs "):
        load_data(tsv, seed=0).encode(min_count=1000)
    with pytest.raises(DataError, match="no validation pairs: set --val-fraction above 0"):
        load_data(tsv, val_fraction=0.0, seed=0).encode()


def test_planned_batches_count_the_length_buckets_batches():
    lengths = np.array([2, 3, 4, 5, 5, 6, 9, 13])
    # Buckets of TRAIN_BUCKET_WIDTH tokens: [.., 5), [5, 9), [9, 13), [13, ..).
    assert TRAIN_BUCKET_WIDTH == 4
    assert planned_batches(lengths, batch_size=2) == 2 + 2 + 1 + 1
    assert planned_batches(lengths, batch_size=8) == 4


def test_long_pairs_are_left_out_and_counted_and_buckets_keep_every_pair():
    rng = np.random.default_rng(0)
    sources = [" ".join(["w"] * n) for n in rng.integers(1, 20, 200)]
    targets = [" ".join(["v"] * n) for n in rng.integers(1, 20, 200)]
    pairs = SentencePairs(sources, targets, [None] * 200, "toy")
    vocabulary = Vocabulary.build(tokenize(sources + targets))
    encoded = encode_pairs(pairs, vocabulary.lookup_layer(), vocabulary.lookup_layer(),
                           max_length=12)
    source_lengths = np.array([len(s.split()) for s in sources])
    target_lengths = np.array([len(t.split()) for t in targets])
    keep = (source_lengths <= 12) & (target_lengths <= 10)  # 10 tokens, [START], [END]
    assert encoded.skipped == int((~keep).sum()) > 0
    np.testing.assert_array_equal(encoded.kept, np.flatnonzero(keep))
    dataset = make_dataset(encoded.source_ids, encoded.target_ids, batch_size=8,
                           shuffle_seed=1, bucket_width=4)
    seen = 0
    for (source, target_in), target_out in dataset:
        assert source.shape[1] <= 12 and target_in.shape[1] <= 12
        seen += source.shape[0]
    assert seen == keep.sum()


def test_every_whitespace_character_separates_tokens(tmp_path):
    # Found by tests/test_fuzz.py: "\x1f" (which str.isspace counts) made a token that the
    # vocabulary then refused with a traceback.
    assert tokenize(["0\x1f a\x0bb\x85c\x1cd"]).to_list() == [
        [t.encode() for t in ["0", "▁a", "▁b", "▁c", "▁d"]]]
    tsv = write(tmp_path / "pairs.tsv", "0\x1f\tein Hund läuft .\n"
                + "a dog runs .\tein Hund läuft .\n" * 2)
    load_data(tsv, val_fraction=0.34, test_fraction=0.33, seed=0).encode()


def test_a_nul_character_is_named_with_its_line(tmp_path):
    # Found by tests/test_fuzz.py: a NUL became an empty token in Keras's StringLookup, whose
    # ValueError came out as a traceback.
    tsv = write(tmp_path / "pairs.tsv", "a dog runs .\tein Hund\n" * 3 + "a dog .\t\x00\n")
    with pytest.raises(DataError, match=r"pairs\.tsv, line 4: a NUL character \(byte 0\) at "
                                        r"byte offset \d+; expected text"):
        load_data(tsv, val_fraction=0.25, test_fraction=0.25, seed=0)
