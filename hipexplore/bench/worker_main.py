"""The sweep worker's own side (the child process ``bench.worker`` starts): build the device,
register the kernels it was sent, run the sweep, stream results back.

Apart from ``bench.worker`` (the parent side) so that the parent never imports the sweep loop: a
pass of a multi-pass sweep (``bench.passes``) starts workers from inside ``bench.run``.
"""
from __future__ import annotations

import pickle
from multiprocessing.connection import Connection
from typing import Any

from ..errors import ConfigError
from ..kernels import catalog
from .result import SweepHooks


def _worker_main(read_fd: int, write_fd: int) -> None:
    """The worker: build the device, register the kernels it was sent, run, stream, report."""
    rx, tx = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    def send(kind: str, payload: Any) -> None:
        tx.send_bytes(pickle.dumps((kind, payload)))

    def should_stop() -> bool:
        """A round trip to the parent (asked between configurations only), so a stop takes effect
        exactly where it would in-process."""
        send("ask", None)
        return bool(pickle.loads(rx.recv_bytes()))

    try:
        job = pickle.loads(rx.recv_bytes())
        for name, blob in job["kernels"]:
            if blob is not None:
                catalog.register(pickle.loads(blob), replace=True)
            elif name not in catalog.names():
                raise ConfigError(f"kernel {name!r} cannot be sent to a sweep worker (its spec does not pickle: a lambda?) "
                                  f"and the worker's catalog has no kernel of that name; build it with user_kernel "
                                  f"expressions, or use worker=False")
        from ..devices import get_device
        from .run import run

        dev = get_device(job["device"], llc_bytes=job["llc_bytes"])
        # a pass's own placement (bench.passes): held until the process ends
        pad = dev.alloc(job["pad_bytes"]) if job.get("pad_bytes") else None
        hooks = SweepHooks(on_result=lambda r: send("result", r), on_samples=lambda f: send("samples", f),
                           should_stop=should_stop, on_start=lambda k, c: send("start", [k, c]))
        res = run(job["spec"], dev, out=job["out"], resume=job["resume"], hooks=hooks, progress=False,
                  run_id=job["run_id"], command=job["command"])
        if pad is not None:
            res.metadata["worker.pad_bytes"] = str(pad.nbytes)
        send("done", res)
    except BaseException as exc:  # everything goes back to the parent, which raises it
        try:
            pickle.dumps(exc)
            send("error", exc)
        except Exception:
            send("error", RuntimeError(f"{type(exc).__name__}: {exc}"))
    finally:
        tx.close()
        rx.close()


__all__: list[str] = []
