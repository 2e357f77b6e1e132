"""Imported once by the forkserver that `--cluster local:N` forks its worker processes from
(cluster.py): the compiler, Triton and Triton's cache key, so that every worker forked from it starts with
them instead of importing and hashing them itself (about 0.7 CPU-s a worker; docs/benchmarks.md), and
the code a first specialisation imports (the built-in `add` for one target: 0.09 CPU-s the first time,
about 2 ms for each target after it; the worker still warms each target it compiles for, batch._warm_for).

Not imported anywhere else. It never raises: a worker that cannot warm up here warms up (or fails) in
its own first task, with the error reported per point.
"""
try:
    from . import compiler  # noqa: F401 - imported for the forked workers to inherit
    from ..spec.kernel import CompileOptions
    from ..targets import get_target
    from .batch import load_kernel
    from .specialise import specialise, warm_up
    warm_up()
    specialise(load_kernel("add"), get_target("sm_80"), CompileOptions())
except Exception:  # noqa: BLE001 - see above: the worker's own check reports it
    pass
