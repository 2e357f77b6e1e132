"""irscope's built-in kernel library: one kernel per file, each with its KernelSpec (see docs/kernel-spec.md)."""
