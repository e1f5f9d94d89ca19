"""Tests of data/classification.py: each input layout, the splits, and each bad input."""

import csv
import re

import numpy as np
import pytest
import tensorflow as tf

from seqlab.data.classification import (
    Examples,
    LabelledData,
    check_several_classes,
    label_ids,
    line_file_classes,
    load_sample,
    load_training_data,
    make_dataset,
    make_splits,
    read_labelled,
    read_lines,
    read_scored_examples,
    read_table,
    stratified_split,
    texts_also_in,
)
from seqlab.data.errors import DataError


def write(path, text, encoding="utf-8"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return path


def make_class_folders(root, reviews):
    """`root/<class>/<n>.txt` for each `{class: [texts]}`."""
    for label, texts in reviews.items():
        for number, text in enumerate(texts):
            write(root / label / f"{number}_{label}.txt", text)
    return root


# ---------------------------------------------------------------------------------------------
# Tables


def test_csv_with_named_columns_quoting_and_three_classes(tmp_path):
    path = write(
        tmp_path / "reviews.csv",
        'id,review,stars\n'
        '1,"Fine, if slow.",mixed\n'
        '2,"A ""great"" film\nover two lines",good\n'
        '3,Dreadful.,bad\n'
        '\n'
        '4,Lovely.,good\n',
    )
    examples = read_table(path, text_column="review", label_column="stars")
    assert examples.texts == ["Fine, if slow.", 'A "great" film\nover two lines', "Dreadful.",
                              "Lovely."]
    assert examples.labels == ["mixed", "good", "bad", "good"]
    # Line numbers are where each row starts; the quoted field spans lines 3-4.
    assert [line for _, line in examples.origins] == [2, 3, 5, 7]
    assert examples.class_counts() == {"bad": 1, "good": 2, "mixed": 1}
    assert examples.skipped == ["1 blank rows"]


def test_tsv_is_tab_separated_without_quoting(tmp_path):
    path = write(tmp_path / "s.tsv", 'label\ttext\npos\tthe " conan " of films\nneg\tbad , bad\n')
    examples = read_table(path)
    assert examples.texts == ['the " conan " of films', "bad , bad"]
    assert examples.labels == ["pos", "neg"]


def test_classes_keep_only_the_chosen_labels_and_report_the_others(tmp_path):
    path = write(tmp_path / "s.csv", "text,label\na,pos\nb,neutral\nc,neg\nd,neutral\n")
    examples = read_table(path, classes=["pos", "neg"])
    assert examples.labels == ["pos", "neg"]
    assert examples.skipped == ["2 rows labelled 'neutral' (not among the chosen classes)"]


def test_embedded_sample_is_a_balanced_two_class_table():
    sample = load_sample()
    assert sample.class_counts() == {"negative": 75, "positive": 75}
    assert "smoke-test sample" in sample.source


def test_training_data_is_the_sample_without_a_path_and_needs_two_classes(tmp_path):
    data = load_training_data()
    assert data.layout == "table" and data.test is None
    assert data.train.class_counts() == {"negative": 75, "positive": 75}
    # The sample holds two classes: --classes left one.
    with pytest.raises(DataError, match=r"--classes positive leaves one class \('positive'\)"):
        load_training_data(classes=["positive"])
    path = write(tmp_path / "one.csv", "review,stars\na,5\nb,5\n")
    with pytest.raises(DataError, match=r"the label column 'stars' has one class \('5'\)"):
        load_training_data(path, text_column="review", label_column="stars")


# ---------------------------------------------------------------------------------------------
# Line files


def test_line_files_named_by_suffix_with_blank_lines_reported(tmp_path):
    write(tmp_path / "rt-polarity.pos", "a joy to watch . \nsharp and funny\n")
    write(tmp_path / "rt-polarity.neg", "tedious .\n\nflat\n")
    data = read_labelled(tmp_path)
    assert data.layout == "line files" and data.test is None
    assert data.train.labels == ["neg", "neg", "pos", "pos"]
    assert data.train.texts[:2] == ["tedious .", "flat"]
    assert data.train.origins[1] == (str(tmp_path / "rt-polarity.neg"), 3)
    assert data.train.skipped == ["1 blank lines in rt-polarity.neg"]


def test_line_file_classes_come_from_the_stem_when_suffixes_agree(tmp_path):
    paths = [tmp_path / "happy.txt", tmp_path / "sad.txt", tmp_path / "angry.txt"]
    assert list(line_file_classes(paths).values()) == ["happy", "sad", "angry"]
    # A folder of one file names its class by the stem (it was "txt"), for the error that
    # follows: a second class is needed.
    assert list(line_file_classes([tmp_path / "good.txt"]).values()) == ["good"]
    with pytest.raises(DataError, match=r"cannot tell the classes from the file names a\.neg, "
                                        r"a\.pos, b\.pos: expected files that differ only"):
        line_file_classes([tmp_path / "a.neg", tmp_path / "a.pos", tmp_path / "b.pos"])


# ---------------------------------------------------------------------------------------------
# Class folders


@pytest.mark.parametrize("name, text, found", [
    ("yelp.json",
     '{"text": "Great food, slow service.", "stars": 4}\n{"text": "Bad.", "stars": 1}\n',
     r"JSON \(a JSON lines file, one object per line\?\), not a table"),
    ("ft.txt", "__label__2 Great food, slow service.\n__label__1 Bad.\n",
     r"fastText's format \(__label__<class> text\), not a table"),
])
def test_json_lines_and_fasttext_files_are_named_as_such(tmp_path, name, text, found):
    # Their first line was split at commas as a header: "no column 'text' (choose it with
    # --text-column); the columns are: '{"text": "Great food', ' slow service."', ...".
    path = write(tmp_path / name, text)
    with pytest.raises(DataError, match=rf"{name}, line 1: the file is {found}; expected a CSV "
                                        r"or TSV file whose header line names the columns "
                                        r"'text' and 'label', then one example per line"):
        read_table(path)


def test_class_folders_with_given_splits_and_loose_files(tmp_path):
    root = tmp_path / "aclImdb"
    make_class_folders(root / "train", {"pos": ["great<br />film", "fun"], "neg": ["dull"],
                                        "unsup": ["no label"]})
    make_class_folders(root / "test", {"pos": ["superb"], "neg": ["awful", "poor"]})
    write(root / "train" / "urls_pos.txt", "http://example.org\n")
    write(root / "imdb.vocab", "the\n")
    data = read_labelled(root, classes=["neg", "pos"])
    assert data.layout == "class folders"
    assert data.train.labels == ["neg", "pos", "pos"] and data.train.texts[1] == "great<br />film"
    assert data.test.labels == ["neg", "neg", "pos"]
    assert data.train.origins[0] == (str(root / "train" / "neg" / "0_neg.txt"), None)
    assert data.train.skipped == [
        "folder unsup/ (not among the chosen classes)",
        "files beside the class folders: urls_pos.txt",
        "entries beside train/ and test/: imdb.vocab",
    ]


def test_a_training_class_the_given_test_split_lacks_is_left_out_and_said(tmp_path):
    # aclImdb: train/unsup (unlabelled reviews) was trained as a third class, the majority one,
    # that no test review has.
    root = tmp_path / "aclImdb"
    make_class_folders(root / "train", {"pos": ["fun"], "neg": ["dull"],
                                        "unsup": ["no label", "none either"]})
    make_class_folders(root / "test", {"pos": ["superb"], "neg": ["awful"]})
    data = load_training_data(root)
    assert data.train.class_counts() == {"neg": 1, "pos": 1}
    assert sorted(data.train.texts) == ["dull", "fun"]
    assert data.train.skipped[-1] == (
        "train/ classes that test/ has no example of, left out: 'unsup' (2 examples) "
        "(--classes chooses the classes)")
    assert load_training_data(root, classes=["neg", "pos"]).train.class_counts() == {
        "neg": 1, "pos": 1}
    # Fewer than two classes left: refused, naming them.
    make_class_folders(root / "test2", {"pos": ["superb"]})
    (root / "test").rename(root / "old")
    (root / "test2").rename(root / "test")
    (root / "old").rename(tmp_path / "old")
    with pytest.raises(DataError, match=re.escape(
            f"{root / 'train'}: train/ has the classes 'neg' (1 example), 'unsup' (2 examples) "
            "that test/ has no example of; expected at least two classes in both")):
        load_training_data(root)


def test_class_folders_without_splits(tmp_path):
    make_class_folders(tmp_path, {"a": ["x", "y"], "b": ["z"], "c": ["w"]})
    data = read_labelled(tmp_path)
    assert data.test is None and data.train.class_counts() == {"a": 2, "b": 1, "c": 1}


def test_scored_examples_are_the_given_test_split_or_every_example(tmp_path):
    make_class_folders(tmp_path / "both" / "train", {"pos": ["fun"], "neg": ["dull"]})
    make_class_folders(tmp_path / "both" / "test", {"pos": ["superb"], "neg": ["awful", "poor"]})
    examples, split = read_scored_examples(tmp_path / "both")
    assert split == "given test split" and examples.texts == ["awful", "poor", "superb"]
    make_class_folders(tmp_path / "one", {"pos": ["fun"], "neg": ["dull"]})
    examples, split = read_scored_examples(tmp_path / "one")
    assert split == "every example" and examples.texts == ["dull", "fun"]


# ---------------------------------------------------------------------------------------------
# Splits and datasets


def test_stratified_split_is_seeded_and_keeps_class_shares(tmp_path):
    labels = ["a"] * 60 + ["b"] * 30 + ["c"] * 10
    path = write(tmp_path / "d.csv", "text,label\n" + "".join(
        f"text {i},{label}\n" for i, label in enumerate(labels)))
    examples = read_table(path)
    kept, held_out = stratified_split(examples, 0.1, seed=7)
    assert held_out.class_counts() == {"a": 6, "b": 3, "c": 1}
    assert kept.class_counts() == {"a": 54, "b": 27, "c": 9}
    assert sorted(kept.texts + held_out.texts) == sorted(examples.texts)
    again, _ = stratified_split(examples, 0.1, seed=7)
    other, _ = stratified_split(examples, 0.1, seed=8)
    assert again.texts == kept.texts and other.texts != kept.texts


def _examples(labels):
    return Examples(texts=[f"t{i}" for i in range(len(labels))], labels=labels,
                    origins=[("f", i) for i in range(len(labels))], source="f")


def test_given_test_split_is_used_as_such_and_validation_comes_from_training():
    data = LabelledData(train=_examples(["a"] * 10 + ["b"] * 10),
                        test=_examples(["a", "b", "b"]), layout="class folders")
    splits, report = make_splits(data, test_fraction=0.1, val_fraction=0.2, seed=42)
    assert report["method"] == "given" and report["test_fraction"] is None
    assert report["examples"] == {"train": 16, "val": 4, "test": 3}
    assert report["class_counts"]["val"] == {"a": 2, "b": 2}


def test_the_report_counts_validation_and_test_texts_that_are_training_texts_too():
    train = _examples(["a"] * 10 + ["b"] * 10)
    test = Examples(texts=["t3", " t4  ", "new", "t19"], labels=["a", "a", "b", "b"],
                    origins=[("g", i) for i in range(4)], source="g")
    splits, report = make_splits(LabelledData(train=train, test=test, layout="table"),
                                 test_fraction=0.1, val_fraction=0.2, seed=42)
    val_in_train = sum(t in splits["train"].texts for t in splits["val"].texts)
    test_in_train = sum(t.strip() in splits["train"].texts for t in test.texts)
    assert report["also_in_training"] == {"val": val_in_train, "test": test_in_train}
    assert test_in_train >= 1  # t3, t4 or t19 stayed in training: the count is not vacuous
    assert texts_also_in(["a  b", "c"], ["a b"]) == 1  # spaces aside


def test_seeded_splits_without_validation():
    data = LabelledData(train=_examples(["a"] * 10 + ["b"] * 10), test=None, layout="table")
    splits, report = make_splits(data, test_fraction=0.2, val_fraction=0, seed=3)
    assert report == {
        "method": "seeded stratified", "seed": 3, "test_fraction": 0.2, "val_fraction": 0,
        "examples": {"train": 16, "val": 0, "test": 4},
        "class_counts": {"train": {"a": 8, "b": 8}, "val": {}, "test": {"a": 2, "b": 2}},
        "also_in_training": {"val": 0, "test": 0},
    }
    assert sorted(splits["train"].texts + splits["test"].texts) == sorted(data.train.texts)
    again, _ = make_splits(data, test_fraction=0.2, val_fraction=0, seed=3)
    assert again["test"].texts == splits["test"].texts


def test_make_dataset_batches_raw_strings_and_label_ids():
    dataset = make_dataset(["a b", "c", "d e f"], np.array([0, 1, 2]), batch_size=2)
    assert dataset.element_spec == (
        tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.int32)
    )
    texts, labels = next(iter(dataset))
    assert texts.numpy().tolist() == [b"a b", b"c"] and labels.numpy().tolist() == [0, 1]


