"""Tests of data/conll.py: CoNLL reading, line endings, tag schemes and invalid tag sequences
(checked against seqeval), data directories, the splits of a run, vocabularies and padded
batches, on small files written in each test."""

import json
import re

import numpy as np
import pytest
import tensorflow as tf

from seqlab.data import conll as conll_module
from seqlab.data.conll import (
    INVISIBLE_CHARACTERS,
    MAX_SENTENCE_TOKENS,
    SAMPLE_PATH,
    TOKEN_EDGE_CHARACTERS,
    WHITE_SPACE,
    Sentence,
    TaggingVocabulary,
    conll_text,
    detect_scheme,
    encode_sentences,
    find_split_files,
    load_splits,
    looks_like_conll,
    make_tagging_dataset,
    normalize_word,
    read_conll,
    read_sentences_to_tag,
    read_token_lines,
    split_files,
    to_bio,
)
from seqlab.data.errors import DataError


def write(tmp_path, text, name="data.conll", encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return path


def where(path, line):
    """The start of a DataError message for `path`, `line`, as a regular expression."""
    return re.escape(f"{path}, line {line}: ")


def tokens_and_tags(conll):
    return [list(zip(s.tokens, s.tags)) for s in conll.sentences]


# ---------------------------------------------------------------------------------------------
# Reading


def test_reads_tab_separated_sentences_and_docstart(tmp_path):
    path = write(
        tmp_path,
        "-DOCSTART-\tO\n\nEinstein\tB-PER\nwas\tO\nborn\tO\nin\tO\nUlm\tB-LOC\n\n"
        "New\tB-LOC\nYork\tI-LOC\n\t\n-DOCSTART-\tO\nHi\tO\n",
    )
    conll = read_conll(path)
    assert tokens_and_tags(conll) == [
        [("Einstein", "B-PER"), ("was", "O"), ("born", "O"), ("in", "O"), ("Ulm", "B-LOC")],
        [("New", "B-LOC"), ("York", "I-LOC")],
        [("Hi", "O")],
    ]
    assert conll.sentences[1].lines == [9, 10]
    assert conll.documents == 2 and conll.scheme == "bio" and conll.scheme_detected
    assert "3 sentences, 8 tokens, scheme bio (detected)" in conll.describe()


def test_space_separated_columns_and_configurable_token_and_tag_columns(tmp_path):
    conll2003 = "-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n" \
                "German JJ B-NP B-MISC\n"
    path = write(tmp_path, conll2003)
    assert tokens_and_tags(read_conll(path)) == [
        [("EU", "B-ORG"), ("rejects", "O"), ("German", "B-MISC")]
    ]
    chunks = read_conll(path, token_column=0, tag_column=2)
    assert [s.tags for s in chunks.sentences] == [["B-NP", "B-VP", "B-NP"]]
    tag_first = write(tmp_path, "B-PER\tAda\nO\tsaid\n", name="tag_first.tsv")
    assert tokens_and_tags(read_conll(tag_first, token_column=-1, tag_column=0)) == [
        [("Ada", "B-PER"), ("said", "O")]
    ]


def test_byte_order_mark_and_invisible_characters(tmp_path):
    # A BOM at the start, a line holding only U+FEFF (a sentence break), a token with a
    # trailing U+FEFF and one with a leading zero-width space, a zero-width joiner inside a
    # token (kept), Windows line ends.
    text = ("\ufeffDubbz\ufeff\tB-person\r\nrocks\tO\r\n\ufeff\r\n\u200bwatched\u200dit\tO\r\n"
            "\u2060\r\n")
    conll = read_conll(write(tmp_path, text))
    assert tokens_and_tags(conll) == [
        [("Dubbz", "B-person"), ("rocks", "O")], [("watched\u200dit", "O")]
    ]
    assert conll.sentences[1].lines == [4]
    assert conll.invisible_lines == [1, 3, 4, 5]
    assert "invisible characters removed on lines 1, 3, 4, 5" in conll.describe()


def test_white_space_at_a_tags_edge_is_no_part_of_its_entity_type(tmp_path):
    # "B-LOC\xa0" was a second entity type beside "B-LOC", silently.
    text = "Anna\tB-PER\nvisits\tO\u2028\nRome\tB-LOC\xa0\n\nBonn\tB-\xa0LOC\n"
    conll = read_conll(write(tmp_path, text))
    assert tokens_and_tags(conll) == [
        [("Anna", "B-PER"), ("visits", "O"), ("Rome", "B-LOC")], [("Bonn", "B-LOC")]
    ]


@pytest.mark.parametrize("ending", ["\r\n", "\r"], ids=["crlf", "lone-cr"])
def test_line_endings_are_normalised_as_in_text_mode(tmp_path, ending):
    text = "-DOCSTART-\tO\n\nAda\tB-PER\nsaid\tO\n\nNew\tB-LOC\nYork\tI-LOC\n"
    expected = read_conll(write(tmp_path, text, name="lf.conll"))
    conll = read_conll(write(tmp_path, text.replace("\n", ending)))
    assert tokens_and_tags(conll) == tokens_and_tags(expected)
    assert [s.lines for s in conll.sentences] == [[3, 4], [6, 7]]
    assert not any("\r" in item for s in conll.sentences for item in s.tokens + s.tags)
    # Lines in messages are counted with the same line breaks, also for undecodable bytes.
    bad_tag = write(tmp_path, text.replace("I-LOC", "LOC").replace("\n", ending), "tag.conll")
    with pytest.raises(DataError, match=where(bad_tag, 7) + "'LOC' is not a tag"):
        read_conll(bad_tag)
    undecodable = write(tmp_path, text.replace("York", "Y\xf6rk").replace("\n", ending)
                        .encode("latin-1"), "latin1.conll")
    with pytest.raises(DataError, match=where(undecodable, 7) + "undecodable bytes"):
        read_conll(undecodable)
    lines = write(tmp_path, "Ada said hi\r\nBob left\rEve\n", "lines.txt")
    assert [s.tokens for s in read_token_lines(lines).sentences] == [
        ["Ada", "said", "hi"], ["Bob", "left"], ["Eve"]
    ]


def test_tokens_only(tmp_path):
    path = write(tmp_path, "Ada\tB-PER\nsaid\tO\n\nhello\tO\n")
    conll = read_conll(path, tag_column=None)
    assert [s.tokens for s in conll.sentences] == [["Ada", "said"], ["hello"]]
    assert conll.sentences[0].tags is None and conll.scheme is None


def test_the_embedded_sample_reads_as_bio():
    conll = read_conll(SAMPLE_PATH)
    assert len(conll.sentences) == 320 and conll.scheme == "bio" and not conll.invalid_tags
    assert {"B-PER", "B-LOC", "B-ORG", "B-MISC"} <= {t for s in conll.sentences for t in s.tags}


# ---------------------------------------------------------------------------------------------
# Schemes


IOB1 = "Peter\tI-PER\nBlackburn\tI-PER\nmet\tO\nAnn\tI-PER\nBob\tB-PER\nin\tO\nBonn\tI-LOC\n"


def test_iob1_is_detected_and_converted_to_bio(tmp_path):
    conll = read_conll(write(tmp_path, IOB1))
    assert conll.scheme == "iob1" and conll.scheme_detected
    assert conll.sentences[0].tags == [
        "B-PER", "I-PER", "O", "B-PER", "B-PER", "O", "B-LOC"
    ]


def test_iob1_given_explicitly(tmp_path):
    conll = read_conll(write(tmp_path, "Bonn\tI-LOC\nis\tO\nnice\tO\n"), scheme="iob1")
    assert conll.scheme == "iob1" and not conll.scheme_detected
    assert conll.sentences[0].tags == ["B-LOC", "O", "O"]


def test_iobes_is_detected_and_converted_to_bio(tmp_path):
    text = "Peter\tB-PER\nvan\tI-PER\nDam\tE-PER\nvisited\tO\nUlm\tS-LOC\nand\tO\nBonn\tS-LOC\n"
    conll = read_conll(write(tmp_path, text))
    assert conll.scheme == "iobes"
    assert conll.sentences[0].tags == ["B-PER", "I-PER", "I-PER", "O", "B-LOC", "O", "B-LOC"]


def test_detect_scheme():
    def sentences(*tag_lists):
        return [Sentence(["x"] * len(tags), tags, []) for tags in tag_lists]

    assert detect_scheme(sentences(["B-PER", "I-PER", "O"])) == "bio"
    assert detect_scheme(sentences(["I-PER", "I-PER", "B-PER"])) == "iob1"
    assert detect_scheme(sentences(["O", "S-LOC"], ["B-PER", "E-PER"])) == "iobes"
    # An I- start beside a B- after O is BIO with an error, not IOB1.
    assert detect_scheme(sentences(["O", "I-PER"], ["O", "B-LOC"])) == "bio"


# As in WNUT-17's emerging.dev.conll at line 1674: an I- tag after another type.
WNUT_DEV_1674 = "Lil\tB-person\nSly\tI-person\nTurn\tI-creative-work\nUp\tI-creative-work\n"


def test_invalid_bio_is_read_as_conlleval_reads_it_and_counted(tmp_path):
    conll = read_conll(write(tmp_path, WNUT_DEV_1674))  # detected as BIO: B- tags after O
    assert conll.scheme == "bio"
    assert conll.sentences[0].tags == ["B-person", "I-person", "B-creative-work",
                                       "I-creative-work"]
    assert conll.invalid_tags == [
        "line 3: I-creative-work after I-person read as B-creative-work"
    ]
    assert "1 invalid tag read as conlleval reads it" in conll.describe()


def test_strict_refuses_invalid_bio_naming_line_tag_and_what_was_expected(tmp_path):
    path = write(tmp_path, WNUT_DEV_1674)
    with pytest.raises(DataError, match=where(path, 3) + re.escape(
        "I-creative-work after I-person: in BIO an entity starts with B-creative-work "
        "(expected B-creative-work, or I-person continuing the person entity); without "
        "--strict-tags it is read as B-creative-work, as conlleval and seqeval read it (or "
        "pass --scheme iob1 if the file is IOB1)"
    )):
        read_conll(path, scheme="bio", strict=True)
    with pytest.raises(DataError, match=where(path, 3) + "I-creative-work after I-person"):
        read_conll(path, strict=True)


def test_strict_refuses_invalid_bio_at_the_sentence_start(tmp_path):
    path = write(tmp_path, "Hello\tO\n\nUlm\tI-LOC\nrocks\tO\n\nBob\tB-PER\nsaid\tO\n")
    with pytest.raises(DataError, match=where(path, 3) + re.escape(
        "I-LOC after the sentence start: in BIO an entity starts with B-LOC (expected B-LOC)"
    )):
        read_conll(path, strict=True)
    assert read_conll(path).sentences[1].tags == ["B-LOC", "O"]


def test_a_stray_inside_tag_starts_an_entity(tmp_path):
    path = write(tmp_path, "the\tO\nEmpire\tI-LOC\nState\tI-LOC\nand\tO\nAnn\tB-PER\n"
                           "Lee\tI-LOC\n")
    conll = read_conll(path, scheme="bio")
    assert conll.sentences[0].tags == ["O", "B-LOC", "I-LOC", "O", "B-PER", "B-LOC"]
    assert conll.invalid_tags == [
        "line 2: I-LOC after O read as B-LOC", "line 6: I-LOC after B-PER read as B-LOC"
    ]
    assert "2 invalid tags read as conlleval reads them" in conll.describe()


def test_the_invalid_tags_report_counts_all_and_lists_the_first_five(tmp_path):
    path = write(tmp_path, "".join(f"w{i}\tO\nx{i}\tI-LOC\n\n" for i in range(7)))
    report = read_conll(path, scheme="bio").invalid_tags_report()
    assert report["count"] == 7
    assert report["first"] == [f"line {3 * i + 2}: I-LOC after O read as B-LOC"
                               for i in range(5)]


def _random_tags(rng, prefixes, length):
    return [
        "O" if prefix == "O" else f"{prefix}-{rng.choice(['PER', 'LOC'])}"
        for prefix in rng.choice(prefixes, size=length)
    ]


@pytest.mark.parametrize("scheme, prefixes", [
    ("bio", ["O", "B", "I", "I"]),
    ("iob1", ["O", "B", "I", "I"]),
    ("iobes", ["O", "B", "I", "E", "S"]),
])
def test_the_bio_reading_has_the_entities_seqeval_finds_in_the_raw_tags(scheme, prefixes):
    # seqeval's default mode reads entities as conlleval does, also from invalid sequences; the
    # converted tags must hold the same entities, as valid BIO (strict IOB2 finds them all).
    from seqeval.metrics.sequence_labeling import get_entities
    from seqeval.scheme import IOB2, Entities

    rng = np.random.default_rng(0)
    for _ in range(300):
        raw = _random_tags(rng, prefixes, int(rng.integers(1, 9)))
        invalid = []
        bio = to_bio(raw, scheme, invalid_tags=invalid)
        expected = get_entities(raw)
        assert get_entities(bio) == expected, raw
        strict = Entities([bio], IOB2).entities[0]
        assert [(e.tag, e.start, e.end - 1) for e in strict] == expected, raw
        if scheme == "iob1":
            assert not invalid
        else:
            if invalid:  # and strict reading refuses exactly the sequences with invalid tags
                with pytest.raises(DataError):
                    to_bio(raw, scheme, strict=True)
            else:
                assert to_bio(raw, scheme, strict=True) == bio


@pytest.mark.parametrize(
    "tags, line, message",
    [
        (["B-PER", "O"], 2, "O after B-PER: in IOBES an entity ends with E-PER (or is a single "
                            "S-PER)"),
        (["O", "B-PER"], 2, "B-PER ends the sentence: in IOBES an entity ends with E-PER"),
        (["O", "E-PER"], 2, "E-PER after O: in IOBES it must continue B-PER or I-PER"),
        (["B-PER", "S-LOC"], 2, "S-LOC after B-PER: in IOBES an entity ends with E-PER"),
        (["S-LOC", "I-LOC", "E-LOC"], 2, "I-LOC after S-LOC: in IOBES it must continue B-LOC"),
    ],
)
def test_strict_refuses_invalid_iobes_naming_its_line(tmp_path, tags, line, message):
    text = "".join(f"w{i}\t{tag}\n" for i, tag in enumerate(tags))
    path = write(tmp_path, text)
    with pytest.raises(DataError, match=where(path, line) + re.escape(message)):
        read_conll(path, scheme="iobes", strict=True)


def test_invalid_iobes_is_read_as_conlleval_reads_it_and_counted(tmp_path):
    path = write(tmp_path, "a\tB-PER\nb\tO\nc\tE-LOC\nd\tS-ORG\ne\tI-ORG\n")
    conll = read_conll(path, scheme="iobes")
    assert conll.sentences[0].tags == ["B-PER", "O", "B-LOC", "B-ORG", "B-ORG"]
    assert conll.invalid_tags == [
        "line 2: O after B-PER: in IOBES an entity ends with E-PER (or is a single S-PER); "
        "the PER entity read as ending at B-PER",
        "line 3: E-LOC after O: in IOBES it must continue B-LOC or I-LOC; read as B-LOC",
        "line 5: I-ORG after S-ORG: in IOBES it must continue B-ORG or I-ORG; read as B-ORG",
    ]


def test_an_iobes_tag_in_a_bio_file(tmp_path):
    path = write(tmp_path, "a\tB-PER\nb\tO\nc\tS-LOC\n")
    with pytest.raises(DataError, match=where(path, 3) + re.escape(
        "S-LOC is an IOBES tag, but the scheme is bio; pass --scheme iobes"
    )):
        read_conll(path, scheme="bio")


def test_to_bio_without_a_file():
    assert to_bio(["I-X", "I-X", "I-Y"], "iob1") == ["B-X", "I-X", "B-Y"]
    assert to_bio(["O", "I-X"], "bio") == ["O", "B-X"]
    with pytest.raises(DataError, match="^I-X after O"):
        to_bio(["O", "I-X"], "bio", strict=True)


# ---------------------------------------------------------------------------------------------
# Malformed input: one test per DataError message


def test_missing_file(tmp_path):
    with pytest.raises(DataError, match=re.escape(f"{tmp_path / 'nope.conll'}: file not found")):
        read_conll(tmp_path / "nope.conll")


def test_empty_file(tmp_path):
    path = write(tmp_path, "\ufeff\n\n \t\n")
    with pytest.raises(DataError, match=re.escape(f"{path}: the file holds only blank lines "
                                                  "and white space (5 characters)")):
        read_conll(path)
    path.write_text("")
    with pytest.raises(DataError, match=re.escape(f"{path}: the file is empty; expected")):
        read_conll(path)


def test_file_without_sentences(tmp_path):
    path = write(tmp_path, "-DOCSTART- -X- O\n\n")
    with pytest.raises(DataError, match=re.escape(f"{path}: the file holds no sentences")):
        read_conll(path)


def test_undecodable_bytes(tmp_path):
    path = write(tmp_path, "Ada\tB-PER\n\nM\xfcller\tB-PER\n".encode("latin-1"))
    with pytest.raises(DataError, match=where(path, 3) + re.escape(
        "undecodable bytes at byte offset 12 (0xfc); expected UTF-8 text"
    )):
        read_conll(path)


def test_too_few_columns(tmp_path):
    path = write(tmp_path, "Ada\tB-PER\nsaid\n")
    with pytest.raises(DataError, match=where(path, 2) + re.escape(
        "expected at least 2 columns (token column 0 (0-based), tag column last), found 1: "
        "'said'"
    )):
        read_conll(path)


def test_a_long_bad_line_is_quoted_in_part(tmp_path):
    # A file of one 10 MB line without a tab put all of it into the message, and on stderr.
    path = write(tmp_path, "x" * 100_000)
    with pytest.raises(DataError) as raised:
        read_conll(path)
    message = str(raised.value)
    assert message.endswith("found 1: " + repr("x" * 80) + "... (100,000 characters)")
    assert len(message) < 300 + len(str(path))
    path = write(tmp_path, "Ada\t" + "B" * 500 + "\n", name="tag.conll")
    with pytest.raises(DataError, match=where(path, 1) + re.escape(
            repr("B" * 80) + "... (500 characters) is not a tag")):
        read_conll(path)


def test_a_different_number_of_columns(tmp_path):
    path = write(tmp_path, "New York B-LOC\nis O\n", name="spaces.txt")
    with pytest.raises(DataError, match=where(path, 2) + re.escape(
        "found 2 columns, but the first token line (line 1) has 3: 'is O'"
    )):
        read_conll(path)


@pytest.mark.parametrize("token", ["\u200b", "\xa0", "\u3000\u200d"])
def test_an_empty_token(tmp_path, token):
    path = write(tmp_path, f"Ada\tB-PER\n{token}\tO\n")
    with pytest.raises(DataError, match=where(path, 2) + re.escape(
        "the token is empty (or only white space or invisible characters)"
    )):
        read_conll(path)


def test_white_space_of_every_kind_leaves_a_tab_separated_token_as_it_parts_other_lines():
    # A line without tabs is split at any white space (str.split()); a tab-separated token kept
    # a no-break space or U+2028 at its edges, a word unknown to the run's vocabulary.
    import sys

    assert set(WHITE_SPACE) == {c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace()}
    assert set(TOKEN_EDGE_CHARACTERS) == set(WHITE_SPACE) | set(INVISIBLE_CHARACTERS)


def test_a_tab_separated_token_loses_white_space_at_its_edges(tmp_path):
    tabs = write(tmp_path, "\xa0Ada\u2028\tB-PER\nmoved\u3000\tO\n", name="tabs.conll")
    spaces = write(tmp_path, "\xa0Ada\u2028 B-PER\nmoved\u3000 O\n", name="spaces.conll")
    for path in (tabs, spaces):
        assert [s.tokens for s in read_conll(path).sentences] == [["Ada", "moved"]]


@pytest.mark.parametrize("tag", ["PER", "B_PER", "b-PER", "B-", "L-PER"])
def test_a_malformed_tag(tmp_path, tag):
    path = write(tmp_path, f"Ada\t{tag}\n")
    with pytest.raises(DataError, match=where(path, 1) + re.escape(
        f"{tag!r} is not a tag; expected O or a prefix B-, I-, E- or S- and an entity type"
    )):
        read_conll(path)


def test_bad_arguments_are_value_errors(tmp_path):
    path = write(tmp_path, "a\tO\n")
    with pytest.raises(ValueError, match="Received: scheme='bilou'"):
        read_conll(path, scheme="bilou")
    with pytest.raises(ValueError, match="Received: token_column=1, tag_column=1"):
        read_conll(path, token_column=1, tag_column=1)


def test_an_unknown_tag_at_evaluation_time(tmp_path):
    train = read_conll(write(tmp_path, "Ada\tB-PER\nsaid\tO\n", name="train.conll"))
    vocabulary = TaggingVocabulary.build(train.sentences)
    test_path = write(tmp_path, "Ulm\tB-LOC\n", name="test.conll")
    test = read_conll(test_path)
    with pytest.raises(DataError, match=where(test_path, 1) + re.escape(
        "unknown entity type 'LOC' (tag 'B-LOC' as read in BIO): the model knows O, B-PER, I-PER"
    )):
        encode_sentences(test.sentences, vocabulary, path=test_path)
    # Many types: the message lists 21 tags and counts the rest (10,000 types made 170 kB).
    many = read_conll(write(tmp_path, "".join(f"w{k}\tB-T{k}\n" for k in range(30)),
                            name="many.conll"))
    with pytest.raises(DataError, match=r"the model knows O, B-T0, I-T0, .* and 40 more$"):
        encode_sentences(test.sentences, TaggingVocabulary.build(many.sentences), path=test_path)
    # The file's I-LOC starts an entity, so BIO reads it as B-LOC: the message must not seem
    # to quote a tag the file lacks as the file's.
    test_path = write(tmp_path, "Ulm\tI-LOC\n", name="inside.conll")
    with pytest.raises(DataError, match=re.escape("unknown entity type 'LOC' (tag 'B-LOC' as "
                                                  "read in BIO)")):
        encode_sentences(read_conll(test_path).sentences, vocabulary, path=test_path)


# ---------------------------------------------------------------------------------------------
# Plain-text input for prediction


def test_token_lines_and_format_detection(tmp_path):
    lines = write(tmp_path, "Einstein was born in Ulm\n\n  Bonn  rocks \n", name="a.txt")
    assert [s.tokens for s in read_token_lines(lines).sentences] == [
        ["Einstein", "was", "born", "in", "Ulm"], ["Bonn", "rocks"]
    ]
    assert not looks_like_conll(lines)
    assert looks_like_conll(write(tmp_path, "Ada\tO\n", name="b.conll"))
    assert looks_like_conll(write(tmp_path, "Ada O\nsaid O\n\nhi O\n", name="c.conll"))


def test_sentences_to_tag_in_either_format(tmp_path):
    lines = write(tmp_path, "Ada  lives in Ulm\nhi\n", name="a.txt")
    conll = write(tmp_path, "1\tAda\tB-PER\n2\tlives\tO\n\n1\thi\tO\n", name="b.conll")
    expected = [["Ada", "lives", "in", "Ulm"], ["hi"]]
    assert [s.tokens for s in read_sentences_to_tag(lines).sentences] == expected
    tagged = read_sentences_to_tag(conll, token_column=1).sentences
    assert [s.tokens for s in tagged] == [["Ada", "lives"], ["hi"]]
    assert all(s.tags is None for s in tagged)
    as_lines = read_sentences_to_tag(conll, input_format="lines").sentences
    assert as_lines[0].tokens == ["1", "Ada", "B-PER"]


def test_conll_text_reads_back(tmp_path):
    sentences = [Sentence(["Ada", "sings"], None, [1, 2]), Sentence(["hi"], None, [4])]
    gold, predicted = [["B-PER", "O"], ["O"]], [["B-PER", "B-PER"], ["O"]]
    text = conll_text(sentences, gold, predicted)
    assert text == "Ada\tB-PER\tB-PER\nsings\tO\tB-PER\n\nhi\tO\tO\n"
    read = read_conll(write(tmp_path, text), tag_column=1)
    assert [s.tokens for s in read.sentences] == [["Ada", "sings"], ["hi"]]
    assert [s.tags for s in read.sentences] == gold


# ---------------------------------------------------------------------------------------------
# Data directories


@pytest.mark.parametrize(
    "names, expected",
    [
        (["train.txt", "valid.txt", "test.txt", "README.md"],
         {"train": "train.txt", "validation": "valid.txt", "test": "test.txt"}),
        (["wnut17train.conll", "emerging.dev.conll", "emerging.test.annotated"],
         {"train": "wnut17train.conll", "validation": "emerging.dev.conll",
          "test": "emerging.test.annotated"}),
        (["eng.train", "eng.testa", "eng.testb"],
         {"train": "eng.train", "validation": "eng.testa", "test": "eng.testb"}),
        (["train.conll"], {"train": "train.conll"}),
    ],
)
def test_find_split_files(tmp_path, names, expected):
    for name in names:
        write(tmp_path, "a\tO\n", name=name)
    found = find_split_files(tmp_path)
    assert found == {split: str(tmp_path / name) for split, name in expected.items()}


def test_find_split_files_errors(tmp_path):
    with pytest.raises(DataError, match=re.escape(f"{tmp_path / 'none'}: directory not found")):
        find_split_files(tmp_path / "none")
    write(tmp_path, "a\tO\n", name="dev.conll")
    with pytest.raises(DataError, match=re.escape(
        f"{tmp_path}: no training file: expected a file whose name contains 'train'"
    )):
        find_split_files(tmp_path)
    write(tmp_path, "a\tO\n", name="train.conll")
    write(tmp_path, "a\tO\n", name="train-extra.conll")
    with pytest.raises(DataError, match=re.escape(
        f"{tmp_path}: several train files: train-extra.conll, train.conll"
    )):
        find_split_files(tmp_path)


# ---------------------------------------------------------------------------------------------
# The splits of a run


def numbered_sentences(count, start=0):
    """`count` distinct tagged sentences in CoNLL text."""
    return "\n".join(f"w{i}\tO\nRome\tB-LOC\n" for i in range(start, start + count))


def test_split_files_of_a_run(tmp_path):
    assert split_files() == {"train": str(SAMPLE_PATH)}
    write(tmp_path, "a\tO\n", name="train.conll")
    write(tmp_path, "a\tO\n", name="dev.conll")
    assert split_files(str(tmp_path), test_data="t.conll") == {
        "train": str(tmp_path / "train.conll"), "validation": str(tmp_path / "dev.conll"),
        "test": "t.conll",
    }
    assert split_files("x.conll", validation_data="v.conll") == {
        "train": "x.conll", "validation": "v.conll"
    }


def test_load_splits_reports_invalid_tags_per_file(tmp_path):
    train = write(tmp_path, numbered_sentences(20) + "\nx\tO\nRome\tI-LOC\n", name="train.conll")
    splits = load_splits(split_files(str(train)), 0.1, 0.1, seed=42)
    assert splits.files[0]["invalid_tags"] == {
        "count": 1, "first": ["line 62: I-LOC after O read as B-LOC"]
    }
    with pytest.raises(DataError, match="line 62: I-LOC after O"):
        load_splits(split_files(str(train)), 0.1, 0.1, seed=42, strict=True)


def test_splits_held_out_from_one_file_are_deterministic(tmp_path):
    train = str(write(tmp_path, numbered_sentences(48), name="train.conll"))
    test = str(write(tmp_path, numbered_sentences(12, start=100), name="test.conll"))
    first, second = (load_splits(split_files(train), 0.1, 0.1, seed=3) for _ in range(2))
    assert (len(first.train), len(first.validation), len(first.test)) == (38, 5, 5)
    assert [s.tokens for s in first.test] == [s.tokens for s in second.test]
    assert "held out from" in first.sources["test"]
    explicit = load_splits(split_files(train, test_data=test), 0.1, 0.1, seed=3)
    assert len(explicit.test) == 12 and len(explicit.validation) == 5
    with pytest.raises(DataError, match="too few to hold out"):
        load_splits(split_files(str(write(tmp_path, numbered_sentences(1), name="one.txt"))),
                    0.1, 0.1, seed=3)


def test_training_sentences_without_an_entity_are_refused_naming_the_file(tmp_path):
    text = "".join(f"Anna\tO\nworks\tO\nin\tO\nUlm{i}\tO\n\n" for i in range(20))
    train = str(write(tmp_path, text, name="plain.conll"))
    with pytest.raises(DataError, match=r"plain\.conll: the 16 training sentences \(after the "
                                        r"held-out sentences\) hold no entity: every tag is O"):
        load_splits(split_files(train), 0.1, 0.1, seed=3)


# ---------------------------------------------------------------------------------------------
# Vocabulary and batches


def sentences_for_vocabulary():
    return [
        Sentence(["The", "Cat", "sat"], ["O", "B-ANIMAL", "O"], [1, 2, 3]),
        Sentence(["the", "cat", "Naïve"], ["O", "B-ANIMAL", "B-MISC"], [5, 6, 7]),
    ]


def test_vocabulary_ids():
    vocabulary = TaggingVocabulary.build(sentences_for_vocabulary(), min_count=2, max_word_chars=3)
    assert vocabulary.words == ["[PAD]", "[UNK]", "cat", "the"]
    assert vocabulary.word_ids(["THE", "dog", "Cat"]) == [3, 1, 2]
    assert vocabulary.tags == ["O", "B-ANIMAL", "I-ANIMAL", "B-MISC", "I-MISC"]
    chars = vocabulary.char_ids(["Cat", "Naïve!"])
    assert [len(word) for word in chars] == [3, 3]  # truncated to max_word_chars
    assert chars[0][0] != vocabulary.char_ids(["cat"])[0][0]  # case is kept in characters
    assert chars[1][2] == vocabulary.chars.index("ï")
    assert vocabulary.char_ids(["Q"]) == [[1]]
    restored = TaggingVocabulary.from_dict(json.loads(json.dumps(vocabulary.to_dict())))
    assert restored.to_dict() == vocabulary.to_dict()
    assert "4 words (min_count=2)" in repr(vocabulary)
    with pytest.raises(ValueError, match="Received: min_count=0"):
        TaggingVocabulary.build(sentences_for_vocabulary(), min_count=0)
    # vocabulary.json keeps its 0.1.0 key.
    assert vocabulary.to_dict()["min_freq"] == 2 and restored.min_count == 2
    # A hand-edited count is refused on reading, not a TypeError at the first sentence.
    for key, value in (("max_word_chars", False), ("max_word_chars", 2.5), ("min_freq", 0)):
        with pytest.raises(ValueError, match=f"vocabulary.json: {key} must be a whole number of "
                                             f"at least 1; got {value!r}"):
            TaggingVocabulary.from_dict({**vocabulary.to_dict(), key: value})
    # A tag edited by hand was decoded to and exported as one of the model's tags.
    tags = vocabulary.to_dict()["tags"]
    for edited, message in ((["garbage", *tags[1:]], r"the tag 'garbage' is neither O nor "
                                                      r"B-TYPE / I-TYPE"),
                            ([*tags, 5], r"the tag 5 is neither O nor B-TYPE / I-TYPE"),
                            ([*tags, tags[-1]], r"a tag is listed twice")):
        with pytest.raises(ValueError, match=rf"vocabulary\.json: {message}; the file was "
                                             r"edited or damaged"):
            TaggingVocabulary.from_dict({**vocabulary.to_dict(), "tags": edited})


def test_graph_lookups_give_the_ids_of_the_vocabulary():
    vocabulary = TaggingVocabulary.build(sentences_for_vocabulary(), min_count=2)
    word_lookup, char_lookup = vocabulary.lookup_layers()
    tokens = ["THE", "dog", "Cat", "Naïve", ""]
    words = tf.strings.lower(tokens, encoding="utf-8")
    assert word_lookup(words).numpy().tolist() == vocabulary.word_ids(tokens[:-1]) + [0]
    chars = char_lookup(tf.strings.unicode_split(tokens, "UTF-8"))
    assert chars.to_list() == vocabulary.char_ids(tokens)


def test_lower_casing_matches_the_exported_graph():
    words = ["Ulm", "ÄRZTE", "Éclair", "İstanbul", "STRASSE", "Ωmega", "ОДЕССА", "x"]
    graph = [w.decode() for w in tf.strings.lower(words, encoding="utf-8").numpy()]
    assert graph == [normalize_word(w) for w in words]


def test_padded_batches():
    sentences = sentences_for_vocabulary() + [Sentence(["a"], ["O"], [9])]
    vocabulary = TaggingVocabulary.build(sentences)
    encoded = encode_sentences(sentences, vocabulary)
    batches = list(make_tagging_dataset(encoded, batch_size=2))
    assert [b[0].shape.as_list() for b in batches] == [[2, 3], [1, 1]]
    token_ids, char_ids, tag_ids = (t.numpy() for t in batches[0])
    assert char_ids.shape == (2, 3, 5)  # the longest word, "Naïve", has 5 characters
    assert np.all(char_ids[0, :, 3:] == 0) and np.all(char_ids[1, 2] != 0)
    np.testing.assert_array_equal(tag_ids, [[0, 1, 0], [0, 1, 3]])
    assert token_ids.dtype == np.int32 and np.all(token_ids != 0)
    shuffled = [b[0].numpy().tolist() for b in
                make_tagging_dataset(encoded, batch_size=3, shuffle=True, seed=1)]
    again = [b[0].numpy().tolist() for b in
             make_tagging_dataset(encoded, batch_size=3, shuffle=True, seed=1)]
    assert shuffled == again


def test_the_columns_a_file_needs_match_brute_force_for_far_columns_too():
    # Found by benchmarks/fuzz.sh: `ner train --token-column 999` met a search that stopped at
    # 999 columns, and its ValueError came out as a traceback.
    def brute(token, tag, most=200):
        for count in range(1, most):
            found = [c % count for c in (token, tag) if c is not None and -count <= c < count]
            if len(found) == (1 if tag is None else 2) and len(set(found)) == len(found):
                return count
        return None

    for token in range(-12, 12):
        for tag in [*range(-12, 12), None]:
            if token == tag:
                continue
            assert conll_module._columns_needed(token, tag) == brute(token, tag), (token, tag)
    assert conll_module._columns_needed(999, -1) == 1001  # 0..999 and a last one after it
    assert conll_module._columns_needed(10**9, None) == 10**9 + 1  # at once, no search


def test_a_sentence_longer_than_the_limit_is_refused_naming_its_lines(tmp_path):
    # A file without its blank lines is one sentence of every token: a training batch padded
    # to it ran out of memory in the character encoder.
    longest = "".join(f"w{i}\tO\n" for i in range(MAX_SENTENCE_TOKENS))
    assert len(read_conll(write(tmp_path, "a\tO\n\n" + longest)).sentences[1].tokens) == (
        MAX_SENTENCE_TOKENS)
    with pytest.raises(DataError, match=rf"data\.conll, line 3: the sentence of lines 3-1003 has "
                                        rf"1,001 tokens, more than MAX_SENTENCE_TOKENS=1000; "
                                        rf"expected a blank line between sentences"):
        read_conll(write(tmp_path, "a\tO\n\n" + longest + "z\tO\n"))
    path = write(tmp_path, "short line\n" + " ".join(["w"] * 1001) + "\n", name="lines.txt")
    with pytest.raises(DataError, match=r"lines\.txt, line 2: the sentence of line 2 has 1,001 "
                                        r"tokens"):
        read_token_lines(path)
