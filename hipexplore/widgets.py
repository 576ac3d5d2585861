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

The panel's jobs by module: the text fields read as sweep arguments in ``panel_fields``, the checks
before Run in ``panel_checks``, running the sweep in ``panel_runs``; this module builds the widgets
and draws the live plots.
"""

from __future__ import annotations

import html
import time
from typing import Any, Callable, Sequence

from .errors import ConfigError
from .panel_checks import PanelChecks
from .panel_fields import _device_choices, _flush_choices, _kernel_choices, _resolution

# Re-exported: notebooks, the docs and users import these from ``hipexplore.widgets``, where they
# were defined before the panel was split by job.
from .panel_fields import parse_rotating, parse_size, parse_sizes
from .panel_runs import PanelRuns, split_result

#: the live plots are redrawn at most this often (seconds), and the end of a run redraws them with everything
REDRAW_GAP_S = 1.0


class SweepPanel(PanelChecks, PanelRuns):
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
        style = {"description_width": "90px"}
        self._make_controls(
            w,
            style,
            device=device,
            kernel=kernel,
            sizes=sizes,
            rotating=rotating,
            flush=flush,
            iterations=iterations,
            resolution=resolution,
            grid=grid,
            block=block,
            shared_bytes=shared_bytes,
        )
        self._make_outputs(w, style)
        self.widget = self._layout(w)
        self._init_checks(flush)
        self._init_runs()
        self.update_flush_choices()
        self.update_sets_hint()

    def _make_controls(self, w: Any, style: dict[str, str], **values: Any) -> None:
        """The panel's inputs: device, kernel, sizes, rotating, flush, iterations, resolution and the
        launch geometry, each holding its value from ``SweepPanel(...)``."""
        device, kernel, flush = values["device"], values["kernel"], values["flush"]
        devices = _device_choices()
        kernels = _kernel_choices()
        flushes = _flush_choices()
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
        self.sizes = w.Text(value=values["sizes"], description="sizes", placeholder="1MiB, 16MiB", style=style)
        self.rotating = w.Text(
            value=values["rotating"], description="rotating", placeholder="1, 2, 4, auto", style=style
        )
        self.flush = w.SelectMultiple(
            options=list(flushes),
            value=tuple(f for f in flush if f in flushes),
            description="flush",
            rows=min(5, len(flushes)),
            style=style,
        )
        self.iterations = w.BoundedIntText(
            value=values["iterations"], min=1, max=1_000_000, description="iterations", style=style
        )
        # --resolution: extra units until each configuration's interval is this narrow (bench.units); empty: off
        self.resolution = w.Text(
            value=values["resolution"], description="resolution", placeholder="off, or e.g. 1%", style=style
        )
        # launch geometry as expressions (kernels.geometry); empty keeps the kernel's own
        self.grid = w.Text(
            value=values["grid"], description="grid", placeholder="kernel's own, e.g. cols/32,rows/32", style=style
        )
        self.block = w.Text(value=values["block"], description="block", placeholder="e.g. 32,32", style=style)
        self.shared_bytes = w.Text(
            value=values["shared_bytes"], description="shared bytes", placeholder="e.g. block_x*4", style=style
        )

    def _layout(self, w: Any) -> Any:
        """The panel as one box: the controls, Run/Stop with progress, then hints, errors and plots."""
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
        return w.VBox([controls, buttons, self.cluster_info, self.errors, self.placeholder, self.load_info, plots])

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

    # -- display ----------------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

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

    # -- the live plots (PanelRuns redraws them as results arrive) ------------------------------
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


__all__ = ["SweepPanel", "parse_rotating", "parse_size", "parse_sizes", "split_result"]
