"""What every entry point shares: threads, the GPU's libraries, messages."""

from __future__ import annotations

import os
import sys
import warnings
from numbers import Integral

from . import _cuda


def threads(n_jobs) -> int | None:
    """scikit-learn's ``n_jobs`` as a thread count: ``None`` or ``-1`` every core (as the
    CLI), ``-2`` all but one, a positive number that many."""
    if n_jobs is None:
        return None
    if not isinstance(n_jobs, Integral) or n_jobs == 0:
        raise ValueError(f"invalid parameter `n_jobs`: {n_jobs!r} (None, -1 or a positive count)")
    if n_jobs < 0:
        return max(1, (os.cpu_count() or 1) + 1 + int(n_jobs))
    return int(n_jobs)


def ready_for(backend: str) -> None:
    """Loads the CUDA libraries of NVIDIA's pip wheels before a call that may use the GPU."""
    if backend != "cpu":
        _cuda.preload()


def say(message: str) -> None:
    """A progress line of ``verbose`` runs, on ``sys.stderr`` (a notebook cell's output)."""
    print(f"[sgtsne] {message}", file=sys.stderr, flush=True)


def warn(message: str) -> None:
    """Something about the data the user should know (many duplicates, …)."""
    warnings.warn(message, UserWarning, stacklevel=4)


def seed(random_state) -> int:
    """scikit-learn's ``random_state`` as the engine's seed: ``None`` is 0, the CLI's
    default, so that runs repeat; a ``RandomState`` or ``Generator`` gives its next draw."""
    if random_state is None:
        return 0
    if isinstance(random_state, Integral):
        if random_state < 0:
            raise ValueError(f"invalid parameter `random_state`: {random_state} (must be ≥ 0)")
        return int(random_state)
    integers = getattr(random_state, "randint", None) or getattr(random_state, "integers", None)
    if integers is None:
        raise ValueError(f"invalid parameter `random_state`: {random_state!r}")
    return int(integers(0, 2**31 - 1))
