"""Pipelining to a clock: the choice meets the period on OpenSTA with the fewest stages, then
flip-flops; what it chooses is bit-exact; impossible periods are clear errors. And mapping for a
delay target reads faster than mapping for area."""

import pytest

from fpforge.rtl.kinds import make_spec
from fpforge.rtl.options import OptionError
from fpforge.sim.design import Design
from fpforge.sim.verify import verify
from fpforge.synth import run
from fpforge.synth.pipeline import pipeline_for
from tests.cli_run import fpforge

# Below the fp8e4m3 mul's combinational delay mapped for it (947 ps since the multipliers'
# early overflow test), so the choice needs a stage.
CLOCK_PS = 800.0


@pytest.fixture(scope="module")
def choice(tmp_path_factory):
    return pipeline_for(make_spec("mul", format="fp8e4m3"), CLOCK_PS,
                        out_dir=tmp_path_factory.mktemp("clock"), jobs=2)


def test_every_path_group_meets_the_clock(choice):
    asic = choice.chosen.record.asic
    assert asic.delay_ps <= CLOCK_PS
    assert asic.paths and all(p["delay_ps"] <= CLOCK_PS for p in asic.paths.values())
    assert asic.fmax_mhz >= 1e6 / CLOCK_PS
    assert choice.spec.latency == choice.spec.stages >= 1


def test_fewest_stages_then_fewest_flip_flops(choice):
    fewer = [c for c in choice.tried if c.spec.stages < choice.spec.stages]
    assert fewer and all(c.delay_ps > CLOCK_PS for c in fewer)
    same = [c for c in choice.tried if c.spec.stages == choice.spec.stages
            and c.delay_ps <= CLOCK_PS]
    assert choice.chosen.registers == min(c.registers for c in same)
    assert choice.chosen.registers > 0
    text = "\n".join(choice.report())
    assert f"meet {CLOCK_PS:g} ps" in text and "flip-flops" in text


def test_the_chosen_pipeline_is_bit_exact(choice):
    result = verify(Design.of(choice.spec), engine="batch")
    assert result.ok, result.explain()
    assert result.vectors >= 65536 and result.mismatches == 0


# The search synthesises every placement before it refuses: f2i has two cut points (four
# placements), mul four (sixteen, make test-all only; the f2i case runs the same search).
@pytest.mark.parametrize("spec, clock_ps", [
    (make_spec("f2i", format="fp8e4m3"), 150),
    pytest.param(make_spec("mul", format="fp8e4m3"), 300, marks=pytest.mark.slow),
], ids=["f2i", "mul"])
def test_a_clock_no_placement_meets_names_the_fastest(tmp_path, spec, clock_ps):
    with pytest.raises(OptionError, match=rf"no placement of pipeline registers in "
                                          rf"{spec.default_name} meets {clock_ps} ps: the "
                                          rf"fastest, \d stage\(s\), registers after [a-z, ]+: "
                                          rf"[\d.]+ ps, "):
        pipeline_for(spec, clock_ps, out_dir=tmp_path, jobs=2)
    with pytest.raises(OptionError, match="a register alone needs"):
        pipeline_for(make_spec("mul", format="fp8e4m3"), 100, out_dir=tmp_path, jobs=2)


def test_a_block_unit_is_pipelined_at_its_own_cut_points(tmp_path):
    """The dot unit's cut points (decode, product, sum, round) searched like a scalar unit's."""
    spec = make_spec("dot", in_format="fp4e2m1", n=2)
    choice = pipeline_for(spec, 1300, out_dir=tmp_path, jobs=2)
    assert choice.spec.numerics() == spec and choice.spec.stages >= 1
    assert choice.chosen.delay_ps <= 1300 and choice.chosen.registers > 0
    tried = {c.spec.cut_points for c in choice.tried}
    assert {("decode",), ("product",), ("sum",), ("round",)} <= tried


@pytest.mark.parametrize("argv, message", [
    (["--unit", "mxq", "--scale-rule", "nvfp4_te", "--clock-ps", "900"],
     "--clock-ps places pipeline registers at a unit's cut points; "
     "mxq_fp4e2m1_f32_k16_nvfp4_te_rne has none"),
    (["--unit", "mul", "--stages", "1", "--clock-ps", "900"], "give it or --stages / --cuts"),
    (["--unit", "mul", "--clock-ps", "-5"], "must not be negative"),
])
def test_bad_clock_requests_exit_2_and_write_nothing(tmp_path, argv, message):
    done = fpforge("verilog", *argv, "--out-dir", str(tmp_path))
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not any(tmp_path.iterdir())


def test_mapping_for_a_delay_target_is_faster_than_for_area(tmp_path):
    spec = make_spec("mul", format="bf16")
    [area] = run([spec], out_dir=tmp_path, fpga=False, cores=False)
    # Below the area mapping's 2117 ps (HardFloat's 2279 ps no longer is).
    [timed] = run([spec], out_dir=tmp_path, fpga=False, cores=False, delay_target_ps=2000)
    assert area.delay_target_ps is None and timed.delay_target_ps == 2000
    assert timed.asic.delay_ps <= 2000 < area.asic.delay_ps