def test_read_lines_keeps_blank_lines(tmp_path):
    assert read_lines(write(tmp_path / "in.txt", "one\n\nthree\n")) == ["one", "", "three"]


# ---------------------------------------------------------------------------------------------
# Line endings


@pytest.mark.parametrize("ending", ["\r\n", "\r"])
def test_crlf_and_cr_files_read_as_their_lf_twins(tmp_path, ending):
    """Windows (CRLF) and old Mac (CR) files give the texts, labels and line numbers of the
    same file with LF endings; no text or label keeps a "\\r" (a quoted CSV field spanning
    lines included)."""
    table = 'review,class\n"two\nlines",good\nflat,bad\n\nfine,good\n'
    lines = {"rt-polarity.pos": "a joy\n\nsharp\n", "rt-polarity.neg": "tedious\nflat"}
    read = {}
    for name, newline in (("lf", "\n"), ("other", ending)):
        folder = tmp_path / name
        csv_examples = read_table(write(folder / "reviews.csv", table.replace("\n", newline)),
                                  "review", "class")
        tsv_examples = read_table(
            write(folder / "reviews.tsv", table.replace(",", "\t").replace('"', "")
                  .replace("two\nlines", "two lines").replace("\n", newline)),
            "review", "class")
        for file_name, text in lines.items():
            write(folder / "lines" / file_name, text.replace("\n", newline))
        line_examples = read_labelled(folder / "lines").train
        make_class_folders(folder / "reviews", {
            "good": ["Loved it.\nWould watch again.\n"], "bad": ["Dull.\n\nSkip it."],
        })
        for path in (folder / "reviews").rglob("*.txt"):
            path.write_bytes(path.read_bytes().replace(b"\n", newline.encode()))
        folder_examples = read_labelled(folder / "reviews").train
        input_lines = read_lines(write(folder / "in.txt", "one\n\nthree\n".replace("\n", newline)))
        read[name] = (csv_examples, tsv_examples, line_examples, folder_examples, input_lines)
    for lf, other in zip(read["lf"][:4], read["other"][:4]):
        assert other.texts == lf.texts and other.labels == lf.labels
        assert [line for _, line in other.origins] == [line for _, line in lf.origins]
        assert other.skipped == lf.skipped
        assert not any("\r" in value for value in other.texts + other.labels)
    assert read["other"][0].texts == ["two\nlines", "flat", "fine"]
    assert [line for _, line in read["other"][0].origins] == [2, 4, 6]
    assert read["other"][2].texts == ["tedious", "flat", "a joy", "sharp"]
    assert read["other"][3].texts == ["Dull.\n\nSkip it.", "Loved it.\nWould watch again."]
    assert read["other"][4] == read["lf"][4] == ["one", "", "three"]


