"""Shared set-up for the pe_lib tests: a headless matplotlib backend and modest hypothesis
budgets. Reference implementations live in ``pe_reference.py``."""

from __future__ import annotations

import matplotlib
import pytest
import torch
from hypothesis import HealthCheck, settings

matplotlib.use("Agg")  # before pyplot is imported anywhere: no display, no windows

import matplotlib.pyplot as plt  # noqa: E402

# Property tests run a few dozen examples each, so the whole suite stays well under a minute.
settings.register_profile(
    "pe_lib",
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("pe_lib")


@pytest.fixture(autouse=True)
def _close_figures():
    """Every test starts and ends without open figures."""
    yield
    plt.close("all")


@pytest.fixture
def one_thread_and_seed():
    """One intra-op thread and seed 0 for the test (trainings whose results a test reads);
    the thread count is restored after it. Modules opt in with
    ``pytestmark = pytest.mark.usefixtures("one_thread_and_seed")``."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    yield
    torch.set_num_threads(threads)
