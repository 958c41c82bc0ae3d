"""What a training run shows on the console and what it keeps in its log file.

``python -m genenv.train`` opens one :class:`RunDisplay`: a progress bar over the run's epochs whose text names the
step in progress (``agent GRPO 3/8``), with one :func:`epoch_line` printed as each epoch ends. The library's
own progress bars (:func:`progress`) and the trainers' step counts (:func:`step_log_callback`) report into that
display while it is open, and are ordinary ``tqdm`` bars otherwise. :func:`quiet_console` keeps the console to
warnings and errors and sends the rest (INFO logs, TRL's and transformers' per-step log dicts, third-party
deprecation notices) to the log file's handler, after printing, as the job's first line, how long the job takes where
genenv has measured it (:data:`MEASURED_JOBS`).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from tqdm import tqdm

#: Each epoch's :func:`epoch_line`, logged at INFO by the trainer's main process.
EPOCHS = logging.getLogger("genenv.epochs")
#: TRL's and transformers' per-step log dicts (:func:`step_log_callback`), logged at INFO.
STEPS = logging.getLogger("genenv.steps")
#: Warnings of these categories raised outside genenv go to the log file only (:func:`quiet_console`).
QUIET_WARNINGS: tuple[type[Warning], ...] = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)
#: Third-party warning classes that are notices, not problems, by name (TRL's ``trl.experimental`` import notice).
QUIET_WARNING_NAMES = frozenset({"TRLExperimentalWarning"})

_PACKAGE = str(Path(__file__).resolve().parent) + os.sep

#: How long jobs genenv has timed take, by their command-line overrides (``run_dir=`` and ``data_root=`` aside, which
#: change nothing of the work): the main job of README command 1 on 2 idle cores, its first run on a machine (empty
#: genenv cache), as performance/first_contact.sh measured it (results/learning_curves/main_job/first_contact.json,
#: ``job_s``).
MEASURED_JOBS: dict[tuple[str, ...], str] = {
    ("+bench=reasoning_gym",): "about 5 minutes on 2 idle cores, up to 7 on a slower host (the main job of "
    "README command 1: results/learning_curves/main_job/first_contact.json); longer while other jobs share the cores",
}
#: Overrides that leave a job's work unchanged.
_NEUTRAL_OVERRIDES = ("run_dir=", "data_root=")

_display: RunDisplay | None = None


def epoch_line(metrics: dict[str, Any]) -> str:
    """One epoch in one line: p_hat, the fresh tasks inside the band, the agent's mean reward, the held-out score."""

    def number(value: Any) -> str:
        return "-" if value is None else f"{value:.3f}"

    return (
        f"epoch {metrics['epoch']}: p_hat={number(metrics.get('p_hat'))} "
        f"in band={metrics.get('in_band', 0)}/{len(metrics.get('p_hat_per_task', []))} "
        f"agent reward={number(metrics.get('agent', {}).get('reward'))} "
        f"held-out={number(metrics.get('validation', {}).get('score'))} ({metrics.get('seconds', 0.0):.0f} s)"
    )


class _Stage:
    """A step's count shown in the open :class:`RunDisplay` instead of a bar of its own (the part of ``tqdm``'s
    interface genenv uses: iteration, ``update``, ``set_postfix``, ``close``)."""

    def __init__(self, display: RunDisplay, iterable: Iterable[Any] | None, total: int | None, initial: int, desc: str):
        self.display, self.iterable, self.total, self.n, self.desc = display, iterable, total, initial, desc
        self.postfix = ""
        display.stages.append(self)
        display.show(force=True)

    def __iter__(self) -> Iterator[Any]:
        try:
            for item in self.iterable or ():
                yield item
                self.update()
        finally:
            self.close()

    def update(self, n: int = 1) -> None:
        self.n += n
        self.display.show()

    def set_postfix(self, **values: Any) -> None:
        self.postfix = ", ".join(f"{key}={value}" for key, value in values.items())
        self.display.show()

    def close(self) -> None:
        if self in self.display.stages:
            self.display.stages.remove(self)
            self.display.show(force=True)

    def text(self) -> str:
        count = f"{self.n}/{self.total}" if self.total is not None else str(self.n)
        return " ".join(part for part in (self.desc, count, self.postfix) if part)


def progress(
    iterable: Iterable[Any] | None = None,
    *,
    total: int | None = None,
    initial: int = 0,
    desc: str = "",
    unit: str = "it",
    leave: bool = True,
    disable: bool = False,
) -> Any:
    """A progress bar for one step of a run: a ``tqdm`` bar, or, while a :class:`RunDisplay` is open, a count that
    the display shows."""
    if _display is None or disable:
        return tqdm(iterable, total=total, initial=initial, desc=desc, unit=unit, leave=leave, disable=disable)
    if total is None and iterable is not None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    return _Stage(_display, iterable, total, initial, desc)


class _EpochHandler(logging.Handler):
    """Prints each epoch line above the display's bar and advances the bar."""

    def __init__(self, display: RunDisplay) -> None:
        super().__init__(logging.INFO)
        self.display = display

    def emit(self, record: logging.LogRecord) -> None:
        self.display.write(record.getMessage())
        self.display.bar.update(1)


