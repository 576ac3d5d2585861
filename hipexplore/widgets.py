"""A sweep panel for JupyterLab: pick device, kernel, sizes, rotating counts, flush modes and
iterations, press Run, watch the noise plots fill in, press Stop at any time.

Design notes (each one a failure seen elsewhere):
  * The sweep runs in a worker thread so the kernel stays free to receive the Stop click.
  * ipywidgets swallows exceptions raised in callbacks (it only logs "Exception in callback").
    So the handlers catch errors and show them in the panel; a bad input (``HipexploreError``)
    stops there, anything else is also re-raised so it reaches the log and fails a test that
    calls the handler directly. A failure inside the sweep is shown, kept in ``panel.error``,
    and re-raised by ``panel.wait()``.
  * Plots are rendered to PNG bytes and put into ``Image`` widgets: that works from a thread and
    outside a notebook (tests), unlike ``Output`` capture; while a run goes on, at most every ``REDRAW_GAP_S``.
  * Results stay with the panel: ``panel.samples`` and ``panel.summary`` are DataFrames of what
    arrived, also after Stop or an error.
  * Run is checked before anything starts, by the library's own rule: fewer iterations than the
    buffer sets a configuration gets (``bench.rotating.plan`` against the device's LLC and free
    memory, then ``check_iterations``, as ``bench.sweep`` does) disables Run and says why, with a
    button that fixes it; a click anyway shows the same ``ConfigError`` and starts nothing.
  * Only the flush modes the chosen device supports (``bench.flush.FlushMode.supported_by``) are offered: the
    AMD instruction-cache flushes are not listed for the host or an NVIDIA GPU.
"""

from __future__ import annotations

import contextlib
import html
import re
import threading
import time
import traceback
from typing import Any, Callable, Sequence

import pandas as pd

from .errors import ConfigError, HipexploreError


def parse_size(text: str | int) -> int:
    """``"16MiB"``, ``"512k"``, ``"1 GiB"`` or a plain byte count -> bytes (the sweep's parser)."""
    from .bench.sweep import parse_size as parse_one

    return parse_one(text)


def parse_sizes(text: str | Sequence[str | int]) -> list[int]:
    """``"256KiB, 1 MiB"`` (comma-separated) or a list of sizes -> byte counts."""
    items = [t.strip() for t in re.split(r"[,;]", text) if t.strip()] if isinstance(text, str) else list(text)
    if not items:
        raise ConfigError("sizes is empty; give at least one size such as '1MiB'")
    return [parse_size(t) for t in items]


def parse_rotating(text: str | Sequence[int | str]) -> list[int | str]:
    """``"1, 2, 4, auto"`` -> ``[1, 2, 4, "auto"]`` (auto: derived from the cache and buffer size)."""
    from .bench.rotating import parse_rotating as parse_one

    items = [t for t in re.split(r"[,\s]+", text) if t] if isinstance(text, str) else list(text)
    if not items:
        raise ConfigError("rotating is empty; give counts such as '1, 2, 4, auto'")
    return [parse_one(t) for t in items]


def _default_runner() -> Callable[..., Any]:
    from .bench.sweep import sweep

    return sweep


def _device_choices() -> list[str]:
    from .devices import KINDS

    return list(KINDS)


def _kernel_choices() -> list[str]:
    try:
        from .kernels import names

        # the streaming kernels; flush-* and spin are the harness's own helpers
        return [n for n in names() if not n.startswith(("gemm", "flush-")) and n != "spin"] or ["triad"]
    except Exception:
        return ["triad"]


def _flush_choices() -> tuple[str, ...]:
    from .bench.flush import FLUSH_MODES

    return FLUSH_MODES


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


def _resolution(text: str) -> float:
    """The resolution field: ``1%`` or ``0.01`` (``SweepSpec``'s own check, one line naming the value)."""
    from .bench.spec_checks import check_resolution

    return check_resolution(text.strip())


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


#: the live plots are redrawn at most this often (seconds), and the end of a run redraws them with everything
REDRAW_GAP_S = 1.0


