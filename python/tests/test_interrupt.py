"""Ctrl-C during a fit: KeyboardInterrupt within an iteration, nothing left running."""

import signal
import subprocess
import sys
import time

# The child restores Python's own SIGINT handler: a process started in the background by a
# non-interactive shell inherits SIGINT ignored, and Python then installs none.
SCRIPT = r"""
import signal, sys, time, numpy as np, sgtsne
signal.signal(signal.SIGINT, signal.default_int_handler)
x = np.random.default_rng(0).normal(size=(3000, 20)).astype(np.float32)
def started(iteration, kl, y):
    print("started", flush=True)
try:
    sgtsne.TSNE(backend="cpu", n_jobs=2, max_iter=10**7, callbacks=started,
                callbacks_every_iters=5).fit(x)
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    sys.exit(3)
"""


def test_sigint_raises_keyboard_interrupt_and_ends_the_work():
    p = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "started"
    p.send_signal(signal.SIGINT)
    sent = time.perf_counter()
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 3, out
    assert "KeyboardInterrupt" in out
    # One iteration of 3000 points takes milliseconds: the process ended almost at once.
    assert time.perf_counter() - sent < 10
