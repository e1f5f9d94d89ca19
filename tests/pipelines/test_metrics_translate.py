"""Tests of the translate section of pipelines/metrics.py: sacreBLEU's BLEU and chrF, greedy and
beam figures, and their terminal table."""

import numpy as np
import pytest
import sacrebleu

from seqlab.data.translation import SentencePairs
from seqlab.pipelines.metrics import (
    corpus_scores,
    translation_examples,
    translation_figures,
    translation_table,
)


def test_bleu_and_chrf_are_sacrebleus_on_the_seed_example():
    # Seed 004's BLEU example: one hypothesis, two references.
    hypotheses = ["The cat in the hat."]
    references = [["The cat is wearing a hat."], ["The cat is in the hat."]]
    scores = corpus_scores(hypotheses, references)
    # 13a tokens (the final "." is one): precisions 6/6, 4/5, 2/4, 1/3; 6 tokens against the
    # closest reference length 7 gives the brevity penalty exp(1 - 7/6).
    expected = np.exp(1 - 7 / 6) * (1 * 4 / 5 * 2 / 4 * 1 / 3) ** 0.25 * 100
    assert scores["bleu"] == pytest.approx(expected, abs=0.01)  # 51.15
    assert scores["bleu"] == sacrebleu.corpus_bleu(hypotheses, references).score
    assert "100.0/80.0/50.0/33.3 (BP = 0.846" in scores["bleu_details"]
    assert scores["bleu_signature"] == (
        f"nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:{sacrebleu.__version__}"
    )
    assert scores["chrf"] == sacrebleu.corpus_chrf(hypotheses, references).score
    assert scores["chrf_signature"].startswith("nrefs:2|case:mixed|eff:yes|nc:6|nw:0")


@pytest.mark.parametrize("references, tokenizer", [
    (["狗吃苹果。", "猫在睡觉。"], "zh"),
    (["犬がりんごを食べる。", "猫が寝ている。"], "char"),
    (["หมากินแอปเปิ้ล", "แมวกำลังนอน"], "char"),
    (["Der Hund isst.", "Die Katze schläft."], "13a"),
])
def test_bleu_is_tokenised_for_the_references_script(references, tokenizer):
    # 13a parts at spaces and punctuation: a Chinese clause was one token, and a Chinese test
    # set scored BLEU 0.0 for translations a character short of the reference.
    hypotheses = [references[0][:-2] + references[0][-1:], references[1]]
    scores = corpus_scores(hypotheses, [references])
    assert f"|tok:{tokenizer}|" in scores["bleu_signature"]
    assert scores["bleu"] == sacrebleu.corpus_bleu(hypotheses, [references],
                                                   tokenize=tokenizer).score
    if tokenizer != "13a":
        assert scores["bleu"] > sacrebleu.corpus_bleu(hypotheses, [references]).score


def test_figures_score_greedy_and_beam_translations_against_the_targets():
    pairs = SentencePairs(["A dog runs.", "A cat sleeps.", "Two men talk."],
                          ["Ein Hund läuft.", "Eine Katze schläft.", "Zwei Männer reden."],
                          [None] * 3, "toy")
    calls = []

    def translate(texts, batch_size, beam_width=None, length_penalty=None):
        calls.append((beam_width, length_penalty, batch_size))
        # Greedy is right; beam gets the last sentence wrong.
        return pairs.targets if beam_width is None else pairs.targets[:2] + ["Zwei reden."]

    figures, translations = translation_figures(translate, pairs, 3, 0.6, batch_size=2)
    assert calls == [(None, None, 2), (3, 0.6, 2)]
    assert figures["sentences"] == 3 and translations["greedy"] == pairs.targets
    assert figures["greedy"]["bleu"] == pytest.approx(100.0)
    assert "beam_width" not in figures["greedy"] and figures["greedy"]["seconds"] >= 0
    beam = figures["beam"]
    assert (beam["beam_width"], beam["length_penalty"]) == (3, 0.6)
    assert beam["bleu"] == corpus_scores(translations["beam"], [pairs.targets])["bleu"] < 100

    table = translation_table({"test": figures})
    assert "beam (width 3, alpha 0.6)" in table and "greedy" in table
    assert table.splitlines()[-2] == f"BLEU signature: {figures['greedy']['bleu_signature']}"
    assert table.splitlines()[-1].startswith("chrF signature: nrefs:1|")
    examples = translation_examples(pairs, translations, count=2)
    assert examples == ["  source:    A dog runs.", "  reference: Ein Hund läuft.",
                        "  greedy:    Ein Hund läuft.", "  beam:      Ein Hund läuft.",
                        "  source:    A cat sleeps.", "  reference: Eine Katze schläft.",
                        "  greedy:    Eine Katze schläft.", "  beam:      Eine Katze schläft."]