class SweepPanel:
    """The sweep panel. Display it as the last expression of a cell; read ``samples``/``summary``
    afterwards. ``runner`` defaults to ``hipexplore.bench.sweep.sweep``."""

    def __init__(
        self,
        runner: Callable[..., Any] | None = None,
        device: str = "auto",
        kernel: str = "triad",
        sizes: str = "1MiB",
        rotating: str = "1, 2, 4, auto",
        flush: Sequence[str] = ("none", "l2-read"),
        iterations: int = 30,
        grid: str = "",
        block: str = "",
        shared_bytes: str = "",
        cluster: Any = None,
        resolution: str = "",
    ) -> None:
        import ipywidgets as w

        self._runner = runner
        # a Dask cluster (bench.cluster): a Client, a cluster object, 'local:N' or 'tcp://HOST:PORT',
        # connected once and kept, so its dashboard link holds and its workers stay warm
        self._cluster = None
        if cluster is not None:
            from .bench.cluster import connect

            self._cluster = connect(cluster)
        self._per_worker, self._seen = {}, {}  # configurations per worker (a cluster's panel)
        self._progress_hook = False
        devices = _device_choices()
        kernels = _kernel_choices()
        flushes = _flush_choices()
        style = {"description_width": "90px"}
        self.device = w.Dropdown(
            options=devices if device in devices else [device, *devices],
            value=device,
            description="device",
            style=style,
        )
        self.kernel = w.Dropdown(
            options=kernels if kernel in kernels else [kernel, *kernels],
            value=kernel,
            description="kernel",
            style=style,
        )
        self.sizes = w.Text(value=sizes, description="sizes", placeholder="1MiB, 16MiB", style=style)
        self.rotating = w.Text(value=rotating, description="rotating", placeholder="1, 2, 4, auto", style=style)
        self.flush = w.SelectMultiple(
            options=list(flushes),
            value=tuple(f for f in flush if f in flushes),
            description="flush",
            rows=min(5, len(flushes)),
            style=style,
        )
        self.iterations = w.BoundedIntText(
            value=iterations, min=1, max=1_000_000, description="iterations", style=style
        )
        # --resolution: extra units until each configuration's interval is this narrow (bench.units); empty: off
        self.resolution = w.Text(value=resolution, description="resolution", placeholder="off, or e.g. 1%", style=style)
        # launch geometry as expressions (kernels.geometry); empty keeps the kernel's own
        self.grid = w.Text(
            value=grid, description="grid", placeholder="kernel's own, e.g. cols/32,rows/32", style=style
        )
        self.block = w.Text(value=block, description="block", placeholder="e.g. 32,32", style=style)
        self.shared_bytes = w.Text(
            value=shared_bytes, description="shared bytes", placeholder="e.g. block_x*4", style=style
        )
        self._make_outputs(w, style)
        controls = w.VBox(
            [
                self.device,
                self.kernel,
                self.sizes,
                self.rotating,
                self.flush,
                self.flush_hint,
                self.iterations,
                self.resolution,
                w.HBox([self.sets_hint, self.fix_button]),
                self.grid,
                self.block,
                self.shared_bytes,
            ]
        )
        buttons = w.HBox([self.run_button, self.stop_button, self.progress, self.status])
        plots = w.HBox([self.noise_image, self.detail_image])
        self.widget = w.VBox(
            [controls, buttons, self.cluster_info, self.errors, self.placeholder, self.load_info, plots]
        )
        self._facts: dict[str, dict[str, Any] | None] = {}
        self._needed_sets = 0
        self._blocked = ""  # why Run is disabled ("" when it is not)
        self._asked_flush = tuple(flush)

        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._samples: list[pd.DataFrame] = []
        self._summary: list[pd.DataFrame] = []
        self._final: tuple[pd.DataFrame | None, pd.DataFrame | None] | None = None
        self._total, self._done, self._started, self._next_draw = 1, 0, 0.0, 0.0

        self.update_flush_choices()
        self.update_sets_hint()

    def _make_outputs(self, w: Any, style: dict[str, str]) -> None:
        """The panel's buttons, progress, hints, errors and plot images, with their callbacks."""
        self.run_button = w.Button(description="Run", button_style="success", icon="play")
        self.stop_button = w.Button(description="Stop", button_style="danger", icon="stop", disabled=True)
        self.progress = w.IntProgress(value=0, min=0, max=1, description="progress", style=style)
        self.status = w.Label(value="idle")
        self.errors = w.HTML(value="")
        self.errors.add_class("hx-errors")
        # hidden until they hold a plot: an empty Image widget shows a broken-image icon
        self.noise_image = w.Image(format="png", layout=w.Layout(max_width="48%", display="none"))
        self.detail_image = w.Image(format="png", layout=w.Layout(max_width="48%", display="none"))
        self.placeholder = w.HTML(
            value='<i style="color:#666">the noise and bias plots appear here as configurations finish</i>'
        )
        self.load_info = w.HTML(value="")  # the host's load beside the noise (bench.hostload), from the samples so far
        self.sets_hint = w.HTML(value="")  # what 'auto' resolves to, and whether iterations cover it
        self.flush_hint = w.HTML(value="")  # the flush modes this device cannot do (not offered)
        self.fix_button = w.Button(
            description="",
            button_style="warning",
            icon="wrench",
            layout=w.Layout(display="none", width="auto", min_width="200px"),
        )
        self.fix_button.on_click(self._on_fix_clicked)
        self.cluster_info = w.HTML(value=self._cluster_html())
        self.run_button.on_click(self._on_run_clicked)
        self.stop_button.on_click(self._on_stop_clicked)
        self.device.observe(lambda _change: self.update_flush_choices(), names="value")
        for control in (self.device, self.kernel, self.sizes, self.rotating, self.iterations):
            control.observe(lambda _change: self.update_sets_hint(), names="value")

    # -- what the chosen device is: its LLC, free memory and flush modes (opened once per name) ---
    def _device_facts(self, name: str) -> dict[str, Any] | None:
        """``{"llc", "free", "flush"}`` of device ``name``, or None when it cannot be opened (Run
        then reports why). Opened once per name and closed at once."""
        if name not in self._facts:
            from .bench.flush import supported_modes
            from .devices import get_device

            try:
                dev = get_device(name)
            except Exception:  # DeviceUnavailable, or a binding that cannot call its runtime
                self._facts[name] = None
                return None
            try:
                self._facts[name] = {
                    "llc": int(dev.llc_bytes),
                    "free": int(dev.memory_info()[0]),
                    "kind": str(dev.kind),
                    "flush": tuple(m.name for m in supported_modes(dev)),
                }
            finally:
                dev.close()
        return self._facts[name]

    def _device_llc(self, name: str) -> int:
        facts = self._device_facts(name)
        if facts is None:
            from .devices import get_device

            get_device(name)  # raises what makes it unavailable
        return facts["llc"]

    def update_flush_choices(self) -> None:
        """Offer the flush modes the chosen device supports; the selection keeps those it can do
        (an unsupported one asked for is named in ``flush_hint``). A device that cannot be opened
        keeps every mode: Run reports the device."""
        facts = self._device_facts(self.device.value)
        allowed = tuple(_flush_choices()) if facts is None else facts["flush"]
        wanted = tuple(dict.fromkeys([*self.flush.value, *self._asked_flush]))
        if tuple(self.flush.options) != allowed:
            self.flush.value = ()
            self.flush.options = list(allowed)
            self.flush.rows = min(5, max(1, len(allowed)))
        self.flush.value = tuple(f for f in wanted if f in allowed)
        self._asked_flush = ()
        left_out = [m for m in _flush_choices() if m not in allowed]
        if facts is not None and left_out:
            from .bench.flush import flush_mode

            why = (
                "AMD GPU instruction-cache flushes" if all(flush_mode(m).icache for m in left_out) else "not supported"
            )
            self.flush_hint.value = (
                f'<span style="color:#666">not on this {html.escape(facts["kind"])} device: '
                f"{', '.join(left_out)} ({why})</span>"
            )
        else:
            self.flush_hint.value = ""

    # -- the 'auto' count and the iterations check, shown before Run ---------------------------------
    def _plans(self) -> list[tuple[int, Any]]:
        """(size, rotating plan) for every size and rotating count, planned as ``bench.sweep``
        plans them: ``auto`` against the device's LLC, any count capped by its free memory."""
        from .bench import rotating as rot
        from .kernels import catalog

        spec = catalog.get(self.kernel.value)
        sizes = parse_sizes(self.sizes.value)
        counts = parse_rotating(self.rotating.value)
        facts = self._device_facts(self.device.value)
        out = []
        for size in sizes:
            n = spec.elements(size)
            for c in counts:
                if facts is None:  # unknown device: the count as asked (auto needs the LLC: raises)
                    llc = self._device_llc(self.device.value) if c == "auto" else 0
                    count = rot.auto_count(llc, spec.footprint(n)) if c == "auto" else int(c)
                    out.append(
                        (size, rot.RotatingPlan(str(c), count, spec.footprint(n), spec.set_bytes(n), llc, 0, False, ""))
                    )
                    continue
                out.append(
                    (
                        size,
                        rot.plan(
                            c,
                            footprint_bytes=spec.footprint(n),
                            set_bytes=spec.set_bytes(n),
                            llc_bytes=facts["llc"],
                            free_bytes=facts["free"],
                            mem_fraction=rot.DEFAULT_MEM_FRACTION,
                        ),
                    )
                )
        return out

    def resolved_sets(self) -> list[tuple[int, int]]:
        """(size, buffer sets) of each size for the largest rotating count asked for, ``auto``
        resolved against the device's last-level cache and every count planned against its free
        memory, as the sweep does; ConfigError for a bad field."""
        best: dict[int, int] = {}
        for size, p in self._plans():
            best[size] = max(best.get(size, 0), int(p.count))
        return list(best.items())

    def check_iterations(self) -> None:
        """The library's rule before Run: ``ConfigError`` (the sweep's own message) when the
        iterations are fewer than the buffer sets of some configuration."""
        from .bench import rotating as rot

        iterations = int(self.iterations.value)
        for _size, p in self._plans():
            rot.check_iterations(iterations, int(p.count))

    def update_sets_hint(self) -> None:
        """Show what ``auto`` resolves to as the inputs change, and offer the iterations fix when
        fewer iterations than buffer sets are asked for (each set must be timed at least once)."""
        from .readable import format_bytes

        self._needed_sets = 0
        self._blocked = ""
        self.fix_button.layout.display = "none"
        try:
            resolved = self.resolved_sets()
        except Exception:  # a half-typed field: Run reports it; the hint just stays quiet
            self.sets_hint.value = ""
            self._refresh_run_button()
            return
        parts = []
        if "auto" in parse_rotating(self.rotating.value):
            from .bench import rotating as rot
            from .kernels import catalog

            spec = catalog.get(self.kernel.value)
            llc = self._device_llc(self.device.value)
            autos = ", ".join(
                f"{format_bytes(sz)}: {rot.auto_count(llc, spec.footprint(spec.elements(sz)))}" for sz, _ in resolved
            )
            parts.append(f"auto = {autos} buffer sets (LLC {format_bytes(llc)})")
        capped = sorted({p.note for _, p in self._plans() if p.capped})
        parts.extend(html.escape(note) for note in capped)
        needed = max(sets for _, sets in resolved)
        iterations = int(self.iterations.value)
        if iterations < needed:
            self._needed_sets = needed
            self._blocked = f"iterations ({iterations}) < {needed} buffer sets"
            parts.append(
                f'<b style="color:#a60">iterations ({iterations}) &lt; {needed} buffer sets: every set must be timed '
                f"at least once; Run is disabled until iterations &gt;= {needed}</b>"
            )
            self.fix_button.description = f"set iterations to {needed}"
            self.fix_button.layout.display = ""
        self.sets_hint.value = "; ".join(parts)
        self._refresh_run_button()

    def _refresh_run_button(self, running: bool | None = None) -> None:
        """Run is disabled while a sweep runs and while the inputs break the iterations rule."""
        running = self.running if running is None else running
        self.run_button.disabled = bool(running or self._blocked)
        self.run_button.tooltip = self._blocked or ""

    def _on_fix_clicked(self, _button: Any = None) -> None:
        if self._needed_sets:
            self.iterations.value = max(int(self.iterations.value), self._needed_sets)

    # -- display ----------------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

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

    # -- parameters ---------------------------------------------------------------------------
    def params(self) -> dict[str, Any]:
        """The sweep arguments from the controls; ``ConfigError`` names a bad field."""
        flush = list(self.flush.value)
        if not flush:
            raise ConfigError("no flush mode selected; select at least one (e.g. 'none')")
        if self._device_facts(self.device.value) is not None:  # else Run reports the device itself
            self.check_iterations()
        return {
            "device": self.device.value,
            "kernels": self._kernel_with_geometry(),
            "sizes": parse_sizes(self.sizes.value),
            "rotating": parse_rotating(self.rotating.value),
            "flush": flush,
            "iterations": int(self.iterations.value),
            **({"resolution": _resolution(self.resolution.value)} if self.resolution.value.strip() else {}),
            **({"cluster": self._cluster.client} if self._cluster is not None else {}),
        }

    def _kernel_with_geometry(self) -> Any:
        """The selected kernel, or a copy launching with the panel's grid/block/shared-bytes
        expressions (``ConfigError`` naming a bad one); the copy keeps the kernel's name."""
        grid, block, shared = (self.grid.value.strip(), self.block.value.strip(), self.shared_bytes.value.strip())
        if not (grid or block or shared):
            return self.kernel.value
        import dataclasses

        from .kernels import catalog
        from .kernels.geometry import ExprGeometry

        spec = catalog.get(self.kernel.value)
        if not grid:
            raise ConfigError(
                "the sweep panel's grid is empty; give grid expressions (e.g. 'ceil(n/256)') with block/shared bytes"
            )
        scalars = [a.name for a in spec.args if a.kind == "scalar"]
        geometry = ExprGeometry(grid, block or "256", shared or "0", scalar_names=scalars)
        return dataclasses.replace(spec, geometry=geometry)

    def expected_results(self, params: dict[str, Any]) -> int:
        """Configurations the sweep reports: every (size, rotating, flush) plus one cold
        reference per size."""
        return len(params["sizes"]) * (len(params["rotating"]) * len(params["flush"]) + 1)

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
        if time.perf_counter() >= self._next_draw:  # live plots at most every REDRAW_GAP_S; the end draws all
            self._redraw()

    def _on_progress(self, state: Any) -> None:
        """The sweep's own count, per (configuration, unit), with the time left."""
        self._progress_hook = True
        self.progress.max, self.progress.value = max(1, state.total), min(state.done, max(1, state.total))
        self.status.value = f"running {state.text()}"

    def _redraw(self) -> None:
        """Re-render the plots from the summary rows so far: relative IQR and bias against the
        cold reference, every size measured so far (a line per flush mode and size)."""
        from . import plots

        summary, began = self.summary, time.perf_counter()
        if summary.empty:
            return
        kernel = summary["kernel"].iloc[-1]
        self._show_load(kernel)
        for image, draw in ((self.noise_image, plots.plot_iqr_vs_rotating), (self.detail_image, plots.plot_bias)):
            try:
                image.value = plots.figure_png(draw(summary, kernel=kernel, size_bytes="all"), dpi=80)
            except ConfigError:  # nothing to draw yet (only the cold reference has arrived)
                continue
            image.layout.display = ""
            self.placeholder.layout.display = "none"
            # drawing takes at most a third of the run: two PNGs per result cost more than a small configuration
            self._next_draw = time.perf_counter() + max(REDRAW_GAP_S, 2 * (time.perf_counter() - began))

    def _show_load(self, kernel: str) -> None:
        """The host's load so far and whether the spread tracks it (a cluster's workers' cores unknown)."""
        import os

        from .bench.hostload import load_summary

        found = load_summary(self.samples, None if self._cluster is not None else os.cpu_count(), kernel=kernel)
        self.load_info.value = "" if found is None else f'<span class="hx-load">{html.escape(found.answer())}</span>'

    def _cluster_html(self) -> str:
        if self._cluster is None:
            return ""
        from .bench.cluster import panel_html

        return panel_html(self._cluster.client, self._per_worker)

    def close(self) -> None:
        """Close the cluster connection the panel opened (a Client passed in stays open)."""
        if self._cluster is not None:
            self._cluster.close()

    def _show_error(self, exc: BaseException) -> None:
        if isinstance(exc, HipexploreError):
            text = f"<b>{type(exc).__name__}</b>: {html.escape(str(exc), quote=False)}"
        else:
            tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            text = f"<b>{type(exc).__name__}</b>: {html.escape(str(exc), quote=False)}<details><summary>traceback</summary><pre>{html.escape(tb)}</pre></details>"
        self.errors.value = f'<div style="color:#a00;border:1px solid #a00;padding:4px">{text}</div>'


__all__ = ["SweepPanel", "parse_rotating", "parse_size", "parse_sizes", "split_result"]
