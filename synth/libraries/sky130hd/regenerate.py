"""Regenerate sky130_fd_sc_hd__tt_025C_1v80.lib.gz beside this script from OpenSTA's
examples/sky130hd_tt.lib.gz (The-OpenROAD-Project/OpenSTA), byte for byte.

    python synth/libraries/sky130hd/regenerate.py --from PATH/sky130hd_tt.lib.gz [--check]

The upstream file's sha256 is checked first (a different upstream gives a different library);
``--check`` compares with the committed file instead of writing it. What is kept and dropped:
synth/liberty_trim.py.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))     # the repository root: fpforge.synth importable

from fpforge.synth.liberty_trim import gzip_bytes, trim  # noqa: E402

UPSTREAM_SHA256 = "210e56be3a3a0907b5241a34d277f664cf4b4d91dcb49a27ff813df4406a5889"
# The same file gunzipped (sky130hd_tt.lib), accepted too.
UPSTREAM_TEXT_SHA256 = "70a45bf9b5ea8f6a701dc34744b5c767b38e1af31b1d1f97309a97ec64603ecf"
TARGET = HERE / "sky130_fd_sc_hd__tt_025C_1v80.lib.gz"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from", dest="source", required=True, type=Path,
                    help="OpenSTA's examples/sky130hd_tt.lib.gz (or the same gunzipped)")
    ap.add_argument("--check", action="store_true",
                    help="compare with the committed file; write nothing")
    args = ap.parse_args(argv)
    raw = args.source.read_bytes()
    gzipped = raw[:2] == b"\x1f\x8b"
    expected = UPSTREAM_SHA256 if gzipped else UPSTREAM_TEXT_SHA256
    found = hashlib.sha256(raw).hexdigest()
    if found != expected:
        print(f"{args.source}: sha256 {found}, expected {expected} "
              f"(OpenSTA examples/sky130hd_tt.lib.gz{'' if gzipped else ', gunzipped'})",
              file=sys.stderr)
        return 2
    data = gzip_bytes(trim((gzip.decompress(raw) if gzipped else raw).decode()))
    if args.check:
        same = TARGET.read_bytes() == data
        print(f"{TARGET.name}: {'identical' if same else 'DIFFERS'}")
        return 0 if same else 1
    TARGET.write_bytes(data)
    print(f"wrote {TARGET} ({len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
