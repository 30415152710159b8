"""The pipeline value (rtl/pipeline.py) on every kind: its validation, the block units' cut
points, the default placement spelled by stages alone, and the numerics without it."""

import pytest

from fpforge.rtl import emit
from fpforge.rtl.kinds import KINDS, SHAPES, make_spec
from fpforge.rtl.options import OptionError
from fpforge.rtl.pipeline import Pipeline


@pytest.mark.parametrize("kw, message", [
    (dict(stages=-1), "stages must be a non-negative integer, not -1"),
    (dict(stages=True), "stages must be a non-negative integer, not True"),
    (dict(stages=1.5), "stages must be a non-negative integer, not 1.5"),
    (dict(stages=2, cuts=("core", "core")),
     "cuts must be distinct cut-point names (comma-separated), not ('core', 'core')"),
    (dict(stages=2, cuts=("core", 3)),
     "cuts must be distinct cut-point names (comma-separated), not ('core', 3)"),
    (dict(stages=1, cuts="decode,round"), "2 cut(s) (decode, round) need at least as many "
                                          "stages, not 1"),
])
def test_pipeline_errors_name_what_is_valid(kw, message):
    with pytest.raises(OptionError) as err:
        Pipeline(**kw)
    assert str(err.value) == message


def test_a_pipeline_is_a_frozen_value():
    p = Pipeline(2, "decode, round")
    assert p == Pipeline(2, ("decode", "round")) and hash(p) == hash(Pipeline(2, "decode,round"))
    assert (p.stages, p.cuts) == (2, ("decode", "round")) and Pipeline() == Pipeline(0, ())
    with pytest.raises(AttributeError):
        p.stages = 3


@pytest.mark.parametrize("unit, kw, message", [
    ("dot", dict(in_format="fp8e4m3", cuts="align"), "cuts of dot must be distinct names among "
                                                     "decode, product, sum, round "
                                                     "(comma-separated), not 'align'"),
    ("mxq", dict(cuts="decode"), "cuts of mxq must be distinct names among amax, scale, round "
                                 "(comma-separated), not 'decode'"),
    ("mxdq", dict(in_format="fp4e2m1", cuts="scale,scale"),
     "cuts of mxdq must be distinct names among decode, scale, round (comma-separated), not "
     "'scale,scale'"),
    ("mxq", dict(scale_rule="nvfp4_te", cuts="scale"),
     "mxq has no cut points (its stages are output registers), so no cuts, not 'scale'"),
    ("dot", dict(in_format="fp8e4m3", stages=1, cuts="decode,sum"),
     "2 cut(s) (decode, sum) need at least as many stages, not 1"),
])
def test_block_cut_errors(unit, kw, message):
    with pytest.raises(OptionError) as err:
        make_spec(unit, **kw)
    assert str(err.value) == message


@pytest.mark.parametrize("unit, kw, default", [
    ("mul", dict(format="fp8e4m3"), ("core", "round")),
    ("mxq", dict(format="fp4e2m1", block=4), ("scale", "round")),
    ("mxdq", dict(in_format="fp4e2m1", block=4), ("scale", "round")),
    ("dot", dict(in_format="fp4e2m1", n=4), ("sum", "round")),
])
def test_stages_alone_fill_the_default_order(unit, kw, default):
    for stages in range(4):
        spec = make_spec(unit, stages=stages, **kw)
        assert spec.cut_points == default[:stages] and spec.cuts == ()
        # the default placement given as cuts is the same spec, name and export
        cuts = ",".join(default[:stages]) or None
        assert make_spec(unit, stages=stages, cuts=cuts, **kw) == spec


def test_block_cuts_name_the_module_and_the_record():
    spec = make_spec("dot", in_format="fp4e2m1", n=4, cuts="decode,product")
    assert spec.stages == spec.latency == 2 and spec.cut_points == ("decode", "product")
    assert spec.default_name == "mxdot_fp4e2m1_n4_exact_e8m23_rne_s2_dp"
    assert spec.option_values()["cuts"] == "decode,product"
    assert spec.parameters()["cuts"] == ["decode", "product"]
    assert spec.header_lines()[-1] == "pipeline    registers after decode, product"
    q = make_spec("mxq", format="fp4e2m1", block=4, cuts="round", stages=3)
    assert q.default_name == "mxq_fp4e2m1_f32_k4_floor_rne_s3_r"


def test_value_scale_recipes_have_no_cut_points():
    spec = make_spec("mxq", scale_rule="nvfp4_te", stages=2)
    assert spec.pipeline_points == () and spec.cut_points == ()
    assert make_spec("mxdq", scale_rule="nvfp4_te", stages=1).cut_points == ()


@pytest.mark.parametrize("unit, kw", [
    ("fma", dict(format="fp8e4m3", cuts="decode,round", stages=3)),
    ("mxq", dict(format="fp4e2m1", block=4, cuts="amax", stages=2)),
    ("dot", dict(in_format="fp4e2m1", n=2, cuts="product,round")),
])
def test_numerics_is_the_spec_without_its_pipeline(unit, kw):
    spec = make_spec(unit, **kw)
    plain = {k: v for k, v in kw.items() if k not in ("cuts", "stages")}
    assert spec.numerics() == make_spec(unit, **plain)
    assert spec.numerics().pipeline == Pipeline() and spec.numerics().numerics() == spec.numerics()


def test_every_kind_has_a_shape():
    shapes = {name: k.shape for name, k in KINDS.items()}
    assert set(shapes.values()) == set(SHAPES)
    assert [n for n, s in shapes.items() if s == "block"] == ["mxq", "mxdq", "dot"]


@pytest.mark.parametrize("unit, kw, registers", [
    ("dot", dict(in_format="fp4e2m1", n=2, c_format="bf16", accum="fixed", frac_bits=6,
                 cuts="decode,product"),
     ["cd_a0_sig", "cd_b1_sign", "cd_c_exp", "cd_scale_a", "cp_p0_sig", "cp_c_sig",
      "cp_scale_b"]),
    ("mxq", dict(format="fp4e2m1", block=2, rounding="stochastic", cuts="amax"),
     ["ca_amax", "ca_exp0", "ca_rbits1"]),
    ("mxdq", dict(in_format="fp6e2m3", block=2, cuts="decode,round"),
     ["cd_scale", "cd_x1_sig", "r1_win"]),
])
def test_block_cuts_register_where_named(unit, kw, registers):
    text = emit.verilog(make_spec(unit, **kw))
    for name in registers:
        assert f" {name}" in text, name
