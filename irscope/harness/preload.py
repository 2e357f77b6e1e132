"""Imported once by the forkserver that `--cluster local:N` forks its worker processes from
(cluster.py): the compiler, Triton and Triton's cache key, so that every worker forked from it starts with
them instead of importing and hashing them itself (about 0.7 CPU-s a worker; docs/benchmarks.md).

Not imported anywhere else. It never raises: a worker that cannot warm up here warms up (or fails) in
its own first task, with the error reported per point.
"""
try:
    from . import compiler  # noqa: F401 - imported for the forked workers to inherit
    from .specialise import warm_up
    warm_up()
except Exception:  # noqa: BLE001 - see above: the worker's own check reports it
    pass
