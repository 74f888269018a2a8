import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from odecore.expressions import parse
from nsode import default_checkpoint
from nsode.data import tokens
from nsode.decode import arity, beam_search, sample_search, to_expression
from nsode.encoding import encode_observations
from nsode.model import DecoderInput, NSODEConfig, load, vocabulary_config
from nsode.predict import Predictor


def test_beam_returns_complete_hypotheses_sorted_by_score(overfit):
    model, observations, _ = overfit
    t, y = observations[1]
    beams = beam_search(model, torch.from_numpy(encode_observations(t, y)), beam=16)
    assert len(beams) >= 16
    scores = [b.score for b in beams]
    assert scores == sorted(scores, reverse=True) and all(math.isfinite(s) for s in scores)
    children = dict(zip(tokens.TOKENS, arity(tokens.TOKENS)))
    for b in beams:  # every hypothesis is one complete prefix tree of the vocabulary
        open_slots = 1
        for item in b.prefix:
            assert open_slots > 0
            open_slots += (0 if isinstance(item, float) else children[item]) - 1
        assert open_slots == 0
        assert to_expression(b.prefix) is None or tokens.decode(list(b.prefix)) == to_expression(b.prefix)


def test_predictor_candidates_are_parseable_and_the_truth_wins(overfit):
    model, observations, _ = overfit
    t, y = observations[0]
    result = Predictor(model, beam=16).predict(t, y)
    assert result.candidates and result.r2 > 0.999
    for expr, _ in result.candidates:
        parse(expr)  # raises on anything the harness cannot read
    best = parse(result.expression)
    assert abs(float(best.subs({s: 2.0 for s in best.free_symbols})) + 1.0) < 1e-2  # -0.5 * y at y = 2
    fitted = [r2 for _, r2 in result.candidates if math.isfinite(r2)]
    assert fitted == sorted(fitted, reverse=True)


def test_arithmetic_failures_are_not_candidates():
    assert to_expression(["div", "y", 0.0]) is None  # y / 0 -> zoo
    assert to_expression(["log", -1.0]) is None  # i pi
    assert to_expression(["mul", 2.0, "y"]) == 2 * tokens.decode(["y"])


def test_one_constant_branch_makes_every_hypothesis_a_distinct_skeleton():
    """With branches=1 no two hypotheses differ only in their constants, so the same beam holds
    more distinct skeletons than the paper's (shipped checkpoint, a decay it reads)."""
    model = load(default_checkpoint("nsode-eps"), "cpu")
    t = np.linspace(0, 2, 64)
    bits = torch.from_numpy(encode_observations(t, 3 * np.exp(-0.5 * t)))

    def skeletons(beams):
        return [tuple("c" if isinstance(item, float) else item for item in b.prefix) for b in beams]

    paper = skeletons(beam_search(model, bits, beam=32))
    branched = skeletons(beam_search(model, bits, beam=32, branches=1))
    assert len(set(branched)) == len(branched)
    assert len(set(branched)) > len(set(paper))


def test_samples_are_complete_seeded_and_reach_skeletons_the_beam_does_not():
    """Ancestral samples obey the beam's grammar, repeat for the same seed, and spread wider than
    a beam of the same width (shipped checkpoint, a decay it reads)."""
    model = load(default_checkpoint("nsode-eps"), "cpu")
    t = np.linspace(0, 2, 64)
    memory = model.encode(torch.from_numpy(encode_observations(t, 3 * np.exp(-0.5 * t))).unsqueeze(0))
    drawn = sample_search(model, memory, samples=32, seed=1)
    assert drawn and drawn == sample_search(model, memory, samples=32, seed=1)
    assert drawn != sample_search(model, memory, samples=32, seed=2)
    children = dict(zip(tokens.TOKENS, arity(tokens.TOKENS)))
    for b in drawn:
        open_slots = 1
        for item in b.prefix:
            assert open_slots > 0
            open_slots += (0 if isinstance(item, float) else children[item]) - 1
        assert open_slots == 0 and b.score <= 0
    assert [b.score for b in drawn] == sorted((b.score for b in drawn), reverse=True)

    def skeletons(beams):
        return {tuple("c" if isinstance(item, float) else item for item in b.prefix) for b in beams}

    beam = skeletons(beam_search(model, None, memory=memory, beam=32, branches=1))
    assert skeletons(drawn) - beam


@pytest.fixture(scope="module")
def decay():
    """The shipped model's encoding of 64 clean points of y' = -0.5 y from 3."""
    model = load(default_checkpoint("nsode-eps"), "cpu")
    t = np.linspace(0, 2, 64)
    memory = model.encode(torch.from_numpy(encode_observations(t, 3 * np.exp(-0.5 * t))).unsqueeze(0))
    return model, memory


def test_a_beam_of_one_token_trees_is_found_at_max_tokens_one(decay):
    model, memory = decay
    beams = beam_search(model, None, memory=memory, beam=8, max_tokens=1)
    assert beams and all(len(b.prefix) == 1 for b in beams)


def test_one_constant_branch_still_writes_constants(decay):
    model, memory = decay
    beams = beam_search(model, None, memory=memory, beam=8, branches=1)
    assert any(isinstance(item, float) for b in beams for item in b.prefix)


