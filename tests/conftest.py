"""Make the repository's own packages win over same-named test folders.

pytest puts ``tests/`` on sys.path for this file; ``tests/golden/`` (the golden model's tests)
would then shadow the real ``golden`` package as a namespace package. Putting the repository root
first makes ``import golden`` always the model.
"""

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parent.parent)
if sys.path[:1] != [ROOT]:
    sys.path.insert(0, ROOT)
