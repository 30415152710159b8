"""golden.evaluate(spec, **inputs) over every kind of rtl/kinds.py: it takes exactly the spec's
data inputs, returns exactly its data outputs in the documented shapes and dtypes, and agrees
with the public wrapper of the kind (mul, ..., mx_dot), whose results test_golden_digest.py pins.
"""

from __future__ import annotations

import numpy as np
import pytest

from fpforge import golden
from fpforge.golden.blockscale import BlockQuantized, block_dequantize, block_quantize
from kind_examples import EXAMPLES
from kind_examples import specs as kind_specs
from fpforge.rtl.kinds import KINDS, kind, make_spec
from fpforge.rtl.dot import MxDotSpec
from fpforge.rtl.multiformat import MultiFormatSpec
from fpforge.rtl.mx import MxDequantSpec, MxQuantSpec
from fpforge.rtl.options import Flag

# A small spec per kind, with the ports each option adds: pipeline control (excluded from the
# data ports), rm, rbits, mixed operand formats, lanes, and one-lane block and vector ports.
SPECS = [
    make_spec("mul", format="fp8e4m3", stages=1),
    make_spec("add", format="fp6e2m3", rounding="dynamic"),
    make_spec("sub", format="bf16", rounding="stochastic", sr_bits=12),
    make_spec("fma", format="float16", a_format="fp8e4m3", b_format="fp8e5m2",
              c_format="float32", saturate=True),
    make_spec("cvt", format="fp4e2m1", in_format="float32", rounding="rod"),
    make_spec("mxq", format="fp6e3m2", block=4, rounding="stochastic"),
    make_spec("mxq", format="mxint8", in_format="bfloat16", block=1, scale_rule="rceil"),
    make_spec("mxdq", in_format="fp8e5m2", block=8),
    make_spec("dot", in_format="fp4e2m1", n=4, accum="fixed", frac_bits=6),
    make_spec("dot", a_format="fp8e5m2", b_format="mxint8", n=1, scales=False, format="bf16"),
    *kind_specs(),
]
BATCH = (2, 3)


def test_every_kind_has_a_spec():
    assert list(EXAMPLES) == list(KINDS)


def _port_shape(port) -> tuple:
    """A port of L > 1 lanes has a last axis of L; a one-lane port has none."""
    return BATCH + ((port.lanes,) if port.lanes > 1 else ())


def _uint(width: int):
    return np.dtype(np.uint8 if width <= 8 else np.uint16 if width <= 16 else np.uint32)


def random_inputs(spec, seed=0) -> dict[str, np.ndarray]:
    """Uniform codes for every data input, in the port's width and shape."""
    rng = np.random.default_rng(seed)
    return {p.name: rng.integers(0, 1 << p.lane_width, _port_shape(p), dtype=np.uint64)
            .astype(_uint(p.lane_width)) for p in spec.inputs()}


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.default_name)
def test_outputs_are_the_ports(spec):
    out = golden.evaluate(spec, **random_inputs(spec))
    assert list(out) == [p.name for p in spec.outputs()]
    for p in spec.outputs():
        y = np.asarray(out[p.name])
        assert (y.shape, y.dtype) == (_port_shape(p), _uint(p.lane_width)), p.name
        assert int(y.max()) < 1 << p.lane_width, p.name


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.default_name)
def test_want_selects_outputs(spec):
    """Each output alone is the same as among all of them; ``y`` alone comes alone (the flag
    logic compiled away). The scalar kinds give ``y`` with ``flags`` when asked for flags only."""
    inputs = random_inputs(spec)
    full = golden.evaluate(spec, **inputs)
    for name in full:
        part = golden.evaluate(spec, want=(name,), **inputs)
        assert name in part and set(part) <= set(full)
        np.testing.assert_array_equal(np.asarray(part[name]), np.asarray(full[name]))
    assert list(golden.evaluate(spec, want=("y",), **inputs)) == ["y"]


