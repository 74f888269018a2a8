"""Beam search for NSODE with a key-value cache, batched across beams, honouring two-hot constants.

Written for this model rather than using `generate()`, because a constant is not one token: the
paper decodes it from two neighbouring grid tokens (argmax x_i and its larger-logit neighbour,
weights from a softmax restricted to the two), and the next decoder input is the matching mix of
their embeddings. In the beam, the constant mass is grouped by grid interval: an interval
(x_i, x_{i+1}) is a candidate when one of its ends picks the other as its larger neighbour; its
score is log(p_i + p_{i+1}) and its value alpha x_i + beta x_{i+1}. The paper says no more of
its beam than that it is 1536 wide; this interval scoring is ours, and at beam width 1 it is not
the paper's greedy rule (which takes the argmax token first): with p(y) = 0.4 and p(3) = p(4) = 0.3
it writes the constant 3.5 where the greedy rule writes y (`constant_from_argmax` is that rule).

Every sequence is a complete prefix expression: an open-slot counter (arity bookkeeping) allows
the end token only when the tree is complete and forbids tokens that could not be completed
within `max_tokens`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import sympy
import torch

from odecore.expressions import Y
from nsode.data import tokens as vocab
from nsode.model import DecoderInput, NSODEModel

CPU_DEFAULT_BEAM = 64  # keeps a CPU prediction well under a second (benchmarks/nsode_latency.py)
GPU_DEFAULT_BEAM = 1536  # the paper's width
INTEGER_SNAP = 5e-3  # a decoded constant this close to an integer is that integer


@dataclass(frozen=True)
class Beam:
    """One finished hypothesis: prefix tokens as in `nsode.data.tokens` (names, floats) and its score."""

    prefix: tuple  # operator names, "y", and floats for constants
    score: float  # sum of log-probabilities


def arity(token_names: Sequence[str]) -> np.ndarray:
    """Children per token id: 2 binary, 1 unary, 0 leaves (y, grid tokens), -1 for pad/bos/eos."""
    return np.array([2 if t in vocab.BINARY else 1 if t in vocab.UNARY else -1 if t in vocab.SPECIALS
                     else 0 for t in token_names])


def decoded_constant(value: float) -> float:
    """A constant as the beam emits it: snapped to an integer within INTEGER_SNAP (the two-hot mass
    sits on one grid token up to rounding), otherwise rounded to 4 decimals (what a grid spacing of 1
    resolves), so that integers come out as sympy Integers and printed floats stay short."""
    if abs(value - round(value)) < INTEGER_SNAP:
        return float(round(value))
    return round(value, 4)


def to_expression(prefix: Sequence, variable: sympy.Expr = Y) -> sympy.Expr | None:
    """sympy expression of a finished beam, or None when it is not a finite real expression;
    `variable` replaces y (tokens.decode).

    Beams are complete prefix trees by construction; what can still fail is arithmetic
    (y / 0 gives zoo, log(-1) gives I pi, 0 ** -1 ...).
    """
    try:
        expr = vocab.decode(list(prefix), variable)
    except (vocab.EncodingError, ZeroDivisionError, TypeError, ValueError):
        return None
    if expr.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo, sympy.I):
        return None
    return expr


def two_hot_rule(logits: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The paper's constant decoding applied to every grid interval at once.

    `logits`: (..., m) logits of the m grid tokens; `values`: (m,) grid values, increasing.
    Returns per interval i (0..m-2): `valid` (some end picks the other as larger neighbour),
    `alpha` (weight on x_i; beta = 1 - alpha) and the decoded value alpha x_i + beta x_{i+1}.
    """
    left = torch.cat([torch.full_like(logits[..., :1], -torch.inf), logits[..., :-1]], -1)
    right = torch.cat([logits[..., 1:], torch.full_like(logits[..., :1], -torch.inf)], -1)
    picks_right = right >= left  # ties go right; the last token can only pick left
    picks_right[..., -1] = False
    valid = picks_right[..., :-1] | ~picks_right[..., 1:]  # x_i picks right or x_{i+1} picks left
    pair = torch.stack([logits[..., :-1], logits[..., 1:]], -1).softmax(-1)
    alpha = pair[..., 0]
    value = alpha * values[:-1] + (1 - alpha) * values[1:]
    return valid, alpha, value


def constant_from_argmax(logits: torch.Tensor, values: torch.Tensor) -> float:
    """Greedy decoding of one constant from the logits of the m grid tokens (paper, Sec. 3.2)."""
    i = int(torch.argmax(logits))
    m = len(values)
    if i == 0:
        j = 1
    elif i == m - 1:
        j = m - 2
    else:
        j = i + 1 if logits[i + 1] >= logits[i - 1] else i - 1
    lo, hi = min(i, j), max(i, j)
    a, b = torch.stack([logits[lo], logits[hi]]).softmax(0)
    return float(a * values[lo] + b * values[hi])


