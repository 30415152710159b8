"""fp div and sqrt: a radix-2 restoring digit recurrence as the exact core, the one rounder after it.

The decoders normalize the operands (hidden bit set, subnormals shifted up), so the recurrence
works on significands with a constant top bit:

- div: the divisor b and the dividend a aligned to P = max(Pa, Pb) bits lie in [2^(P-1), 2^P);
  from r = a, each step gives the next quotient bit q = [r >= b] and r = 2(r - q b). After n
  steps the quotient holds floor(a 2^(n-1) / b), in [2^(n-2), 2^n): at most one leading zero,
  the rounder's one-shift case; the remainder r is the sticky bit.
- sqrt: the significand with the exponent made even (one left shift when it is odd) is the
  radicand's top; each step brings down the next bit pair, r = 4r + pair, and compares it with
  4q + 1 (the square of 2q + 1, less 4q^2 already taken): q = 2q + [r >= 4q + 1], r -= that.
  After n steps the root has its leading one at bit n - 1, r the sticky bit.

``--arch comb`` unrolls the n steps (each sized to the bits it can hold; cut points after a
quarter, a half and three quarters of them: ``early``, ``middle``, ``late``). ``--arch iter``
builds one step of the full widths and runs it n cycles: the operands are decoded and loaded on
the edge that takes them (valid_i and ready_o), the rounder reads the registers, and valid_o
marks the cycle after the last step (docs/divsqrt.md).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value

from .common import Raw, signed_for
from .rounder import Rounder
from .unit import FpUnit

__all__ = ["FpDiv", "FpSqrt"]

# The comb recurrence's cut points inside it, at these fractions of its steps.
RECURRENCE_CUTS = (("early", 1), ("middle", 2), ("late", 3))


def _ge(m: Module, a, b, name: str):
    """a >= b and a - b (unsigned operands), from one subtractor."""
    w = max(len(a), len(b)) + 1
    d = Signal(signed_for(-(1 << (w - 1)), (1 << (w - 1)) - 1), name=name)
    m.d.comb += d.eq(a - b)
    return ~d[-1], d


class _Recurrence(FpUnit):
    """The shared frame: ``start`` (decoded operands -> the recurrence's state and the values it
    carries), ``step`` (one digit), ``finish`` (-> Raw). Subclasses set ``unit``."""

    normalized_operands = True

    def core(self, m, ops):
        spec = self._spec
        n = spec.digits
        state, keep = self.start(m, ops)
        marks = {n * q // 4: point for point, q in RECURRENCE_CUTS}
        for i in range(n):
            state = self.step(m, i, state, keep, unrolled=True)
            stage = self.stager(m, marks[i + 1]) if i + 1 in marks and i + 1 < n else None
            if stage is not None:
                regs = stage({**{f"st_{k}": v for k, v in state.items()}, **keep})
                state = {k: regs.pop(f"st_{k}") for k in state}
                keep = regs
        return self.finish(m, state, keep)

    # ----- iter: one step over n cycles ---------------------------------------------------------
    def elaborate(self, platform):
        if not self._spec.iterative:
            return super().elaborate(platform)
        m = Module()
        spec = self._spec
        n = spec.digits
        state0, keep0 = self.start(m, self.decoded_operands(m), full=True)
        controls = {k: getattr(self, k) for k in ("rm", "rbits") if hasattr(self, k)}

        busy = Signal(name="busy")
        done = Signal(name="done")
        count = Signal(range(max(n, 2)), name="count")
        take = Signal(name="take")
        state = {k: Signal(Value.cast(v).shape(), name=f"it_{k}") for k, v in state0.items()}
        keep = {k: Signal(Value.cast(v).shape(), name=f"it_{k}")
                for k, v in {**keep0, **controls}.items()}
        m.d.comb += [self.ready_o.eq(~busy), take.eq(self.valid_i & ~busy),
                     self.valid_o.eq(done)]
        nxt = self.step(m, 0, state, keep, unrolled=False)
        m.d.sync += done.eq(0)
        with m.If(take):
            m.d.sync += [busy.eq(1), count.eq(0)]
            m.d.sync += [state[k].eq(v) for k, v in state0.items()]
            m.d.sync += [keep[k].eq(v) for k, v in {**keep0, **controls}.items()]
        with m.Elif(busy):
            m.d.sync += [state[k].eq(nxt[k]) for k in state]
            m.d.sync += count.eq(count + 1)
            with m.If(count == n - 1):
                m.d.sync += [busy.eq(0), done.eq(1)]
        raw = self.finish(m, state, keep)
        rounder = Rounder(spec.out_fmt, spec.options, raw, rm=keep.get("rm"),
                          rbits=keep.get("rbits"))
        m.submodules[rounder.name] = rounder
        m.d.comb += [self.y.eq(rounder.y), self.flags.eq(rounder.flags)]
        return m


    def sticky(self, state):
        """The exact result lies above the quotient or root formed: the remainder is not 0."""
        return state["r"] != 0 if self._spec.REMAINDER_STICKY else Const(0, 1)


class FpDiv(_Recurrence):
    """``y = a / b`` correctly rounded (module docstring)."""

    unit = "div"

    def start(self, m, ops, full=False):
        a, b = ops
        P = max(a.width, b.width)
        invalid_op = (a.zero & b.zero) | (a.inf & b.inf)
        nan = a.nan | b.nan | invalid_op
        inf = (a.inf | b.zero) & ~nan
        exp = Signal(signed_for(a.exp_range[0] - b.exp_range[1], a.exp_range[1] - b.exp_range[0]),
                     name="quot_exp")
        m.d.comb += exp.eq(a.exp - b.exp)
        self._frame = (a, b, P)
        r0 = Signal(P + 1, name="rem0")
        m.d.comb += r0.eq(a.sig << (P - a.width))
        keep = dict(divisor=(b.sig << (P - b.width))[:P], exp=exp, sign=a.sign ^ b.sign,
                    zero=(a.zero | b.inf) & ~nan & ~inf, inf=inf, nan=nan,
                    invalid=invalid_op | a.invalid | b.invalid,
                    divzero=b.zero & ~a.zero & ~a.inf & ~a.nan)
        return {"r": r0, "q": Const(0, self._spec.digits if full else 1)}, keep

    def step(self, m, i, state, keep, unrolled):
        """q = [r >= b]; r = 2(r - q b): r < 2b before, so it keeps P + 1 bits."""
        P = self._frame[2]
        r = state["r"]
        ok, diff = _ge(m, r, keep["divisor"], f"rem_diff{i}" if unrolled else "rem_diff")
        r_next = Signal(P + 1, name=f"rem{i + 1}" if unrolled else "rem_next")
        m.d.comb += r_next.eq(Mux(ok, diff, r)[:P] << 1)
        q = state["q"]
        q_next = Cat(ok, q) if unrolled else Cat(ok, q[:-1])
        return {"r": r_next, "q": q_next}

    def finish(self, m, state, keep):
        a, b, P = self._frame
        n = self._spec.digits
        # quotient * 2^-(n-1) * 2^(exp + a.off - b.off) with both sigs aligned to P bits
        off = a.off - b.off - (P - a.width) + (P - b.width) - (n - 1)
        return Raw(sign=keep["sign"], exp=keep["exp"], off=off, sig=state["q"][:n], width=n,
                   exp_range=(a.exp_range[0] - b.exp_range[1], a.exp_range[1] - b.exp_range[0]),
                   lz_max=1, sticky=self.sticky(state), zero=keep["zero"], inf=keep["inf"],
                   nan=keep["nan"], invalid=keep["invalid"], divzero=keep["divzero"])


class FpSqrt(_Recurrence):
    """``y = sqrt(a)`` correctly rounded (module docstring); sqrt(-0) = -0."""

    unit = "sqrt"

    def start(self, m, ops, full=False):
        (a,) = ops
        spec = self._spec
        c = spec.radicand_bits
        k = spec.digits - 1
        shift = c - (a.width - 1)                 # 0 or 1: the leading one at an even bit
        # value = sig 2^(exp + off); with C = off - shift, its exponent exp + C is made even by
        # one more left shift where it is odd, and halved: floor((exp + C) / 2) splits into
        # (exp + C mod 2) >> 1 and a constant.
        C = a.off - shift
        odd = Signal(name="exp_odd")
        m.d.comb += odd.eq(a.exp[0] ^ (C & 1))
        x = Signal(c + 2, name="radicand")
        m.d.comb += x.eq(Mux(odd, a.sig << (shift + 1), a.sig << shift))
        lo, hi = a.exp_range
        exp = Signal(signed_for((lo + (C & 1)) // 2, (hi + (C & 1)) // 2), name="root_exp")
        m.d.comb += exp.eq((a.exp + (C & 1)) >> 1)
        s = k - c // 2                           # radicand = x 2^2s: s zero pairs after x's
        self._frame = (a, ((lo + (C & 1)) // 2, (hi + (C & 1)) // 2), (C - (C & 1)) // 2 - s, c)
        negative = a.sign & ~a.zero & ~a.nan
        nan = a.nan | negative
        keep = dict(radicand=x, exp=exp, sign=a.sign, zero=a.zero, inf=a.inf & ~nan, nan=nan,
                    invalid=a.invalid | negative)
        if not full:
            return {"r": Const(0, 1), "q": Const(0, 1)}, keep
        return {"r": Const(0, k + 3), "q": Const(0, k + 1), "x": x}, \
            {kk: v for kk, v in keep.items() if kk != "radicand"}

    def step(self, m, i, state, keep, unrolled):
        """r = 4r + pair; q = 2q + [r >= 4q + 1], r less that: r <= 2q keeps it to j + 2 bits
        after step j (comb), k + 3 bits in the iterative register."""
        spec = self._spec
        k = spec.digits - 1
        c = spec.radicand_bits
        r, q = state["r"], state["q"]
        if unrolled:
            x = keep["radicand"]
            lsb = c + 2 - 2 * (i + 1)            # the pair of step i, from x's top
            pair = x[lsb:lsb + 2] if lsb >= 0 else Const(0, 2)
            rw, qw = i + 2, i + 1
            tag = str(i + 1)
        else:
            x = state["x"]
            pair = x[-2:]
            rw, qw = k + 3, k + 1
            tag = "_next"
        r4 = Cat(pair, r)
        ok, diff = _ge(m, r4, Cat(Const(1, 2), q), f"root_diff{tag}")
        r_next = Signal(rw, name=f"root_rem{tag}")
        m.d.comb += r_next.eq(Mux(ok, diff, r4))
        out = {"r": r_next, "q": Cat(ok, q)[:qw]}
        if not unrolled:
            out["x"] = Cat(Const(0, 2), x[:-2])
        return out

    def finish(self, m, state, keep):
        a, exp_range, off, _ = self._frame
        n = self._spec.digits
        return Raw(sign=keep["sign"], exp=keep["exp"], off=off, sig=state["q"][:n], width=n,
                   exp_range=exp_range, lz_max=0, sticky=self.sticky(state), zero=keep["zero"],
                   inf=keep["inf"], nan=keep["nan"], invalid=keep["invalid"])
