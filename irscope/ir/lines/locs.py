"""Source locations and the per-line map of one stage: the types every IR family's parser returns."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator, Sequence


@dataclass(frozen=True)
class SourceLoc:
    """A place in a source file; `inlined_at` is where the enclosing function was inlined, if it was."""

    file: str
    line: int
    column: int = 0
    inlined_at: SourceLoc | None = None

    def frames(self) -> Iterator[SourceLoc]:
        """This location, then each call site it was inlined into, innermost first."""
        loc: SourceLoc | None = self
        while loc is not None:
            yield loc
            loc = loc.inlined_at

    @property
    def outermost(self) -> SourceLoc:
        *_, last = self.frames()
        return last

    def __str__(self) -> str:
        text = f"{base_name(self.file)}:{self.line}"
        if self.inlined_at is not None:
            text += f" (inlined at {self.inlined_at})"
        return text


def base_name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def same_file(a: str, b: str) -> bool:
    """Whether two spellings name the same file: equal, or one is a trailing part of the other's path."""
    if a == b:
        return True
    pa, pb = a.replace("\\", "/").split("/"), b.replace("\\", "/").split("/")
    pa, pb = [p for p in pa if p not in ("", ".")], [p for p in pb if p not in ("", ".")]
    if not pa or not pb:
        return False
    short, long = (pa, pb) if len(pa) <= len(pb) else (pb, pa)
    return long[-len(short):] == short


@dataclass
class LineMap:
    """The source location of every line of one stage's text (None where a line has none)."""

    stage: str
    locs: Sequence[SourceLoc | None]
    _index: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.locs)

    def source_of(self, index: int, file: str | None = None) -> SourceLoc | None:
        """The location of line `index` (0-based); with `file`, the innermost frame that is in that file."""
        if not 0 <= index < len(self.locs) or self.locs[index] is None:
            return None
        loc = self.locs[index]
        if file is None:
            return loc
        return next((f for f in loc.frames() if same_file(f.file, file)), None)

    def lines_for(self, line: int, file: str) -> list[int]:
        """The lines (0-based, in order) that came from `line` of `file`, directly or through inlining."""
        return self._index_for(file).get(line, [])

    def source_lines(self, file: str) -> dict[int, list[int]]:
        """Every source line of `file` that appears in this stage, with the stage lines it became."""
        return self._index_for(file)

    def _index_for(self, file: str) -> dict[int, list[int]]:
        if file not in self._index:
            index: dict[int, list[int]] = {}
            match: dict[str, bool] = {}
            for i, loc in enumerate(self.locs):
                if loc is None:
                    continue
                seen = set()
                for f in loc.frames():
                    ok = match.get(f.file)
                    if ok is None:
                        ok = match[f.file] = same_file(f.file, file)
                    if ok and f.line not in seen:
                        seen.add(f.line)
                        index.setdefault(f.line, []).append(i)
            self._index[file] = index
        return self._index[file]

    def files(self) -> Counter:
        """How many lines come from each file, counting the outermost frame (the kernel's own file)."""
        return Counter(loc.outermost.file for loc in self.locs if loc is not None)


def kernel_file(maps: Sequence[LineMap]) -> str | None:
    """The file the kernel was written in: the one most lines' outermost frames point to."""
    counts: Counter = Counter()
    for m in maps:
        counts.update(m.files())
    if not counts:
        return None
    # Prefer a full path over a bare name for the same file (LLIR keeps both parts, comments only names).
    best = counts.most_common(1)[0][0]
    longer = [f for f in counts if same_file(f, best) and len(f) > len(best)]
    return max(longer, key=len) if longer else best