@dataclass(frozen=True)
class _Grammar:
    """What the beam needs to know of the vocabulary: token arities, which tokens are symbolic,
    and the constant grid (constants enter as grid intervals, not as single tokens)."""
    names: list
    arity: torch.Tensor
    symbolic: torch.Tensor
    const_ids: torch.Tensor
    const_vals: torch.Tensor
    eos: int

    @classmethod
    def of(cls, cfg, device) -> "_Grammar":
        tok_arity = torch.tensor(arity(list(cfg.tokens)), device=device)
        const_ids = torch.tensor(cfg.constant_token_ids, device=device)
        symbolic = tok_arity >= 0
        symbolic[const_ids] = False
        return cls(list(cfg.tokens), tok_arity, symbolic, const_ids,
                   torch.tensor(cfg.constant_values, device=device, dtype=torch.float32), cfg.eos_token_id)


def _continuations(g: _Grammar, logp, scores, slots, remaining: int, branches: int | None = None):
    """Scores of every continuation (beam, vocab + grid intervals), of ending now (beam), and the
    two-hot weight and value of each interval's constant. A symbolic token is allowed when a slot
    is open and the tree can still close in time; the end token only for complete trees; with
    `branches`, only each hypothesis's `branches` best grid intervals (ties kept). `remaining`
    counts the token written now, so the tree may leave at most `remaining - 1` slots open."""
    new_slots = slots[:, None] + g.arity[None, :] - 1
    ok = g.symbolic[None, :] & (slots[:, None] > 0) & (new_slots <= remaining - 1)
    tok_scores = torch.where(ok, logp, -torch.inf)
    end_scores = torch.where(slots == 0, logp[:, g.eos], -torch.inf)
    cp = logp[:, g.const_ids]
    valid, alpha, value = two_hot_rule(cp, g.const_vals)
    int_ok = valid & (slots[:, None] > 0) & ((slots - 1)[:, None] <= remaining - 1)
    int_scores = torch.where(int_ok, torch.logaddexp(cp[:, :-1], cp[:, 1:]), -torch.inf)
    if branches and int_scores.shape[1] > branches:
        kth = torch.topk(int_scores, branches, dim=1).values[:, -1:]
        int_scores = torch.where(int_scores >= kth, int_scores, -torch.inf)
    return scores[:, None] + torch.cat([tok_scores, int_scores], 1), scores + end_scores, alpha, value


def _next_inputs(g: _Grammar, choice: torch.Tensor, rows: torch.Tensor, alpha: torch.Tensor, n_vocab: int):
    """Decoder inputs of the chosen continuations (`choice` per hypothesis, continuing row `rows`
    of `alpha`): a token, or a constant as its interval's two grid tokens with their two-hot
    weights. Returns (is_const, interval k, token, ids, weights)."""
    n_int = len(g.const_ids) - 1
    is_const = choice >= n_vocab
    k = (choice - n_vocab).clamp(min=0, max=n_int - 1)
    a = alpha[rows, k]
    tok = torch.where(is_const, g.const_ids[k], choice)
    tok2 = torch.where(is_const, g.const_ids[(k + 1).clamp(max=n_int)], choice)
    ids = torch.stack([tok, tok2], -1)[:, None, :]
    weights = torch.stack([torch.where(is_const, a, torch.ones_like(a)),
                           torch.where(is_const, 1 - a, torch.zeros_like(a))], -1)[:, None, :]
    return is_const, k, tok, ids, weights


