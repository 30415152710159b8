"""The full matrix (``make verify``): every unit x catalog format of <= 16 bits x rounding mode x
saturating x subnormals kept/flushed x 0 and 2 stages, each with its coverage tier, on the
simulator ``SIM`` names or else the faster one for the case (``tiers.matrix_simulator``)."""

import os

import pytest

from sim.bench import runner
from sim.bench.tiers import case_id, config_for, full_matrix, matrix_simulator, verify_formats

# make verify VERIFY_FORMATS=fp8e4m3,fp16 runs those formats' part of the matrix.
SPECS = full_matrix(verify_formats(os.environ.get("VERIFY_FORMATS")))


@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS, ids=[case_id(s) for s in SPECS])
def test_full_matrix(spec, record_property):
    sim = runner.simulator() if os.environ.get("SIM") else matrix_simulator(spec)
    record_property("simulator", sim)
    result = runner.run(config_for(spec, sim, seed=2024, bubbles=0.25 if spec.stages else 0.0),
                        sim)
    if not result.ok:
        pytest.fail(result.explain(), pytrace=False)
    assert result["mismatches"] == 0 and result["vectors"] > 0