def test_a_line_is_what_ends_at_a_line_feed_only(tmp_path):
    # str.splitlines would also split at a form feed or U+2028; text mode does not.
    write(tmp_path / "a.pos", "page one\fpage two\nsecond\u2028same line\n")
    write(tmp_path / "a.neg", "dull\n")
    examples = read_labelled(tmp_path).train
    assert examples.texts == ["dull", "page one\fpage two", "second\u2028same line"]
    assert [line for _, line in examples.origins] == [1, 1, 2]


# ---------------------------------------------------------------------------------------------
# Bad input


def test_missing_column_names_the_file_the_header_line_and_the_columns(tmp_path):
    path = write(tmp_path / "reviews.csv", "text,sentiment\ngood,pos\n")
    with pytest.raises(DataError, match=re.escape(
        f"{path}, line 1: no column 'label' (choose it with --label-column); the columns are: "
        "'text', 'sentiment'"
    )):
        read_table(path)
    with pytest.raises(DataError, match=r"line 1: no column 'review' \(choose it with "
                                        r"--text-column\)"):
        read_table(path, text_column="review", label_column="sentiment")


def test_one_column_for_text_and_label_or_a_column_named_twice_is_refused(tmp_path):
    # Both had trained: on the labels themselves (accuracy 1.0), or on the first of two
    # columns of one name without a word.
    path = write(tmp_path / "reviews.csv", "text,label\ngood,pos\nbad,neg\n")
    with pytest.raises(DataError, match=re.escape(
            f"{path}: the text and the label are both the column 'label'; expected two columns "
            "(--text-column and --label-column)")):
        read_table(path, text_column="label", label_column="label")
    twice = write(tmp_path / "twice.csv", "text,label,text\ngood,pos,x\nbad,neg,y\n")
    with pytest.raises(DataError, match=re.escape(
            f"{twice}, line 1: the header names the column 'text' twice (fields 1 and 3)")):
        read_table(twice)


