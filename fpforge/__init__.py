"""fpforge: a hardware-numerics RTL generator and verifier.

Its parts, floor by floor: ``fpforge.infra`` (the executor, the tool lookup), ``fpforge.rtl``
(formats, specs, the units), ``fpforge.golden`` (the JAX golden model), ``fpforge.sim``
(verification), ``fpforge.synth`` (synthesis), ``fpforge.codesign`` (the Pareto and roofline
studies, the model workloads) and, on top, ``fpforge.cli`` (the command line). Installed, they are
this package's subpackages. In a checkout they are the repository's top-level folders (infra/,
rtl/, golden/, sim/, synth/, codesign/: the layout the project keeps), which this package reaches
by adding the repository root to its own path.
"""

from pathlib import Path

_HERE = Path(__file__).resolve().parent
_CHECKOUT = _HERE.parent
if not (_HERE / "rtl").is_dir() and (_CHECKOUT / "rtl" / "__init__.py").is_file():
    __path__.append(str(_CHECKOUT))   # noqa: F821 - a package's own __path__
