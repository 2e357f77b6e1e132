"""Delta: one value that moved between two snapshots (a counter, a resource, whether a stage exists).

`irscope diff` calls the sides A and B, the goldens call them golden and fresh; both use this one type and
keep their own JSON keys (`key`/`a`/`b`/`change` and `name`/`golden`/`fresh`, docs/cli.md)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Delta:
    """One value in A and in B (None: not known there)."""

    key: str
    a: int | float | str | bool | None
    b: int | float | str | bool | None

    @property
    def change(self) -> int | float | None:
        """B minus A when both are numbers (not booleans); else None."""
        if isinstance(self.a, (int, float)) and isinstance(self.b, (int, float)) and \
                not isinstance(self.a, bool) and not isinstance(self.b, bool):
            return self.b - self.a
        return None
