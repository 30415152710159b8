"""A small model to measure a configuration on: an MLP on scikit-learn's bundled digits.

The model (64 -> 64 -> 10, ReLU) is trained in float32 with a fixed recipe for each of
``SEEDS``; then its two matrix multiplies run through the emulated hardware (weights and
activations quantized directly, no calibration; the biases added in float32 after each
product), and the predictions and logits are compared with the float32 model's on the held-out
digits (docs/codesign.md).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from fpforge.golden.gemm import emulated_matmul
from fpforge.golden.gemm_config import GemmConfig

from .quality import qsnr_db

__all__ = ["DigitsResult", "evaluate", "evaluate_softmax", "SEEDS"]

SEEDS = (0, 1, 2)
HIDDEN = 64
STEPS = 400
LEARNING_RATE = 0.01
TEST_FRACTION = 0.2


@dataclass(frozen=True)
class DigitsResult:
    accuracy: float          # mean over the seeds, in [0, 1]
    float32_accuracy: float  # the float32 models' mean
    flips: float             # mean count of test predictions that differ from float32's
    logit_qsnr_db: float     # over every seed's test logits (evaluate_softmax: probabilities)
    test_size: int

    @property
    def change_points(self) -> float:
        return 100 * (self.accuracy - self.float32_accuracy)


@functools.lru_cache(maxsize=1)
def _data():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    order = np.random.default_rng(0).permutation(len(x))
    cut = int(len(x) * (1 - TEST_FRACTION))
    train, test = order[:cut], order[cut:]
    return x[train], d.target[train], x[test], d.target[test]


def _forward(params, x, matmul):
    w1, b1, w2, b2 = params
    h = jnp.maximum(matmul(x, w1) + b1, 0.0)
    return matmul(h, w2) + b2


@functools.lru_cache(maxsize=None)
def _trained(seed: int):
    """The float32 model of ``seed``: Adam on the full training set, a fixed recipe."""
    x, y, _, _ = _data()
    k1, k2 = jax.random.split(jax.random.key(seed))
    params = [jax.random.normal(k1, (64, HIDDEN), jnp.float32) * (2 / 64) ** 0.5,
              jnp.zeros(HIDDEN, jnp.float32),
              jax.random.normal(k2, (HIDDEN, 10), jnp.float32) * (2 / HIDDEN) ** 0.5,
              jnp.zeros(10, jnp.float32)]
    onehot = jax.nn.one_hot(y, 10)

    def loss(p):
        logits = _forward(p, x, jnp.matmul)
        return -jnp.mean(jnp.sum(onehot * jax.nn.log_softmax(logits), axis=-1))

    @jax.jit
    def step(p, m, v, t):
        g = jax.grad(loss)(p)
        m = [0.9 * mi + 0.1 * gi for mi, gi in zip(m, g)]
        v = [0.999 * vi + 0.001 * gi * gi for vi, gi in zip(v, g)]
        p = [pi - LEARNING_RATE * (mi / (1 - 0.9 ** t)) / (jnp.sqrt(vi / (1 - 0.999 ** t)) + 1e-8)
             for pi, mi, vi in zip(p, m, v)]
        return p, m, v

    m = [jnp.zeros_like(p) for p in params]
    v = [jnp.zeros_like(p) for p in params]
    for t in range(1, STEPS + 1):
        params, m, v = step(params, m, v, t)
    return tuple(np.asarray(p) for p in params)


def evaluate(config: GemmConfig) -> DigitsResult:
    """The digits MLPs of every seed through ``config``'s hardware, against float32."""
    return _compare(lambda params, x: (
        np.asarray(_forward(params, x, jnp.matmul)),
        np.asarray(_forward(params, x, lambda a, b: emulated_matmul(a, b, config)))))


def evaluate_softmax(softmax) -> DigitsResult:
    """The float32 MLPs' predictions as the argmax of ``softmax`` of their logits (emulated
    units, codesign/nonlinear.py: rounding can tie the top probabilities, the first wins),
    against float32's softmax; its QSNR is the probabilities'."""
    def outputs(params, x):
        logits = _forward(params, x, jnp.matmul)
        return np.asarray(jax.nn.softmax(logits, axis=-1)), np.asarray(softmax(logits))
    return _compare(outputs)


def _compare(outputs) -> DigitsResult:
    """``outputs(params, x)``: (float32's, the hardware's) outputs of every seed's model on
    the held-out digits, predictions their argmax."""
    _, _, x, y = _data()
    acc, acc32, flips, logits, logits32 = [], [], [], [], []
    for seed in SEEDS:
        ref, got = outputs(_trained(seed), x)
        acc32.append(np.mean(ref.argmax(1) == y))
        acc.append(np.mean(got.argmax(1) == y))
        flips.append(int(np.sum(got.argmax(1) != ref.argmax(1))))
        logits.append(got)
        logits32.append(ref)
    return DigitsResult(float(np.mean(acc)), float(np.mean(acc32)), float(np.mean(flips)),
                        qsnr_db(np.concatenate(logits32), np.concatenate(logits)), len(y))