class RunDisplay:
    """The one progress display of a training run (a context manager): a bar over the epochs, the step in progress
    as its text, each epoch's line printed above it. Closed, or with ``enabled=False`` (processes other than the
    main one), it shows nothing."""

    def __init__(self, epochs: int, *, start_epoch: int = 0, enabled: bool = True) -> None:
        self.epochs, self.start_epoch, self.enabled = epochs, start_epoch, enabled
        self.stages: list[_Stage] = []
        self.bar: Any = None
        self._shown = 0.0
        self._handler = _EpochHandler(self)
        self._level = EPOCHS.level

    def __enter__(self) -> RunDisplay:
        global _display
        if not self.enabled:
            return self
        self.bar = tqdm(
            total=self.epochs,
            initial=self.start_epoch,
            desc="co-evolution",
            unit="epoch",
            file=sys.stderr,
            dynamic_ncols=True,
            bar_format="{desc} {n_fmt}/{total_fmt} epochs |{bar}| {elapsed}{postfix}",
        )
        EPOCHS.addHandler(self._handler)
        EPOCHS.setLevel(logging.INFO)
        _display = self
        return self

    def __exit__(self, *exc: object) -> None:
        global _display
        if self.bar is None:
            return
        _display = None
        EPOCHS.removeHandler(self._handler)
        EPOCHS.setLevel(self._level)
        self.bar.set_postfix_str("", refresh=False)
        self.bar.close()
        self.bar = None

    def show(self, *, force: bool = False) -> None:
        """Show the innermost open step as the bar's text: at once with ``force`` (a step opened or closed), else
        at most every ``mininterval`` seconds."""
        if self.bar is None:
            return
        self.bar.set_postfix_str(self.stages[-1].text() if self.stages else "", refresh=False)
        if force or time.monotonic() - self._shown >= self.bar.mininterval:
            self._shown = time.monotonic()
            self.bar.refresh()

    def write(self, line: str) -> None:
        """Print ``line`` to stdout above the bar."""
        tqdm.write(line, file=sys.stdout)


def step_log_callback(name: str) -> Any:
    """A transformers ``TrainerCallback`` that logs each of the trainer's log dicts to :data:`STEPS` (``name step
    N: {...}``) and counts its optimizer steps in the open :class:`RunDisplay`; on the main process only."""
    from transformers import TrainerCallback

    class StepLog(TrainerCallback):
        def __init__(self) -> None:
            self.stage: Any = None

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.is_world_process_zero and _display is not None:
                self.stage = progress(total=state.max_steps, desc=name)

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if self.stage is not None:
                self.stage.update()

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if self.stage is not None:
                self.stage.close()
                self.stage = None

        def on_log(
            self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any
        ) -> None:
            if state.is_world_process_zero and logs:
                STEPS.info("%s step %d: %s", name, state.global_step, json.dumps(logs, default=str))

    return StepLog()


class _ConsoleHandler(logging.StreamHandler):
    """A console handler that writes above an open progress bar instead of through it."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            tqdm.write(self.format(record), file=self.stream)
        except Exception:  # noqa: BLE001 - logging must never raise
            self.handleError(record)


def _log_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: IO[str] | None = None,
    line: str | None = None,
) -> None:
    """``warnings.showwarning`` for the command line: every warning goes to the ``py.warnings`` logger, third-party
    deprecation notices at INFO (the log file), the rest at WARNING (the console too)."""
    quiet = issubclass(category, QUIET_WARNINGS) or category.__name__ in QUIET_WARNING_NAMES
    third_party = not os.path.realpath(filename).startswith(_PACKAGE)
    level = logging.INFO if quiet and third_party else logging.WARNING
    text = warnings.formatwarning(message, category, filename, lineno, line).rstrip()
    logging.getLogger("py.warnings").log(level, text)


def measured_duration(overrides: list[str]) -> str | None:
    """How long the job of these Hydra command-line overrides takes, where :data:`MEASURED_JOBS` holds it."""
    kept = tuple(sorted(o for o in overrides if not o.startswith(_NEUTRAL_OVERRIDES)))
    return MEASURED_JOBS.get(kept)


def _hydra_overrides() -> list[str] | None:
    """The running Hydra job's command-line overrides (``None`` outside a Hydra job or for another config than
    ``config``)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    hydra_config = HydraConfig.get()
    return list(hydra_config.overrides.task) if hydra_config.job.config_name == "config" else None


def quiet_console(level: int = logging.WARNING) -> None:
    """Keep the console to records at ``level`` and above, written above any progress bar; INFO records (the
    trainers' step logs included) still reach the root logger's file handlers (Hydra's ``<run_dir>/train.log``).
    Python warnings go through logging, third-party deprecation notices to the log file only. Call it once, from a
    command-line entry point, after Hydra has configured logging. A job whose duration genenv has measured
    (:func:`measured_duration`) first prints it, on the main process."""
    overrides = _hydra_overrides()
    duration = measured_duration(overrides) if overrides is not None else None
    if duration and os.environ.get("RANK", "0") == "0":
        print(f"this job takes {duration}", flush=True)
    root = logging.getLogger()
    for handler in list(root.handlers):
        if type(handler) is logging.StreamHandler:  # the console; file handlers are StreamHandler subclasses
            console = _ConsoleHandler(handler.stream)
            console.setFormatter(handler.formatter)
            console.setLevel(max(level, handler.level))
            root.removeHandler(handler)
            root.addHandler(console)
    warnings.showwarning = _log_warning
    import transformers

    transformers.utils.logging.disable_default_handler()  # transformers' records go through the root handlers
    transformers.utils.logging.enable_propagation()
    transformers.utils.logging.disable_progress_bar()