def test_beam_scores_are_the_teacher_forced_log_probabilities(decay):
    """A constant is fed back as the mix of its interval's two grid embeddings, as in training."""
    model, memory = decay
    beams = [b for b in beam_search(model, None, memory=memory, beam=8)
             if any(isinstance(i, float) for i in b.prefix)][:3]
    assert beams
    bos = model.config.bos_token_id
    for b in beams:
        rows = [(bos, bos, 1.0, 0.0)] + tokens.targets(list(b.prefix))
        ids = torch.tensor([[r[:2] for r in rows[:-1]]])
        weights = torch.tensor([[r[2:] for r in rows[:-1]]], dtype=torch.float32)
        with torch.no_grad():
            logits, _ = model.decode(DecoderInput(ids, weights), memory)
        logp = logits[0].float().log_softmax(-1)
        score = sum(float(torch.logaddexp(logp[k, i], logp[k, j])) if i != j else float(logp[k, i])
                    for k, (i, j, _, _) in enumerate(rows[1:]))
        assert abs(score - b.score) < 1e-2, (b.prefix, score, b.score)


def test_near_zero_temperature_samples_are_greedy(decay):
    model, memory = decay
    drawn = sample_search(model, memory, samples=8, temperature=1e-4, seed=0)
    assert len({b.prefix for b in drawn}) == 1


def test_no_continuation_leaves_more_open_slots_than_tokens_left(decay):
    """`remaining` counts the token being written: after it, each open slot needs one more token."""
    from nsode.decode import _continuations, _Grammar

    model, _ = decay
    g = _Grammar.of(model.config, "cpu")
    logp = torch.zeros(3, model.config.vocab_size)
    slots = torch.tensor([1, 2, 2])
    total, ends, _, _ = _continuations(g, logp, torch.zeros(3), slots, remaining=1)
    assert torch.isfinite(total[0]).any()  # one slot, one token left: a leaf or a constant closes the tree
    assert not torch.isfinite(total[1:]).any()  # two slots, one token left: nothing can close it
    total, _, _, _ = _continuations(g, logp, torch.zeros(3), slots, remaining=2)
    assert torch.isfinite(total[1]).any() and not torch.isfinite(total[1, :len(g.names)][g.arity > 0]).any()
    assert not torch.isfinite(ends).any()


def test_a_nan_expression_is_not_a_candidate():
    """0 * (y / 0) and y + 0 * log(0) are nan in sympy: not a finite real expression."""
    assert to_expression(["mul", 0.0, "div", "y", 0.0]) is None
    assert to_expression(["add", "y", "mul", 0.0, "log", 0.0]) is None


class _Bigram(torch.nn.Module):
    """A stand-in decoder whose next-token probabilities depend only on the previous token
    (`table[previous][next]`, 1e-6 elsewhere), so that a beam can be followed by hand."""

    def __init__(self, table, max_tokens):
        super().__init__()
        self.config = NSODEConfig(**vocabulary_config(), max_tokens=max_tokens)
        index = self.config.tokens.index
        p = torch.full((self.config.vocab_size, self.config.vocab_size), 1e-6)
        for previous, row in table.items():
            for token, q in row.items():
                p[index(previous), index(token)] = q
        self.log_table = torch.nn.Parameter(p.log(), requires_grad=False)

    def decode(self, inp, memory, past=None, use_cache=False):
        cache = SimpleNamespace(self_attention_cache=SimpleNamespace(reorder_cache=lambda rows: None))
        return self.log_table[inp.ids[:, -1:, 0]], cache


def _prefixes(model, beam):
    return [" ".join(map(str, b.prefix)) for b in beam_search(model, None, memory=torch.zeros(1, 1, 8), beam=beam)]


def test_a_tree_that_ends_below_the_beams_live_continuations_is_dropped():
    """A beam of width 2: "y" ends at 0.5 * 0.15 = 0.075, below both live continuations of "neg"
    (neg y 0.15, neg neg 0.09), so it is not kept (a finished hypothesis must beat the k-th live one)."""
    row = {"y": 0.5, "neg": 0.3, "<eos>": 0.15}
    model = _Bigram({token: row for token in ("<bos>", "y", "neg")}, max_tokens=3)
    assert _prefixes(model, 2)[:2] == ["neg y", "neg neg y"]


def test_the_beam_stops_only_when_nothing_live_can_enter_its_kept_hypotheses():
    """Beam 2: once "neg y" and "add y y" have ended, the live "add y neg" is below the best but
    above the second, and ends as "add y neg y", the second best: stopping when the best live
    hypothesis falls below the best finished one (not the beam-th) would lose it."""
    table = {"<bos>": {"y": 0.05, "neg": 0.45, "add": 0.25, "<eos>": 0.35},
             "y": {"y": 0.15, "neg": 0.65, "add": 0.05, "<eos>": 0.35},
             "neg": {"y": 0.55, "neg": 0.05, "add": 0.15, "<eos>": 0.35},
             "add": {"y": 0.45, "neg": 0.15, "add": 0.25, "<eos>": 0.35}}
    assert _prefixes(_Bigram(table, max_tokens=5), 2)[:2] == ["neg y", "add y neg y"]


def test_samples_keep_within_the_max_tokens_asked_for():
    """sample_search's max_tokens bounds each drawn tree, as beam_search's does (not the config's 64)."""
    from nsode.decode import sample_search

    row = {"y": 0.2, "neg": 0.6, "add": 0.1, "<eos>": 0.1}
    model = _Bigram({token: row for token in ("<bos>", "y", "neg", "add")}, max_tokens=64)
    drawn = sample_search(model, torch.zeros(1, 1, 8), samples=16, max_tokens=3, seed=0)
    assert drawn and all(len(b.prefix) <= 3 for b in drawn)