def test_classes_that_leave_one_class_are_blamed_not_the_label_column(tmp_path):
    path = write(tmp_path / "two.csv", "text,label\na,pos\nb,neg\nc,pos\n")
    with pytest.raises(DataError, match=re.escape(
            f"{path}: --classes pos leaves one class ('pos'); expected at least two")):
        load_training_data(path, classes=["pos"])


def test_label_column_with_one_class(tmp_path):
    path = write(tmp_path / "one.csv", "text,label\na,pos\nb,pos\nc,pos\n")
    with pytest.raises(DataError, match=re.escape(
        f"{path}: the label column 'label' has one class ('pos') on every row (lines 2-4); "
        "expected at least two classes"
    )):
        check_several_classes(read_table(path), "label")


def test_folder_with_one_class(tmp_path):
    write(tmp_path / "reviews.pos", "good\n")
    with pytest.raises(DataError, match=r"found one class \('pos'\); expected at least two "
                                        r"classes"):
        check_several_classes(read_labelled(tmp_path).train)


def test_a_label_loses_the_invisible_characters_at_its_edges(tmp_path):
    # "\ufeffpos" (a byte-order mark pasted into a row) was a third class, shown as "pos".
    path = write(tmp_path / "d.csv", "text,label\ngood,pos\nbad,neg\nfine,\ufeffpos\u200b\n"
                                     "poor,\u00a0neg\n")
    assert read_table(path).labels == ["pos", "neg", "pos", "neg"]


