"""How the sweep panel runs a sweep (``widgets``' module docstring: each design note a failure seen
elsewhere): in a worker thread so the kernel stays free to receive the Stop click; every result kept
as it arrives, so Stop or an error loses nothing; a failure shown in the panel, kept in ``error`` and
re-raised by ``wait()``; the click handlers catching what ipywidgets would swallow.

``PanelRuns`` is mixed into ``widgets.SweepPanel``, which builds the buttons, progress and status
widgets it drives and gives it ``params()`` (the sweep's arguments) and ``_redraw()`` (the plots).
"""

from __future__ import annotations

import contextlib
import html
import threading
import time
import traceback
from typing import Any, Callable

import pandas as pd

from .errors import ConfigError, HipexploreError


def _default_runner() -> Callable[..., Any]:
    from .bench.sweep import sweep

    return sweep


def _as_frame(obj: Any) -> pd.DataFrame | None:
    if obj is None or isinstance(obj, pd.DataFrame):
        return obj
    if isinstance(obj, pd.Series):
        return obj.to_frame().T
    if isinstance(obj, dict):
        return pd.DataFrame([obj])
    if isinstance(obj, list):
        return pd.DataFrame(obj)
    raise TypeError(f"cannot turn a {type(obj).__name__} into a DataFrame")


def split_result(result: Any) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """(samples, summary) from what a sweep hands over: one summary row (a dict, what
    ``bench.sweep`` passes to ``on_result``), an object with ``samples`` and ``summary``
    attributes (its final ``SweepResult``), a ``(samples, summary)`` pair, or a dict with those keys."""
    if isinstance(result, tuple) and len(result) == 2:
        samples, summary = result
    elif isinstance(result, dict) and ("samples" in result or "summary" in result):
        samples, summary = result.get("samples"), result.get("summary")
    elif isinstance(result, dict):  # hipexplore.bench.sweep hands over one summary row
        samples, summary = None, result
    else:
        samples, summary = getattr(result, "samples", None), getattr(result, "summary", None)
    return _as_frame(samples), _as_frame(summary)