WRAPPERS = {"mul": "mul", "add": "add", "sub": "sub", "fma": "fma", "cvt": "convert"}


def wrapper_outputs(spec, inputs: dict) -> dict:
    """The kind's public wrapper on the same inputs, as the unit's ports."""
    if isinstance(spec, MultiFormatSpec):
        return _multi_format_outputs(spec, inputs)
    if kind(spec.unit).shape == "scalar":
        fn = getattr(golden, WRAPPERS[spec.unit])
        y, flags = fn(*(inputs[p] for p in spec.operands), *spec.in_fmts, spec.out_fmt,
                      rounding=spec.rounding, saturate=spec.options.saturate,
                      sr_bits=spec.options.sr_bits, rm=inputs.get("rm"),
                      rbits=inputs.get("rbits"))
        return {"y": y, "flags": flags}
    if getattr(spec, "value_scaled", False):
        return _block_scaling_outputs(spec, inputs)
    if isinstance(spec, MxQuantSpec):
        k = spec.block
        lanes = (lambda v: v) if k > 1 else (lambda v: v[..., None])
        x = lanes(inputs["x"]).view(np.float32 if spec.in_fmt.width == 32 else "bfloat16")
        rbits = inputs.get("rbits")
        scale, y, flags = golden.mx_quantize(
            x, spec.elem, block=k, scale_rule=spec.scale_rule, rounding=spec.rounding,
            rbits=None if rbits is None else lanes(rbits), sr_bits=spec.sr_bits,
            return_flags=True)
        y = np.asarray(y)
        return {"scale": np.asarray(scale)[..., 0], "y": y if k > 1 else y[..., 0],
                "flags": np.bitwise_or.reduce(np.asarray(flags), axis=-1)}
    if isinstance(spec, MxDequantSpec):
        y = golden.mx_dequantize(inputs["scale"][..., None], inputs["x"], spec.elem, spec.block)
        return {"y": np.asarray(y).view(np.uint32)}
    assert isinstance(spec, MxDotSpec)
    lanes = (lambda v: v) if spec.n > 1 else (lambda v: v[..., None])
    y, flags = golden.mx_dot(lanes(inputs["a"]), lanes(inputs["b"]), spec.elem_a, spec.elem_b,
                             scales_a=inputs.get("scale_a"), scales_b=inputs.get("scale_b"),
                             **spec.accum.option_values(), out_fmt=spec.out_fmt,
                             rounding=spec.rounding, scale_fmt=spec.scale_fmt,
                             c=inputs.get("c"), c_fmt=spec.c_fmt or "float32")
    return {"y": y, "flags": flags}


def _multi_format_outputs(spec, inputs: dict) -> dict:
    """A multi-format or multi-lane unit (docs/multiformat.md) from its members' wrappers:
    member i's elements cut from the ports lane by lane, its results put in place where fmt
    selects it; a code without a member gives y = 0 and NV in every lane."""
    fmt = inputs.get("fmt", np.zeros(BATCH, np.uint8))
    y_port, L = spec.port("y"), spec.max_lanes
    y = np.zeros(_port_shape(y_port), np.uint64)
    flags = np.full(BATCH + ((L,) if L > 1 else ()), int(Flag.NV), np.uint64)
    for i, member in enumerate(spec.members):
        if not spec.LANE_AXIS:             # a dot: its lanes are its vector's elements
            out = wrapper_outputs(member, {p: v & ((1 << member.port(p).lane_width) - 1)
                                           for p, v in inputs.items() if p != "fmt"})
            yi, fi = out["y"], out["flags"]
        else:
            yi, fi = np.zeros_like(y), np.zeros_like(flags)
            for j in range(spec.member_lanes(i)):
                lane = {p: _element(spec, i, p, inputs[p], j) for p in spec.operands}
                lane |= {p: inputs[p][..., j] if spec.port(p).lanes > 1 else inputs[p]
                         for p in ("rm", "rbits") if p in inputs}
                out = wrapper_outputs(member, lane)
                if y_port.lanes > 1:
                    yi[..., j] = out["y"]
                else:
                    yi |= np.asarray(out["y"]).astype(np.uint64) << np.uint64(
                        spec.element(i, "y", j)[0])
                if L > 1:
                    fi[..., j] = out["flags"]
                else:
                    fi = np.asarray(out["flags"]).astype(np.uint64)
        chosen = fmt == i
        y = np.where(chosen[..., None] if y_port.lanes > 1 else chosen, yi, y)
        flags = np.where(chosen[..., None] if L > 1 else chosen, fi, flags)
    return {"y": y, "flags": flags}