def test_line_files_beside_one_sub_folder_are_named_where_one_class_is_found(tmp_path):
    # pos.txt and neg.txt beside a backup folder: the folder is read as class folders, and the
    # message blamed 'backup' alone, not the files skipped.
    write(tmp_path / "pos.txt", "good\nfine\n")
    write(tmp_path / "neg.txt", "bad\npoor\n")
    write(tmp_path / "backup" / "old.txt", "so-so\n")
    with pytest.raises(DataError, match=re.escape(
        f"{tmp_path}: found one class ('backup'); expected at least two classes (one file or "
        "sub-folder per class); files beside the class folders: neg.txt, pos.txt (not read: a "
        "folder holding a sub-folder is read as one sub-folder per class; move the sub-folder "
        "out to read the files as classes)")):
        check_several_classes(read_labelled(tmp_path).train)


@pytest.mark.parametrize("name", ["empty.csv", "blank.tsv"])
def test_empty_table(tmp_path, name):
    path = write(tmp_path / name, "" if name == "empty.csv" else "\n \n")
    # A file of blank lines was "empty" too.
    what = ("the file is empty" if name == "empty.csv"
            else "the file holds only blank lines and white space (3 characters)")
    with pytest.raises(DataError, match=re.escape(f"{path}: {what}; expected a header line "
                                                  "naming the columns 'text' and 'label'")):
        read_table(path)


def test_empty_header_line(tmp_path):
    path = write(tmp_path / "noheader.csv", "\ngood,pos\n")
    with pytest.raises(DataError, match=re.escape(
        f"{path}, line 1: the header line is empty; expected the column names, among them 'text' "
        "and 'label'"
    )):
        read_table(path)


def test_header_without_rows(tmp_path):
    path = write(tmp_path / "h.csv", "text,label\n")
    with pytest.raises(DataError, match=r"h\.csv: the file has a header but no data rows"):
        read_table(path)