class PanelRuns:
    """Run, Stop and the worker of ``widgets.SweepPanel``, and the frames of what arrived."""

    def _init_runs(self) -> None:
        """No sweep yet: nothing arrived, nothing failed, Stop not asked."""
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._samples: list[pd.DataFrame] = []
        self._summary: list[pd.DataFrame] = []
        self._final: tuple[pd.DataFrame | None, pd.DataFrame | None] | None = None
        self._total, self._done, self._started, self._next_draw = 1, 0, 0.0, 0.0

    # -- results ------------------------------------------------------------------------------
    @property
    def samples(self) -> pd.DataFrame:
        """Every timed sample that arrived (the sweep's final frame once it finished)."""
        with self._lock:
            if self._final is not None and self._final[0] is not None:
                return self._final[0].copy()
            return pd.concat(self._samples, ignore_index=True) if self._samples else pd.DataFrame()

    @property
    def summary(self) -> pd.DataFrame:
        """One row per configuration that finished."""
        with self._lock:
            if self._final is not None and self._final[1] is not None:
                return self._final[1].copy()
            return pd.concat(self._summary, ignore_index=True) if self._summary else pd.DataFrame()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- handlers (called by the buttons; tests press them with Button.click()) ----------------------
    def _on_run_clicked(self, _button: Any = None) -> None:
        try:
            self.run(blocking=False)
        except HipexploreError as exc:
            self._show_error(exc)
        except Exception as exc:
            self._show_error(exc)
            raise

    def _on_stop_clicked(self, _button: Any = None) -> None:
        self.stop()

    # -- control ------------------------------------------------------------------------------
    def run(self, blocking: bool = False) -> None:
        """Start the sweep (in a thread unless ``blocking``). Bad parameters raise ``ConfigError``."""
        if self.running:
            raise ConfigError("a sweep is already running; press Stop or wait for it to finish")
        params = self.params()
        runner = self._runner or _default_runner()
        with self._lock:
            self._samples, self._summary, self._final = [], [], None
        self.error = None
        self.errors.value = ""
        self._stop.clear()
        self._total, self._done, self._next_draw = max(1, self.expected_results(params)), 0, 0.0
        self._per_worker, self._seen = {}, {}
        self._progress_hook = False
        self._started = time.perf_counter()
        self.progress.max, self.progress.value, self.progress.bar_style = self._total, 0, ""
        self.status.value = f"running 0/{self._total}"
        self.run_button.disabled, self.stop_button.disabled = True, False
        if blocking:
            self._work(runner, params)
            self.wait()
        else:
            self._thread = threading.Thread(
                target=self._work, args=(runner, params), name="hipexplore-sweep", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        """Ask the sweep to stop after the configuration it is measuring."""
        self._stop.set()
        if self.running:
            self.status.value = "stopping after the current configuration…"

    def wait(self, timeout: float | None = None) -> None:
        """Block until the sweep ends; re-raise its error, if any."""
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise TimeoutError(f"sweep still running after {timeout} s")
        if self.error is not None:
            raise self.error

    # -- the worker -----------------------------------------------------------------------------
    def _work(self, runner: Callable[..., Any], params: dict[str, Any]) -> None:
        device = None
        try:
            if self._runner is None and self._cluster is not None:
                params["progress"] = False  # each worker opens its device by name
            elif self._runner is None:  # the real sweep: open the device here, close it afterwards
                from .devices import get_device

                device = params["device"] = get_device(params["device"])
                params["progress"] = False  # the panel has its own bar
            if self._runner is None:  # the real sweep: its progress is per (configuration, unit), with the time left
                params["on_progress"] = self._on_progress
            final = runner(
                **params, on_result=self._on_result, on_samples=self._on_samples, should_stop=self._stop.is_set
            )
            samples, summary = split_result(final) if final is not None else (None, None)
            with self._lock:
                self._final = (samples, summary)
            self._redraw()
            word = "stopped" if self._stop.is_set() else "done"
            n = len(self.summary)
            self.status.value = f"{word}: {n} configurations in {time.perf_counter() - self._started:.1f} s"
            self.progress.bar_style = "warning" if self._stop.is_set() else "success"
        except BaseException as exc:  # shown in the panel and kept; wait() re-raises it
            self.error = exc
            self._show_error(exc)
            with contextlib.suppress(Exception):  # what arrived since the last live redraw; the sweep's error is shown
                self._redraw()
            self.progress.bar_style = "danger"
            self.status.value = f"failed after {len(self.summary)} configurations"
        finally:
            if device is not None:
                device.close()
            self.stop_button.disabled = True
            self._refresh_run_button(running=False)

    def _on_samples(self, samples: Any) -> None:
        """The finished configuration's samples, kept so that Stop or an error loses nothing."""
        with self._lock:
            self._samples.append(samples)

    def _on_result(self, result: Any) -> None:
        """Called by the sweep for each finished configuration."""
        samples, summary = split_result(result)
        with self._lock:
            if samples is not None:
                self._samples.append(samples)
            if summary is not None:
                self._summary.append(summary)
        self._done += 1
        if isinstance(result, dict) and result.get("worker"):  # configurations per worker (a row per unit of each)
            from .schema import Configuration

            self._seen.setdefault(str(result["worker"]), set()).add(Configuration.of(result))
            self._per_worker = {w: len(cs) for w, cs in self._seen.items()}
            self.cluster_info.value = self._cluster_html()
        if not self._progress_hook:
            self.progress.value = min(self._done, self.progress.max)
            self.status.value = f"running {self._done}/{self._total} ({time.perf_counter() - self._started:.1f} s)"
        if time.perf_counter() >= self._next_draw:  # live plots at most every widgets.REDRAW_GAP_S; the end draws all
            self._redraw()

    def _on_progress(self, state: Any) -> None:
        """The sweep's own count, per (configuration, unit), with the time left."""
        self._progress_hook = True
        self.progress.max, self.progress.value = max(1, state.total), min(state.done, max(1, state.total))
        self.status.value = f"running {state.text()}"

    def _show_error(self, exc: BaseException) -> None:
        if isinstance(exc, HipexploreError):
            text = f"<b>{type(exc).__name__}</b>: {html.escape(str(exc), quote=False)}"
        else:
            tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            text = f"<b>{type(exc).__name__}</b>: {html.escape(str(exc), quote=False)}<details><summary>traceback</summary><pre>{html.escape(tb)}</pre></details>"
        self.errors.value = f'<div style="color:#a00;border:1px solid #a00;padding:4px">{text}</div>'


__all__ = ["PanelRuns", "split_result"]
