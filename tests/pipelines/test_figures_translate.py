"""BLEU of the translate task against sacrebleu called directly, on three sentences whose
n-gram matches are counted by hand (issue 19: references rotated by one sentence must fail)."""

import pytest
import sacrebleu

from seqlab.data.translation import SentencePairs
from seqlab.pipelines.metrics import corpus_scores, translation_figures

REFERENCES = ["the cat sat on the mat", "a dog ran in the park", "birds sing every morning"]
HYPOTHESES = ["the cat sat on a mat", "a dog ran in the park", "birds sing at night"]
# Clipped n-gram matches / hypothesis n-grams, per sentence, n = 1..4:
#   "the cat sat on a mat":  5/6 (not "a"), 3/5, 2/4, 1/3 ("the cat sat on")
#   "a dog ran in the park": 6/6, 5/5, 4/4, 3/3 (exact)
#   "birds sing at night":   2/4, 1/3 ("birds sing"), 0/2, 0/1
# Corpus: 13/16, 9/13, 6/10, 4/7; 16 hypothesis and 16 reference words, so no brevity penalty.
HAND_BLEU = 100 * (13 / 16 * 9 / 13 * 6 / 10 * 4 / 7) ** 0.25  # 66.27


def test_bleu_is_sacrebleus_and_matches_the_hand_count():
    direct = sacrebleu.corpus_bleu(HYPOTHESES, [REFERENCES])
    assert direct.counts == [13, 9, 6, 4] and direct.totals == [16, 13, 10, 7]
    assert direct.score == pytest.approx(HAND_BLEU, abs=1e-9)
    scores = corpus_scores(HYPOTHESES, [REFERENCES])
    assert scores["bleu"] == pytest.approx(HAND_BLEU, abs=1e-9)
    assert scores["chrf"] == pytest.approx(sacrebleu.corpus_chrf(HYPOTHESES, [REFERENCES]).score)
    # The same hypotheses against references rotated by one sentence score far lower: a
    # misaligned reference stream cannot pass this test.
    rotated = REFERENCES[1:] + REFERENCES[:1]
    assert sacrebleu.corpus_bleu(HYPOTHESES, [rotated]).score < HAND_BLEU / 2


def test_translation_figures_score_each_translation_against_its_own_reference():
    pairs = SentencePairs(["src 1", "src 2", "src 3"], list(REFERENCES), [None] * 3, "toy")

    def translate(texts, batch_size, beam_width=None, length_penalty=None):
        assert texts == pairs.sources
        return list(HYPOTHESES) if beam_width is None else list(REFERENCES)

    figures, _ = translation_figures(translate, pairs, beam_width=2, length_penalty=0.6,
                                     batch_size=3)
    assert figures["greedy"]["bleu"] == pytest.approx(HAND_BLEU, abs=1e-9)
    assert figures["beam"]["bleu"] == pytest.approx(100.0)
