"""Print the environment that makes torch and numpy run their generic CPU kernels.

``make binder-test`` re-executes the chapters under it, so a stored output that depends on the
SIMD kernels of the machine that executed it fails there too, not only on someone else's CPU:

- ``ATEN_CPU_CAPABILITY=default``: torch's ATen dispatches to its baseline kernels instead of
  the AVX2 / AVX-512 ones;
- ``NPY_DISABLE_CPU_FEATURES=...``: numpy's runtime dispatch skips every SIMD extension it would
  use on this CPU. numpy rejects names it does not dispatch to, and a machine may lack some, so
  the list is read from this numpy on this machine rather than written down.

``tests/book/test_binder_env.py`` checks, with the kernels' interpreter, that both take effect.
"""

from __future__ import annotations

import numpy as np


def dispatched_numpy_features() -> list[str]:
    """The SIMD extensions numpy's runtime dispatch would use on this CPU."""
    umath = np._core._multiarray_umath
    return [name for name in umath.__cpu_dispatch__ if umath.__cpu_features__.get(name)]


if __name__ == "__main__":
    print(
        f"ATEN_CPU_CAPABILITY=default NPY_DISABLE_CPU_FEATURES={','.join(dispatched_numpy_features())}"
    )