def _element(spec, i: int, port: str, value, lane: int):
    """Member ``i``'s element of ``port`` in ``lane``, in the member's own width."""
    low, width = spec.element(i, port, lane)
    if spec.port(port).lanes > 1:          # a slot per lane: the element in its low bits
        value, low = value[..., lane], 0
    code = (value.astype(np.uint64) >> np.uint64(low)) & np.uint64((1 << width) - 1)
    return code.astype(_uint(width))


def _block_scaling_outputs(spec, inputs: dict) -> dict:
    """An NVFP4 unit's rows through golden/blockscale.py's tensor functions, one tensor per row
    (each row has its own tensor amax); the library functions return no flags."""
    k = spec.block
    rows = {p: v.reshape(-1, k) if v.ndim > len(BATCH) else v.reshape(-1)
            for p, v in inputs.items()}
    scales, ys = [], []
    for i, amax in enumerate(rows["tensor_amax"].view(np.float32)):
        if spec.unit == "mxq":
            q = block_quantize(rows["x"][i].view(np.float32)[None], spec.scaling,
                               tensor_amax=amax)
            scales.append(np.asarray(q.scales)[0, 0])
            ys.append(np.asarray(q.elements)[0])
        else:
            with np.errstate(all="ignore"):
                s2 = np.float32(amax) / np.float32(6 * 448)
            q = BlockQuantized(rows["scale"][i][None, None], rows["x"][i][None], s2)
            ys.append(np.asarray(block_dequantize(q, spec.scaling, tensor_amax=amax))[0]
                      .view(np.uint32))
    y = np.array(ys).reshape(BATCH + (k,))
    if spec.unit == "mxq":
        return {"scale": np.array(scales).reshape(BATCH), "y": y}
    return {"y": y}


@pytest.mark.parametrize("spec", [s for s in SPECS if kind(s.unit).shape == "block" or
                                  s.unit in WRAPPERS], ids=lambda s: s.default_name)
def test_agrees_with_the_public_wrapper(spec):
    inputs = random_inputs(spec, seed=1)
    out = golden.evaluate(spec, **inputs)
    want = wrapper_outputs(spec, inputs)
    if getattr(spec, "value_scaled", False):
        out.pop("flags", None)         # the tensor functions return no flags
    assert list(want) == list(out)
    for name in out:
        np.testing.assert_array_equal(np.asarray(out[name]), np.asarray(want[name]),
                                      err_msg=name)


def test_bad_inputs_name_the_ports():
    spec = make_spec("mul", format="fp8e4m3")
    a = np.zeros(3, np.uint8)
    with pytest.raises(ValueError, match=r"^fp_mul_e4m3fn_rne takes the inputs a, b; missing "
                       r"b$"):
        golden.evaluate(spec, a=a)
    with pytest.raises(ValueError, match=r"^fp_mul_e4m3fn_rne takes the inputs a, b; c, rm it "
                       r"does not have$"):
        golden.evaluate(spec, a=a, b=a, c=a, rm=a)
    with pytest.raises(ValueError, match=r"^fp_mul_e4m3fn_rne has no output scale; its outputs: "
                       r"y, flags$"):
        golden.evaluate(spec, want=("scale",), a=a, b=a)
    with pytest.raises(TypeError, match=r"^spec must be a Spec, not 'mul'$"):
        golden.evaluate("mul", a=a, b=a)
