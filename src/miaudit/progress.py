"""What a run tells its user while it works.

In a terminal: one live display over the models a run obtains (how many, trained or loaded from the
cache, the time left estimated from the training times measured so far) and the current model's
epochs. Outside a terminal (CI, nohup, tee): no display; one ``logging`` line per finished model and
per attack, on the ``miaudit`` logger, which the command line sends to stderr (``--quiet``: warnings
only; ``--verbose``: debug lines too). A library user's logging configuration decides otherwise.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

log = logging.getLogger("miaudit")
console = Console(stderr=True)


def configure_logging(level: int = logging.INFO) -> None:
    """miaudit's log records to stderr at ``level``: above the live display in a terminal, plain lines elsewhere."""
    if console.is_terminal:
        from rich.logging import RichHandler

        handler: logging.Handler = RichHandler(console=console, show_time=False, show_level=False, show_path=False)
    else:
        handler = _StderrHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    log.handlers[:] = [handler]
    log.setLevel(level)
    # Records stop at this handler: laplace-torch calls logging.info() when imported, which runs
    # logging.basicConfig() and gives the root logger a handler, so a propagated record printed twice.
    log.propagate = False


class _StderrHandler(logging.StreamHandler):
    """Writes to the current ``sys.stderr`` (which test runners replace), not the one it was created with."""

    stream = property(lambda self: sys.stderr, lambda self, value: None)


def showing() -> bool:
    """Whether to draw live displays: in a terminal, unless the log level was raised above INFO (--quiet)."""
    return console.is_terminal and log.level <= logging.INFO


@contextlib.contextmanager
def working(what: str) -> Iterator[None]:
    """A transient spinner in a terminal while ``what`` runs."""
    with console.status(what) if showing() else contextlib.nullcontext():
        yield


class Terminated(KeyboardInterrupt):
    """SIGTERM (a supervisor, systemctl, a job scheduler, ``timeout``), raised in the main thread: a
    KeyboardInterrupt, so every path that handles Ctrl-C handles it too (training workers stopped, the models
    trained kept in the cache, one line, no output folder left)."""


