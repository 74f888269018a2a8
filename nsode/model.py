"""The NSODE encoder-decoder: IEEE-754 bits of (t_i, y_i) in, prefix tokens with two-hot constants out.

Built from Hugging Face BART blocks (`BartEncoder`, `BartDecoder`: pre-made layers with learned
positional embeddings, gelu, sdpa attention and a key-value cache) inside our own
`PreTrainedModel`, so `save_pretrained` / `from_pretrained` work on a local folder with safetensors.

Attention is full (dense), not BigBird as in the paper: sequences are at most 256 observations
and about 30 output tokens, where BigBird's block-sparse attention gives no speed-up (its blocks
cover most of such a sequence, and HF BigBird falls back to full attention below ~700 tokens
anyway), while full attention uses fused sdpa kernels on CPU and GPU.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from transformers import BartConfig, PreTrainedModel
from transformers.utils import logging as hf_logging
from transformers.models.bart.modeling_bart import BartDecoder, BartEncoder

from odecore.processes import one_line
from nsode import checkpoint_folder
from nsode.checkpoint_files import WEIGHTS_NAME, CheckpointError, check
from nsode.data import tokens as vocab
from nsode.encoding import BITS_PER_OBSERVATION

# name -> (d_model, encoder layers, decoder layers, heads, feed-forward dim)
PRESETS = {
    "paper": (512, 6, 6, 16, 2048),  # the paper's Table 1 (about 2 x 23M parameters)
    "small": (256, 4, 4, 8, 1024),  # about 7M parameters: under 16 MiB in fp16
    "mini": (192, 3, 3, 6, 512),  # about 2.8M parameters: the size compared with tiny at equal CPU time
    "tiny": (128, 2, 2, 4, 512),  # about 1M parameters: CPU training and tests
}


class NSODEConfig(BartConfig):
    """BART's configuration plus what NSODE needs: the input width and the constant grid tokens.

    `constant_token_ids[k]` is the vocabulary id of the grid value `constant_values[k]`
    (increasing); the decoder reads a constant as a mix of two neighbouring grid embeddings.
    """

    model_type = "nsode"

    def __init__(self, preset: str = "tiny", input_bits: int = BITS_PER_OBSERVATION,
                 tokens=(), constant_token_ids=(), constant_values=(), max_points: int = 512,
                 max_tokens: int = 64, **kwargs):
        d, n_enc, n_dec, heads, ff = PRESETS[preset]
        defaults = dict(d_model=d, encoder_layers=n_enc, decoder_layers=n_dec,
                        encoder_attention_heads=heads, decoder_attention_heads=heads,
                        encoder_ffn_dim=ff, decoder_ffn_dim=ff, activation_function="gelu",
                        max_position_embeddings=max(max_points, max_tokens), dropout=0.0,
                        attention_dropout=0.0, activation_dropout=0.0, scale_embedding=False,
                        is_encoder_decoder=True, tie_word_embeddings=False)
        defaults.update(kwargs)
        super().__init__(**defaults)
        self.preset = preset
        self.input_bits = input_bits
        self.tokens = list(tokens)  # the vocabulary travels with the checkpoint
        self.constant_token_ids = list(constant_token_ids)
        self.constant_values = [float(v) for v in constant_values]
        self.max_points = max_points
        self.max_tokens = max_tokens


@dataclass
class DecoderInput:
    """Decoder inputs as two-hot rows: embedding = w[..., 0] emb(ids[..., 0]) + w[..., 1] emb(ids[..., 1]).

    An ordinary token has ids (k, k) and weights (1, 0); a constant alpha x_i + beta x_{i+1}
    has ids (i, i+1) and weights (alpha, beta). Shapes: (batch, length, 2).
    """

    ids: torch.Tensor
    weights: torch.Tensor


class NSODEModel(PreTrainedModel):
    config_class = NSODEConfig
    base_model_prefix = "nsode"
    main_input_name = "bits"
    _supports_sdpa = True

    def __init__(self, config: NSODEConfig):
        super().__init__(config)
        # the linear layer that replaces the encoder's input embedding (paper, Sec. 3.2)
        self.input_proj = nn.Linear(config.input_bits, config.d_model)
        self.encoder = BartEncoder(config)
        self.decoder = BartDecoder(config)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.post_init()

    def encode(self, bits: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Encoder states (batch, n, d_model) for bits (batch, n, 128); mask 1 = real observation."""
        embeds = self.input_proj(bits.to(self.input_proj.weight.dtype))
        return self.encoder(inputs_embeds=embeds, attention_mask=mask).last_hidden_state

    def embed_decoder_input(self, inp: DecoderInput) -> torch.Tensor:
        emb = self.decoder.embed_tokens(inp.ids)  # (batch, length, 2, d)
        return (emb * inp.weights.unsqueeze(-1).to(emb.dtype)).sum(-2)

    def decode(self, inp: DecoderInput, memory: torch.Tensor, memory_mask: torch.Tensor | None = None,
               past=None, use_cache: bool = False):
        """Logits (batch, length, vocab) and the updated key-value cache (None unless use_cache)."""
        out = self.decoder(inputs_embeds=self.embed_decoder_input(inp), encoder_hidden_states=memory,
                           encoder_attention_mask=memory_mask, past_key_values=past,
                           use_cache=use_cache)
        return self.lm_head(out.last_hidden_state), (out.past_key_values if use_cache else None)

    def forward(self, bits: torch.Tensor, decoder_ids: torch.Tensor, decoder_weights: torch.Tensor,
                mask: torch.Tensor | None = None) -> torch.Tensor:
        """Teacher-forced logits (batch, length, vocab)."""
        memory = self.encode(bits, mask)
        logits, _ = self.decode(DecoderInput(decoder_ids, decoder_weights), memory, mask)
        return logits


