"""Running kernels: checking against their reference (runner.py, on a GPU or in Triton's interpreter),
timing (bench.py), launching a snapshot's binary (replay.py), and the JIT against the device-less compile
(verify.py). Results are recorded through the store."""
