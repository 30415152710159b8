"""Every kind of the registry, simulated against the golden model over every input of a small
spec (tests/kind_examples.py SMALL) on the batch engine, and its deliberately wrong variant
caught: a new kind is verified by being registered."""

import pytest

from kind_examples import SMALL, small
from fpforge.sim.design import Design
from fpforge.sim.engines.batch import BatchEngine
from fpforge.sim.faults import FAULTS, faulty_design
from fpforge.sim.stream import Plan


@pytest.mark.parametrize("unit", SMALL)
def test_every_input_of_a_small_spec(unit):
    spec = small(unit)
    result = BatchEngine().verify(Design.of(spec), Plan([["exhaustive", {}]], seed=3))
    assert result["mismatches"] == 0 and result["vectors"] > 0, result["first_mismatches"]


@pytest.mark.parametrize("unit", SMALL)
def test_a_wrong_variant_is_caught(unit):
    spec = small(unit)
    for fault in FAULTS:
        try:
            design = faulty_design(spec, fault)
        except ValueError:
            continue                      # this fault does not apply to the spec
        result = BatchEngine().verify(design, Plan([["exhaustive", {}]], seed=3, max_report=1))
        assert result["mismatches"] > 0, f"{fault} on {spec.default_name} went unnoticed"
        return
    pytest.fail(f"no fault applies to {spec.default_name}")
