"""The second nbval run (``make nbval-generic``) really runs other CPU kernels.

That run sets the variables printed by ``tools/generic_kernels.py`` and collects this file beside
the chapters, with ``PE_BOOK_GENERIC_KERNELS=1``. The notebook kernels inherit the environment of
this process, so what holds here holds in them: torch reports its baseline capability and numpy
dispatches to no SIMD extension beyond its compiled baseline. If either variable stopped taking
effect (a renamed variable, a numpy that reads another), the run would silently repeat the first
one; this test fails instead.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.generic_kernels

IN_GENERIC_RUN = os.environ.get("PE_BOOK_GENERIC_KERNELS") == "1"


@pytest.mark.skipif(not IN_GENERIC_RUN, reason="only inside `make nbval-generic`")
def test_torch_runs_its_baseline_kernels() -> None:
    assert os.environ.get("ATEN_CPU_CAPABILITY") == "default"
    assert torch.backends.cpu.get_cpu_capability() == "DEFAULT"


@pytest.mark.skipif(not IN_GENERIC_RUN, reason="only inside `make nbval-generic`")
def test_numpy_dispatches_to_no_simd_extension() -> None:
    umath = np._core._multiarray_umath
    active = [name for name in umath.__cpu_dispatch__ if umath.__cpu_features__.get(name)]
    assert active == [], f"numpy still dispatches to {active}"