@torch.no_grad()
def beam_search(model: NSODEModel, bits: torch.Tensor | None, *, beam: int = CPU_DEFAULT_BEAM,
                max_tokens: int | None = None, memory: torch.Tensor | None = None,
                branches: int | None = None) -> list[Beam]:
    """All finished hypotheses for one trajectory (bits: (n, 128)), best score first.

    Every hypothesis is one complete prefix tree over the model's vocabulary (`config.tokens`).
    `memory` (1, n, d_model), the encoder's output, may be passed instead of `bits` (to time the
    encoder apart). `branches` k lets each hypothesis continue into only its k likeliest constant
    intervals: with every interval a branch (None or 0, the paper's beam) most of a CPU-sized beam is
    the same skeleton with neighbouring constants; with k = 1 every live hypothesis is a distinct
    token sequence, which the skeleton search wants (it refits the constants anyway).
    """
    cfg = model.config
    device = next(model.parameters()).device
    g = _Grammar.of(cfg, device)
    max_tokens = max_tokens or cfg.max_tokens
    n_vocab = cfg.vocab_size
    if memory is None:
        memory = model.encode(bits.unsqueeze(0).to(device))
    memory = memory.expand(beam, -1, -1)
    scores = torch.full((beam,), -torch.inf, device=device)
    scores[0] = 0.0
    slots = torch.ones(beam, dtype=torch.long, device=device)  # open slots of each prefix tree
    ids = torch.full((beam, 1, 2), cfg.bos_token_id, device=device)
    weights = torch.tensor([1.0, 0.0], device=device).expand(beam, 1, 2).clone()
    history: list[list] = [[] for _ in range(beam)]
    finished: list[Beam] = []
    past = None
    for step in range(max_tokens + 1):
        logits, past = model.decode(DecoderInput(ids, weights), memory, past=past, use_cache=True)
        total, ends, alpha, value = _continuations(g, logits[:, -1].float().log_softmax(-1), scores, slots,
                                                   max_tokens - step, branches)
        # finished hypotheses: end-token continuations that beat the k-th best live continuation
        top = torch.topk(total.flatten(), beam)
        for b in torch.nonzero(torch.isfinite(ends) & (ends >= top.values[-1])).flatten().tolist():
            finished.append(Beam(tuple(history[b]), float(ends[b])))
        if step == max_tokens or not torch.isfinite(top.values[0]):
            break
        if len(finished) >= beam and float(top.values[0]) < sorted((f.score for f in finished), reverse=True)[beam - 1]:
            break  # log-probabilities only fall: nothing live can enter the kept hypotheses
        parent, choice = top.indices // total.shape[1], top.indices % total.shape[1]
        is_const, k, tok, ids, weights = _next_inputs(g, choice, parent, alpha, n_vocab)
        slots = slots[parent] + torch.where(is_const, torch.zeros_like(choice), g.arity[tok]) - 1
        scores = torch.where(torch.isfinite(top.values), top.values, -torch.inf)
        past.self_attention_cache.reorder_cache(parent)  # cross-attention keys are the same for all
        vals = value[parent, k].tolist()
        history = [history[p] + [decoded_constant(v) if c else g.names[t]]
                   for p, c, t, v in zip(parent.tolist(), is_const.tolist(), tok.tolist(), vals)]
    finished.sort(key=lambda f: f.score, reverse=True)
    return finished


@torch.no_grad()
def sample_search(model: NSODEModel, memory: torch.Tensor, *, samples: int, temperature: float = 1.0,
                  max_tokens: int | None = None, seed: int = 0) -> list[Beam]:
    """`samples` hypotheses drawn from the model one token at a time (ancestral sampling, the
    logits divided by `temperature`), under the beam's grammar and two-hot constant rule; best
    score (log-probability) first, duplicates kept. A beam's hypotheses share most of their
    prefixes; samples spread over the distribution, so they reach skeletons a beam of the same
    width never keeps (a skeleton the search never sees, it cannot choose). Seeded: the same
    trajectory gives the same samples.

    `memory` (1, n, d_model) is the encoder's output (`NSODEModel.encode`)."""
    cfg = model.config
    device = next(model.parameters()).device
    g = _Grammar.of(cfg, device)
    max_tokens = max_tokens or cfg.max_tokens
    n_vocab = cfg.vocab_size
    generator = torch.Generator(device=device).manual_seed(seed)
    memory = memory.expand(samples, -1, -1)
    scores = torch.zeros(samples, device=device)
    slots = torch.ones(samples, dtype=torch.long, device=device)
    live = torch.ones(samples, dtype=torch.bool, device=device)
    ids = torch.full((samples, 1, 2), cfg.bos_token_id, device=device)
    weights = torch.tensor([1.0, 0.0], device=device).expand(samples, 1, 2).clone()
    history: list[list] = [[] for _ in range(samples)]
    finished: list[Beam] = []
    past = None
    rows = torch.arange(samples, device=device)
    for step in range(max_tokens + 1):
        logits, past = model.decode(DecoderInput(ids, weights), memory, past=past, use_cache=True)
        steps, ends, alpha, value = _continuations(g, logits[:, -1].float().log_softmax(-1),
                                                   torch.zeros_like(scores), slots, max_tokens - step)
        options = torch.cat([steps, ends[:, None]], 1)  # log-probabilities; the last column ends the tree
        live &= torch.isfinite(options).any(1)
        if not bool(live.any()):
            break
        tempered = torch.where(live[:, None], options / temperature, torch.zeros_like(options))
        choice = torch.multinomial(tempered.softmax(1), 1, generator=generator).squeeze(1)
        scores = scores + torch.where(live, options[rows, choice], torch.zeros_like(scores))
        ended = live & (choice == options.shape[1] - 1)
        for b in torch.nonzero(ended).flatten().tolist():
            finished.append(Beam(tuple(history[b]), float(scores[b])))
        live &= ~ended
        choice = torch.where(live, choice, torch.zeros_like(choice))  # finished rows decode a dummy token
        is_const, k, tok, ids, weights = _next_inputs(g, choice, rows, alpha, n_vocab)
        slots = slots + torch.where(is_const, torch.zeros_like(choice), g.arity[tok]) - 1
        vals, consts, toks = value[rows, k].tolist(), is_const.tolist(), tok.tolist()
        for b in torch.nonzero(live).flatten().tolist():
            history[b].append(decoded_constant(vals[b]) if consts[b] else g.names[toks[b]])
    finished.sort(key=lambda f: f.score, reverse=True)
    return finished