def test_empty_line_file_and_empty_example_file(tmp_path):
    write(tmp_path / "lines" / "r.pos", "good\n")
    empty = write(tmp_path / "lines" / "r.neg", "\n\n")
    with pytest.raises(DataError, match=re.escape(
        f"{empty}: the file holds only blank lines and white space (2 characters); expected "
        "one example per line"
    )):
        read_labelled(tmp_path / "lines")
    make_class_folders(tmp_path / "folders", {"pos": ["good"], "neg": ["  \n"]})
    with pytest.raises(DataError, match=r"0_neg\.txt: the file holds only blank lines and "
                                        r"white space \(3 characters\); "
                                        r"expected the text of one example"):
        read_labelled(tmp_path / "folders")


def test_undecodable_bytes_name_the_line(tmp_path):
    path = write(tmp_path / "latin.csv", "text,label\ngood,pos\ncaf\xe9 au lait,neg\n", "latin-1")
    with pytest.raises(DataError, match=re.escape(
        f"{path}, line 3: undecodable bytes at byte offset 23 (0xe9); expected UTF-8 text"
    )):
        read_table(path)
    write(tmp_path / "lines" / "r.pos", "ok\n")
    bad = write(tmp_path / "lines" / "r.neg", b"fine\nbad \xff\n")
    with pytest.raises(DataError, match=re.escape(f"{bad}, line 2: undecodable bytes")):
        read_labelled(tmp_path / "lines")


def test_row_without_a_label_or_with_too_few_fields(tmp_path):
    path = write(tmp_path / "gaps.csv", "text,label\ngood,pos\nbad,\n")
    with pytest.raises(DataError, match=re.escape(f"{path}, line 3: no value in column 'label'")):
        read_table(path)
    path = write(tmp_path / "short.tsv", "text\tlabel\ngood\tpos\nbad\n")
    with pytest.raises(DataError, match=re.escape(
        f"{path}, line 3: the row has 1 fields; expected at least 2 (the header has 2)"
    )):
        read_table(path)


def test_a_text_longer_than_pythons_csv_field_limit_is_read_whole(tmp_path):
    long = "good " * 40_000  # 200,000 characters: over the csv module's default of 131,072
    before = csv.field_size_limit()
    for name, separator in (("long.csv", ","), ("long.tsv", "\t")):
        path = write(tmp_path / name, f"text{separator}label\n{long}{separator}pos\n"
                                      f"bad{separator}neg\n")
        examples = read_table(path)
        assert examples.texts[0] == long and examples.labels == ["pos", "neg"]
    assert csv.field_size_limit() == before  # the process-wide limit is left as it was


def test_unclosed_quote_is_a_data_error(tmp_path):
    path = write(tmp_path / "q.csv", 'text,label\ngood,pos\n"never closed,neg\n')
    with pytest.raises(DataError, match=re.escape(
        f"{path}, line 3: not a well-formed table: unexpected end of data in the row that starts "
        "here"
    )):
        read_table(path)
    # Found by tests/test_fuzz.py: a quote never closed in the header line was a traceback.
    path = write(tmp_path / "h.csv", '"text,label\ngood,pos\n')
    with pytest.raises(DataError, match=re.escape(
        f"{path}, line 1: not a well-formed table: unexpected end of data"
    )):
        read_table(path)


def test_unknown_label_at_evaluation_names_file_and_line(tmp_path):
    path = write(tmp_path / "eval.csv", "text,label\ngood,pos\nmeh,neutral\nok,neutral\n")
    examples = read_table(path)
    np.testing.assert_array_equal(label_ids(read_table(path, classes=["pos"]), ["neg", "pos"]),
                                  [1])
    with pytest.raises(DataError, match=re.escape(
        f"{path}, line 3: unknown label 'neutral'; the model's classes are: neg, pos (unknown "
        "labels: 'neutral', on 2 of 3 examples)"
    )):
        label_ids(examples, ["neg", "pos"])


