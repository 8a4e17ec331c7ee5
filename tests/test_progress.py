"""progress.stop_on_sigterm: SIGTERM ends a command as Ctrl-C does; one request sent twice (``timeout`` signals
its child and then the child's group) is one interrupt, a later second one kills."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from miaudit import progress


@pytest.fixture
def default_sigterm() -> object:
    before = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    signal.signal(signal.SIGTERM, before)


def test_sigterm_raises_terminated_and_a_repeat_within_the_window_is_ignored(default_sigterm: object) -> None:
    progress.stop_on_sigterm()
    with pytest.raises(progress.Terminated):
        os.kill(os.getpid(), signal.SIGTERM)
    os.kill(os.getpid(), signal.SIGTERM)  # the same request's second signal: ignored, this process lives on
    assert isinstance(progress.Terminated("x"), KeyboardInterrupt)


def test_a_second_sigterm_after_the_window_kills() -> None:
    code = (
        "import os, signal, time\n"
        "from miaudit import progress\n"
        "progress.REPEAT_WINDOW = 0.0\n"
        "progress.stop_on_sigterm()\n"
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGTERM); time.sleep(1)\n"
        "except progress.Terminated:\n"
        "    print('terminated', flush=True)\n"
        "time.sleep(0.01)\n"
        "os.kill(os.getpid(), signal.SIGTERM); time.sleep(1)\n"
        "print('survived')\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.stdout.split() == ["terminated"] and run.returncode == -signal.SIGTERM
