"""``python -m sim.exhaustive``: shards cover the input space exactly once; a small real run."""

import argparse
import json

import pytest

from sim import exhaustive


@pytest.mark.parametrize("total,n", [(1 << 32, 2), (1 << 16, 3), (10, 7), (5, 1)])
def test_shards_partition_the_space(total, n):
    ranges = [exhaustive.shard_range(total, i, n) for i in range(n)]
    assert ranges[0][0] == 0 and ranges[-1][1] == total
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))


def test_shard_argument_is_validated():
    assert exhaustive.parse_shard("1/4") == (1, 4)
    with pytest.raises(argparse.ArgumentTypeError, match="SHARD '4/4': need 0 <= i < N"):
        exhaustive.parse_shard("4/4")
    with pytest.raises(argparse.ArgumentTypeError, match="must look like i/N"):
        exhaustive.parse_shard("two")


def test_sharded_run_merges_shards(capsys):
    # fp4 mul: 256 pairs over two shards on Icarus, merged summary written.
    status = exhaustive.main(["--format", "fp4e2m1", "--unit", "mul", "--shards", "2",
                              "--sim", "icarus", "--lanes", "4", "--steps", "4"])
    out = capsys.readouterr().out
    assert status == 0, out
    merged = json.loads((exhaustive.OUT / "fp_mul_e2m1fin_rne.json").read_text())
    assert merged["vectors"] == 256 and merged["mismatches"] == 0 and merged["complete"]
    assert set(merged["per_shard"]) == {"0", "1"}
    assert "vectors/s" in out