def test_split_with_too_few_examples_per_class(tmp_path):
    path = write(tmp_path / "tiny.csv", "text,label\na,pos\nb,pos\nc,neg\n")
    with pytest.raises(DataError, match=r"tiny\.csv: cannot make a stratified test split of 3 "
                                        r"examples \(neg: 1, pos: 2\) with fraction 0\.5: the "
                                        r"class 'neg' has 1 example; a stratified split needs "
                                        r"at least 2 of every class$"):
        stratified_split(read_table(path), 0.5, seed=0)
    # In this toolkit's words (scikit-learn's spoke of a validation split's "test_size").
    path = write(tmp_path / "four.csv", "text,label\na,pos\nb,pos\nc,neg\nd,neg\n")
    with pytest.raises(DataError, match=r"validation split of 4 examples \(neg: 2, pos: 2\) "
                                        r"with fraction 0\.1: the validation split would hold "
                                        r"1 of them, fewer than the 2 classes"):
        stratified_split(read_table(path), 0.1, seed=0, name="validation")
    with pytest.raises(DataError, match=r"with fraction 0\.9: the rest would hold 0 of them"):
        stratified_split(read_table(path), 0.9, seed=0)
    kept, held = stratified_split(read_table(path), 0.5, seed=0)
    assert sorted(kept.labels) == sorted(held.labels) == ["neg", "pos"]
    # 100,000 classes made a line of a megabyte: the message lists 10 and counts the rest.
    rows = "".join(f"t{k},c{k:03d}\n" for k in range(200))
    path = write(tmp_path / "many.csv", "text,label\n" + rows)
    with pytest.raises(DataError, match=r"\(c000: 1, .*c009: 1 and 190 more\) with "
                                        r"fraction 0\.5: ") as raised:
        stratified_split(read_table(path), 0.5, seed=0)
    assert len(str(raised.value)) < 800


def test_missing_file_or_empty_folder(tmp_path):
    with pytest.raises(DataError, match=r"nothing\.csv: file or folder not found"):
        read_labelled(tmp_path / "nothing.csv")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=r"empty: the folder is empty; expected one file per "
                                        r"class"):
        read_labelled(tmp_path / "empty")


def test_a_folder_where_a_table_or_text_file_is_expected(tmp_path):
    folder = tmp_path / "data.csv"
    folder.mkdir()
    with pytest.raises(DataError, match=re.escape(
        f"{folder}: is a folder, not a file; expected a text file"
    )):
        read_table(folder)
    with pytest.raises(DataError, match=re.escape(f"{folder}: is a folder, not a file")):
        read_lines(folder)


def test_a_row_with_more_fields_than_the_header_is_refused_by_line(tmp_path):
    path = write(tmp_path / "extra.csv", "text,label\ngood,pos\nbad, really bad,neg\nok,pos\n")
    with pytest.raises(DataError, match=re.escape(
        f"{path}, line 3: the row has 3 fields; expected at most 2 like the header (a text "
        "holding a comma must be in double quotes)"
    )):
        read_table(path)
    path = write(tmp_path / "extra.tsv", "text\tlabel\ngood\tpos\nbad\tneg\textra\n")
    with pytest.raises(DataError, match=re.escape(
        f"{path}, line 3: the row has 3 fields; expected at most 2 like the header (a tab "
        "inside a text is not allowed in a tab-separated file)"
    )):
        read_table(path)


def test_a_chosen_class_that_never_occurs_is_named_with_the_labels_that_do(tmp_path):
    path = write(tmp_path / "s.csv", "text,label\na,pos\nb,neg\nc,neutral\n")
    with pytest.raises(DataError, match=re.escape(
        f"{path}: no example is labelled 'zzz' (chosen classes: neg, zzz); the labels that "
        "occur are: 'neg', 'neutral', 'pos'"
    )):
        load_training_data(path, classes=["neg", "zzz"])
    write(tmp_path / "lines" / "r.pos", "ok\n")
    write(tmp_path / "lines" / "r.neg", "bad\n")
    with pytest.raises(DataError, match=r"no example is labelled 'zzz' .*occur are: 'neg', 'pos'"):
        load_training_data(tmp_path / "lines", classes=["neg", "zzz"])
    make_class_folders(tmp_path / "folders", {"neg": ["bad"], "pos": ["good"]})
    with pytest.raises(DataError, match=r"no example is labelled 'zzz' .*occur are: 'neg', 'pos'"):
        load_training_data(tmp_path / "folders", classes=["zzz", "neg"])
    with pytest.raises(DataError, match=re.escape(
        "no example is labelled 'zzz' (chosen classes: negative, zzz); the labels that occur "
        "are: 'negative', 'positive'"
    )):
        load_training_data(classes=["negative", "zzz"])
