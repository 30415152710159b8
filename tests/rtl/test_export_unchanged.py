"""The documented ``fpforge verilog`` examples (README.md, docs/verilog-export.md, docs/mx.md)
and a few more write exactly the bytes they wrote at 5f7d1c4, before the one-spec refactor:
the .v, the .json sidecar and the .core file (their SHA-256 at that commit, below). The export
contract is what benches outside this repository bind to."""

import hashlib
import shlex

import pytest

from fpforge.cli import main

# argv of fpforge verilog -> SHA-256 of OUT.v, OUT.json, OUT.core at 5f7d1c4 (fpforge 0.1.0)
# The combinational fp8e4m3 mul export: its .v (and the .json naming its digest) since the
# multipliers' early overflow test (rtl/fp_units/rounder.py early_overflow; not where a
# register sits inside the rounder), proven equivalent to 7027afd's by make verify-equiv
# (docs/verification.md).
AT_5F7D1C4 = {
    "--unit mul --format fp8e4m3 -o fp_mul.v": (
        "dd594d6d7e3dadcf429e165e1a6a4344190f809f15ab21f382e7ff0dac0ca98f",
        "f63779cabbe816f97404bf2865a45033477cbfcadf93e351392a7c418679b6c0",
        "61b56c0ec9bb5c5683b03716b361f163e631b6b48da7bec94f8ef390c8049910"),
    "--unit mul --format fp8e4m3 --stages 2 -o fp_mul_e4m3fn_rne_s2.v": (
        "ddc7f90222f99fd5513a0b7069f3ee94ca687c01f9373624e2b47329952fb22e",
        "c237815c4c6377aa6a746a883f2a1a05f7f54408b87f3ab00a40f79ccb56cbf8",
        "e4bddd90858cbbe8298cdb8d66c48222687defa56c5cff9bbdb2bb2ff99a7b67"),
    "--unit mxq --format fp8e4m3 -o q.v": (
        "a30a73f08d859c61da6f2b766b769cbcbae3dc8119199ded2c133f37fceeb89f",
        "fab1452cc9f8559f253005b45666ad321cba830fbf169bcd62749928466ee773",
        "87dfdf116ed377a7b584256dd436556352222ceac5d0453a37a7842b3c83738d"),
    ("--unit mxq --format fp8e4m3 --in-format bfloat16 --block 32 --scale-rule even "
     "--rounding stochastic --stages 2 -o q2.v"): (
        "619b55313680bb77632c4d0e506cc8752da970b8d4952838d954daed48d40429",
        "aa29282e0c8370d692f53ac0ff9152be4988b1ba5247618b4dd1443beb6d5a61",
        "890c6b06f018f0bcab920d8e9421fbade7075ee1dcb6b760c3a9526ab190c053"),
    "--unit mxdq --format float32 --in-format fp8e4m3 --block 32 -o dq.v": (
        "2f08cf705b5fb8916b6fb3cccea9a898b37543fbaf4862e30db2640089ec29b3",
        "eee1dff2e4b588f65c75a22d3de68d5e3abe27d336c0defe8c45b179af3eab30",
        "b31944ed9b8670ea3cc5b1f4af8d35482cc426b5a898ae98d293087497cd01c0"),
    "--unit mxdq --format float32 --in-format fp4e2m1 --block 8 --stages 3 -o dq2.v": (
        "bcc95f7b8a7b801f355c2b6aed949014dbf7bc59e314bc0cb9d48585fe389b0e",
        "31656bee18968fd5d5129e184fad7905de6ce28697b30fde1bec8e8a2e489a50",
        "2866e716920e5d8a4c4e3f2b1acaabd53a2f57e9441976e55a50fadd83d98260"),
    "--unit dot --format float32 --in-format fp8e4m3 -o d.v": (
        "334283de85ae183530b88440cd8ce1ad8660ce05077755f4355410f237cf8391",
        "bc4a46d086d2a0773a13a761a47779e7bc1d5dadc08bbb4cad6926ab144c9094",
        "d652b1e0183267001b11b1c7a3f41c70996b7784b7831a5c4aea64f15a00270f"),
    ("--unit dot --format bfloat16 --a-format fp8e4m3 --b-format fp4e2m1 --n 8 --accum "
     "fixed --frac-bits 12 --no-scales --rounding rtz --stages 2 -o d2.v"): (
        "cfdc2a9bd44ad4946c8c90f88a30f7a44d22fbf2773661fa5d27edc05188cc43",
        "e2a56b8bdc305fd95b98698a5817e761861b08270257fa37591cab6cb1d28209",
        "690666da8452d1b6bb9a174c3e517e2edf9b8d3e4e358fcf855857df45bf20ed"),
    "--unit add --format fp16 --rounding dynamic --stages 1 -o add_dyn.v": (
        "5f55cb75b85e24c285e72bc5311394e197a8c7a794be231e00897c047b766665",
        "260541d5d30cce275ee81764a033358721ca34abb6e7c7af895ce80f36bbe933",
        "620be366f9e5cc634fdd77e4264ef9e86985acfc083709f07abb1140b116d78b"),
    ("--unit fma --format bf16 --a-format fp8e4m3 --b-format fp8e5m2 --c-format fp16 "
     "--rounding stochastic --sr-bits 12 --saturate -o fma_mixed.v"): (
        "c4ffc1206a3fb6ac59dc87103e8a2043ef253ae93e34ebe92597fc046763689a",
        "cbdc990fa7e6378bd67201ae83233d5b62fe1fb02acaecbf48d3dd362f2161c1",
        "e50f9baf3e826f4e51f255731dbe53ab1e329e752579d10846fa7217cd0e05fd"),
    ("--unit cvt --format fp4e2m1 --in-format float32 --rounding rod --no-subnormals "
     "--name my_cvt -o my_cvt.v"): (
        "3f911062c2c82826f5a59a1d31f677346c4a752de8ef59899b43d983bc803b27",
        "b6f5e5743803a5cf857617f2016a4d379f27f61a45f8c12344c0bbd6a93e8dcf",
        "2d5ba93d47378b4c1e31547d828f2986ff1979c8baa311cc2fd5cbfaa2368611"),
    "--unit mul --format e5m3 --saturate --stages 3 -o e5m3.v": (
        "b6d2017824523d95c8ab7a7441e7b00c59a670141ee089c8cdbcc4f2f1e5491c",
        "c1a379dae203d5a137b42780b0eea7ed2e46166b13c8ede0c5089ec968f270a3",
        "0ece24939263a1ee9aa2cb82c9b33554cf6a5f9fd55e4b2d7356ad7d122c1dd9"),
    "--unit add --format fp6e2m3 --in-format fp8e4m3 --rounding rdn -o addmix.v": (
        "528e9ffc134e22d4aba86920c9da77cfde46b160669c04120509895ae83d4d3f",
        "070ecada60f1c8f9d3a3f2bf61dfda18790bfb9eee484ca614d3d2eae737b943",
        "dc57c19af8dd64cc5b63fa8a54cb4f7e9dec5cfd5aab92036b58599885e751da"),
    "--unit mxq --format mxint8 --block 4 --scale-rule rceil -o qi.v": (
        "e40a341bafe62a08338286197dbefd82c0f4a2852eb3e0d6a796c214ec3f7c0e",
        "bc2c8ea780856a6355dda3093fb3f72a57def89bcaeae7a8f1190fda78d59c01",
        "98fb2016642c6360ad099e7b6bf68ece4a90fad73be5e725543c55d38cc9c8ae"),
}


@pytest.mark.parametrize("argv", AT_5F7D1C4)
def test_exports_are_byte_identical_to_5f7d1c4(argv, tmp_path):
    assert main(["verilog", *shlex.split(argv)[:-1], str(tmp_path / shlex.split(argv)[-1])]) == 0
    out = tmp_path / shlex.split(argv)[-1]
    got = tuple(hashlib.sha256(out.with_suffix(s).read_bytes()).hexdigest()
                for s in (".v", ".json", ".core"))
    assert got == AT_5F7D1C4[argv]
