"""What the sweep panel checks before Run, by the library's own rules: the flush modes the chosen
device supports (``bench.flush.FlushMode.supported_by``; the AMD instruction-cache flushes are not
offered for the host or an NVIDIA GPU), what ``auto`` resolves to against the device's LLC and free
memory (``bench.rotating.plan``, as ``bench.sweep`` plans it), and whether the iterations cover the
buffer sets of every configuration (``check_iterations``): fewer disable Run and say why, with a
button that fixes it.

``PanelChecks`` is mixed into ``widgets.SweepPanel``, which builds the controls it reads (device,
kernel, sizes, rotating, iterations, flush) and the hint widgets it writes.
"""

from __future__ import annotations

import html
from typing import Any

from .panel_fields import _flush_choices, parse_rotating, parse_sizes


class PanelChecks:
    """The device's facts, the flush choices and the iterations check of ``widgets.SweepPanel``."""

    def _init_checks(self, flush: Any) -> None:
        """The checks' state: device facts opened so far, the sets Run needs, why it is disabled."""
        self._facts: dict[str, dict[str, Any] | None] = {}
        self._needed_sets = 0
        self._blocked = ""  # why Run is disabled ("" when it is not)
        self._asked_flush = tuple(flush)

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


__all__ = ["PanelChecks"]