def vocabulary_config(tokens=vocab.TOKENS) -> dict:
    """What NSODEConfig stores about the output vocabulary (`nsode.data.tokens` by default).

    The token list travels with every checkpoint, so decoding uses the vocabulary the model was
    trained with.
    """
    grid = [i for i, tok in enumerate(tokens) if tok in vocab.GRID_TOKENS]
    return dict(tokens=list(tokens), vocab_size=len(tokens), pad_token_id=tokens.index(vocab.PAD),
                bos_token_id=tokens.index(vocab.BOS), eos_token_id=tokens.index(vocab.EOS),
                decoder_start_token_id=tokens.index(vocab.BOS), forced_eos_token_id=None,
                constant_token_ids=grid, constant_values=[float(tokens[i]) for i in grid])


def build(preset: str, **overrides) -> NSODEModel:
    """A freshly initialised model of a preset over the project's vocabulary."""
    return NSODEModel(NSODEConfig(preset=preset, **{**vocabulary_config(), **overrides}))


def resolve_device(name: str | torch.device) -> torch.device:
    """`auto` (CUDA when present, else the CPU), `cpu`, `cuda` or `cuda:N`; a ValueError names a
    device this machine lacks or a name it cannot read."""
    name = str(name)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name not in ("cpu", "cuda") and not re.fullmatch(r"cuda:\d+", name):
        raise ValueError(f"device {name}: use auto, cpu or cuda")
    if name != "cpu" and not torch.cuda.is_available():
        raise ValueError(f"device {name}: this machine has no CUDA device (auto uses one when present)")
    return torch.device(name)


def load(folder: str | Path, device: str | torch.device = "cpu") -> NSODEModel:
    """Load a checkpoint folder with safetensors only; refuses folders holding pickle files, and
    says in one line (CheckpointError) why a folder cannot be loaded."""
    folder = checkpoint_folder(folder)
    check(folder)
    hf_logging.disable_progress_bar()  # one checkpoint, one file: a progress bar is noise
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # transformers' load report table: the error below says it in one line
    try:
        model, info = NSODEModel.from_pretrained(folder, use_safetensors=True, dtype=torch.float32,
                                                 output_loading_info=True,
                                                 ignore_mismatched_sizes=True)  # reported below, by name
    except Exception as err:  # transformers and safetensors raise many kinds: one line names the folder
        raise CheckpointError(f"{folder} cannot be loaded: {one_line(err)}") from None
    finally:
        hf_logging.set_verbosity(verbosity)
    for kind in ("missing_keys", "mismatched_keys", "unexpected_keys"):  # never run on random weights
        keys = sorted(_key_text(k) for k in info.get(kind) or ())
        if keys:
            raise CheckpointError(f"{folder / WEIGHTS_NAME} does not match its config.json: "
                                  f"{len(keys)} {kind.replace('_', ' ')} ({', '.join(keys[:3])}"
                                  f"{', ...' if len(keys) > 3 else ''})")
    return model.to(device).eval()


def _key_text(key) -> str:
    """A loading report's key: its name, and for a mismatched one the shapes in the file and by the config."""
    if isinstance(key, tuple) and len(key) == 3:
        return f"{key[0]}: {list(key[1])} in the file, {list(key[2])} by the config"
    return str(key)


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