def stop_on_sigterm() -> None:
    """From now on SIGTERM raises ``Terminated`` in this (the main) thread, once; a second SIGTERM kills at once,
    unless it comes within ``REPEAT_WINDOW`` seconds of the first (``timeout`` signals its child and then the
    child's process group: one request, two signals). Left alone where a handler is already set (an embedding
    program's own) or off the main thread."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminated)


REPEAT_WINDOW = 2.0  # seconds within which a second SIGTERM is the same request


def _terminated(signum: int, frame: object) -> None:
    first = time.monotonic()

    def again(signum: int, frame: object) -> None:
        if time.monotonic() - first > REPEAT_WINDOW:  # a second request: stop at once, as the default would
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, again)
    raise Terminated(f"signal {signum}")


# Models this process trained (and the store kept): what an interrupted run says it kept (``interrupted``).
SESSION = {"trained": 0, "answers": 0}  # answers: an endpoint's, kept in the answer store


def interrupted(cache: object | None, out: object | None) -> str:
    """The one line an interrupted command ends with: what it kept in the ``cache`` (None: a command that
    trains no model), what it did not write into ``out`` (None: a command that writes nothing)."""
    kept = SESSION["trained"]
    said = []
    if cache is not None:
        said.append(
            f"{kept} model(s) trained by this run are kept in the cache {cache}; a rerun loads them"
            if kept
            else "no model finished training in this run"
        )
    if SESSION["answers"]:
        said.append(
            f"{SESSION['answers']} endpoint answer(s) received by this run are kept in the answer store; a rerun "
            "does not ask for them again"
        )
    if out is not None:
        said.append(f"nothing was written to {out}")
    why = "terminated (SIGTERM)" if isinstance(sys.exc_info()[1], Terminated) else "interrupted"
    return f"{why}: " + "; ".join(said or ["nothing was written"])


class ModelProgress:
    """Progress over the ``total`` models of one run; a context manager, re-entrant."""

    def __init__(self, total: int):
        self.total, self.trained, self.cached = total, 0, 0
        self.expected_cached = 0  # models still to obtain that the store holds (``expect_cached``)
        self.train_seconds: list[float] = []
        self.started = 0.0  # when the current model (or stack of models) began training
        self.first_started: float | None = None  # when the first model began training: models per minute
        self.epoch_share = 0.0  # how much of the current model is done
        self.depth = 0
        self.live = (
            Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[note]}"),
                console=console,
                transient=True,
            )
            if showing() and total
            else None
        )
        self.overall: TaskID | None = None
        self.current: TaskID | None = None  # the epochs of the model in training

    def __enter__(self) -> ModelProgress:
        if self.depth == 0 and self.live is not None:
            self.live.start()
            self.overall = self.live.add_task("models", total=self.total, note="")
        self.depth += 1
        return self

    def __exit__(self, *_: object) -> None:
        self.depth -= 1
        if self.depth == 0 and self.live is not None:
            self.live.stop()

    def expect_cached(self, models: int) -> None:
        """``models`` of those still to obtain are in the cache: no training time is counted for them."""
        self.expected_cached += int(models)

    def training(self, role: str, epochs: int | None) -> Callable[[int, int], None]:
        """Starts one model's training; returns the callback its epochs report to, (done, total)."""
        self.started, self.epoch_share = time.perf_counter(), 0.0
        if self.first_started is None:
            self.first_started = self.started
        if self.live is not None:
            self.current = self.live.add_task(f"  {role}", total=epochs, note="")

        def epoch(done: int, total: int) -> None:
            self.epoch_share = done / total if total else 0.0
            if self.live is not None and self.current is not None:
                self.live.update(self.current, completed=done)
                self._refresh()

        return epoch

    def in_workers(self, workers: int) -> None:
        """Models start training now in ``workers`` worker processes (their epochs are not shown here)."""
        self.started = time.perf_counter()
        if self.first_started is None:
            self.first_started = self.started
        log.info("training in %d worker processes, one torch thread each (train.models_at_once: auto)", workers)

    def finished(
        self, role: str, seconds: float, cached: bool, together: int = 1, workers: int = 1, say: bool = True
    ) -> None:
        """One model obtained: counted, shown and logged (with the models done, the time left and the models
        trained per minute). ``together``: the model trained in a stack of that many (``seconds``: its share);
        ``workers``: in one of that many worker processes training at once (``seconds``: its own); ``say``:
        False counts it without a line (a stack of many models logs its last one only)."""
        if cached:
            self.cached += 1
            self.expected_cached = max(self.expected_cached - 1, 0)
        else:
            self.trained += 1
            SESSION["trained"] += 1
            self.train_seconds.append(seconds / workers)  # the wall time it takes of the run
        self.epoch_share = 0.0
        done, left = self.trained + self.cached, self.seconds_left()
        note = ""
        if self.total > 1:
            time_left = f", about {left:.0f} s of training left" if left and done < self.total else ""
            note = f" [{done}/{self.total} models{time_left}]"
        what = f"loaded from cache (trained in {seconds:.1f} s before)" if cached else f"trained in {seconds:.1f} s"
        if not cached and together > 1:
            what = f"trained in {seconds:.1f} s (its share of {together} models trained together)"
        if not cached and workers > 1:
            what = f"trained in {seconds:.1f} s in a worker process ({workers} at once)"
        rate = self.models_per_minute()
        if not cached and rate is not None:
            note += f" {rate:.1f} models/min"
        if say:
            log.info("%s: %s%s", role, what, note)
        if self.live is not None and self.current is not None:
            self.live.remove_task(self.current)
            self.current = None
        self._refresh()

    def models_per_minute(self) -> float | None:
        """Models trained per minute of wall time since the first began training (stacks included)."""
        if self.first_started is None or not self.trained:
            return None
        return 60.0 * self.trained / max(time.perf_counter() - self.first_started, 1e-9)

    def seconds_left(self) -> float | None:
        """Models still to train (those expected in the cache aside) times the mean measured training time
        (from the current model's epochs before one has finished), less what the current model has done; None
        before any measurement."""
        if self.train_seconds:
            per_model = sum(self.train_seconds) / len(self.train_seconds)
        elif self.epoch_share > 0:
            per_model = (time.perf_counter() - self.started) / self.epoch_share
        else:
            return None
        to_train = self.total - self.trained - self.cached - self.expected_cached
        return max(per_model * (to_train - self.epoch_share), 0.0)

    def _refresh(self) -> None:
        if self.live is None or self.overall is None:
            return
        left = self.seconds_left()
        rate = self.models_per_minute()
        note = f"{self.trained} trained, {self.cached} cached" + (f", {rate:.1f} models/min" if rate else "")
        note += f", about {left:.0f} s left" if left else ""
        self.live.update(self.overall, completed=self.trained + self.cached, note=note)
