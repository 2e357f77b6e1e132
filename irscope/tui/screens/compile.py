"""CompileScreen: choose a kernel, targets and options, and compile them in the background.

Compiles run through `irscope.harness.batch.compile_points` in child processes started by a forkserver:
forking this process, which has Textual's threads running, could copy a lock some other thread holds.
"""
from __future__ import annotations

import multiprocessing
import os
import re
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Button, Input, Label, ProgressBar, Static

from ...errors import IrscopeError
from ..widgets.kernel_input import KernelInput

START_METHOD = "forkserver"
FIELDS = (  # id, label, placeholder
    ("kernel", "kernel", "matmul, or FILE.py:FUNCTION (Tab completes)"),
    ("target", "targets", "sm_90a,gfx942 (or all)"),
    ("config", "config", "the kernel's default config"),
    ("num_warps", "num_warps", "config's value"),
    ("num_stages", "num_stages", "config's value"),
    ("constexpr", "constexprs", "BLOCK_M=64 BLOCK_N=128"),
    ("arg", "args", "typical values: x_ptr=*fp16 n_elements=4096"),
    ("divisibility", "alignment", "16 (default), 1, or x_ptr=4 ..."),
    ("option", "options", "maxnreg=128 enable_fp_fusion=false"),
)


LABELS = {field_id: label for field_id, label, _ in FIELDS}
# The command line's flag for each field (`--num-warps` is the num_warps field): the core's messages name
# flags, which a dialog user never typed.
FLAGS = {"--" + field_id.replace("_", "-"): label for field_id, label, _ in FIELDS}


def in_field_words(text: str | None, message: bool = True) -> str | None:
    """A core error's message (or hint, `message=False`) as the dialog says it: the fields named as the
    dialog labels them, the rest kept (`bad --divisibility 'x'` -> `alignment: bad value 'x'`)."""
    if text is None:
        return None
    for flag, label in FLAGS.items():
        f = re.escape(flag)
        if message:
            text = re.sub(rf"^bad {f} ", f"{label}: bad value ", text)
            text = re.sub(rf"^{f} ", f"{label}: ", text)
        text = re.sub(rf"e\.g\. {f} ", "e.g. ", text)  # the example is what goes in the field
        text = re.sub(rf"{f} (\S+=\S+)", rf"\1 in {label}", text)
        text = re.sub(rf"\bpass {f} ", f"type in {label}: ", text)  # `pass --target sm_90a, ... or all`
        text = re.sub(rf"\({f}\)", f"({label})", text)
        text = re.sub(rf"{f}\b", f"the {label} field", text)
    return text


@dataclass(frozen=True)
class Request:
    """What the form asks for, checked and parsed: the points to compile and where they go."""

    points: tuple
    out: Path


def parse_request(values: dict[str, str], out: Path) -> Request:
    """Turn the form's text into compile points; raises UsageError with a hint on bad input."""
    from ...errors import UsageError
    from ...harness.batch import Point
    from ...spec.kernel import CompileOptions, parse_assignment, parse_divisibility
    from ...targets import parse_targets

    kernel = values.get("kernel", "").strip()
    if not kernel:
        raise UsageError("no kernel given", "type a built-in kernel's name (matmul) or FILE.py:FUNCTION")
    targets = parse_targets(values.get("target", "").strip() or "sm_90a")

    def parsed(field_id: str, parse):
        """A field's text parsed; an error names the field as the dialog labels it."""
        try:
            return parse(values.get(field_id, "").split())
        except UsageError as e:
            message, label = in_field_words(e.message), LABELS[field_id]
            raise UsageError(message if message.startswith(f"{label}: ") else f"{label}: {message}",
                             in_field_words(e.hint, message=False)) from None

    def number(name: str) -> int | None:
        text = values.get(name, "").strip()
        if not text:
            return None
        try:
            return int(text)
        except ValueError:
            raise UsageError(f"{name} must be a whole number, not '{text}'", "e.g. 4") from None

    options = CompileOptions(
        config=values.get("config", "").strip() or None,
        num_warps=number("num_warps"),
        num_stages=number("num_stages"),
        constexprs=parsed("constexpr", lambda items: tuple(parse_assignment(c, "constexpr") for c in items)),
        backend_options=parsed("option", lambda items: tuple(parse_assignment(o, "option") for o in items)),
        divisibility=parsed("divisibility", parse_divisibility),
        args=parsed("arg", lambda items: tuple(parse_assignment(a, "argument") for a in items)),
    )
    return Request(tuple(Point(kernel, t.name, options) for t in targets), Path(out))


class CompileScreen(ModalScreen):
    """The compile form, its progress bar, and what became of each compile."""

    BINDINGS = [Binding("escape", "close", "Close"), Binding("ctrl+s", "compile", "Compile")]

    @dataclass
    class CompileProgressed(Message):
        """Some compiles finished; `running` are the labels still compiling."""

        done: int
        total: int
        running: tuple[str, ...]

    @dataclass
    class CompileFinished(Message):
        """Every compile ended: an outcome per point (ok, failed, crashed or timeout)."""

        outcomes: list

    @dataclass
    class CompileRefused(Message):
        """The request was refused before any compile ran (bad kernel, option, target...)."""

        message: str
        hint: str | None

    @dataclass
    class SnapshotsCompiled(Message):
        """New snapshot folders were written (bubbles up to the app, which adds them to the tree)."""

        paths: list[Path]
        root: Path
        # snapshot folder -> the kernel file the user typed in the form: the one Python file outside a
        # snapshot that the reader will show for it (a path recorded inside a snapshot never is)
        sources: dict = field(default_factory=dict)

    def __init__(self, out: Path, kernels: list[str], initial: dict[str, str] | None = None):
        super().__init__()
        self.out = Path(out)
        self.kernels = kernels
        self.initial = initial or {}
        self.busy = False

    def compose(self) -> ComposeResult:
        # Scrolled: on a terminal too short for the form, the buttons and the results are scrolled to (a
        # focused field or button scrolls into view), not cut off below the screen's edge.
        with VerticalScroll(id="compile-dialog", can_focus=False):
            yield Label(Text.assemble(("Compile", "bold"), f"  into {self.out}"), id="compile-title")
            for field_id, label, placeholder in FIELDS:
                with Horizontal(classes="compile-row"):
                    yield Label(label, classes="compile-label")
                    suggester = SuggestFromList(self.kernels) if field_id == "kernel" else None
                    kind = KernelInput if field_id == "kernel" else Input
                    yield kind(value=self.initial.get(field_id, ""), placeholder=placeholder,
                               id=f"field-{field_id}", suggester=suggester)
            with Horizontal(id="compile-buttons"):
                yield Button("Compile", id="compile-go", variant="primary")
                yield Button("Close", id="compile-close")
            yield ProgressBar(id="compile-progress", show_eta=False, classes="-hidden")  # shown once compiling
            yield Static(id="compile-log")

    def on_mount(self) -> None:
        self.query_one("#field-kernel", Input).focus()

    def values(self) -> dict[str, str]:
        return {field_id: self.query_one(f"#field-{field_id}", Input).value for field_id, _, _ in FIELDS}

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_compile()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "compile-go":
            self.action_compile()
        else:
            self.action_close()

    def action_close(self) -> None:
        if self.busy:
            self.app.notify("compiles are still running; they keep going and land in the tree when done", markup=False)
        self.dismiss()

    def action_compile(self) -> None:
        if self.busy:
            self.app.notify("already compiling", severity="warning", markup=False)
            return
        try:
            request = parse_request(self.values(), self.out)
        except IrscopeError as e:
            self._log_error(e.message, e.hint)
            return
        self.busy = True
        self.query_one("#compile-go", Button).disabled = True
        bar = self.query_one(ProgressBar)
        bar.update(total=len(request.points), progress=0)
        bar.remove_class("-hidden")
        self._log(Text(f"compiling {len(request.points)} point(s): checking the request…", style="dim"))
        # A daemon thread of its own, not a Textual worker: a worker is the dialog's, and once `Esc` closed
        # the dialog what it posted was lost (the compiles never reached the tree); and Textual's thread
        # workers are threads the interpreter joins at exit, so quitting waited for the whole batch.
        threading.Thread(target=self.compile, args=(request, self.app, getattr(self.app, "closing", None)),
                         name="irscope-compile", daemon=True).start()

    def compile(self, request: Request, app, closing: threading.Event | None = None) -> None:
        """Compile the request (in a thread): progress and outcomes to this dialog while it is open, the new
        snapshots to the app. Once `closing` is set (the app quits), the next progress stops the compiles."""
        from ...harness.batch import compile_points

        def on_progress(p) -> None:
            if closing is not None and closing.is_set():
                raise _Quitting()  # the harness stops every child and starts no more
            running = tuple(f"{pt.kernel} {pt.target}" for pt, *_ in p.running)
            self.post_message(self.CompileProgressed(p.done, p.total, running))

        try:
            _start_forkserver()
            outcomes = compile_points(list(request.points), request.out, on_progress=on_progress,
                                      start_method=START_METHOD)
        except _Quitting:
            return
        except IrscopeError as e:
            self.post_message(self.CompileRefused(e.message, e.hint))
        except Exception as e:  # noqa: BLE001 - anything else is reported in the dialog, never a crash
            self.post_message(self.CompileRefused(f"internal error: {type(e).__name__}: {e}",
                                                  "this is a bug in irscope; please report it"))
        else:
            self.post_message(self.CompileFinished(outcomes))
            compiled = snapshots_compiled(outcomes, request.out)
            if compiled.paths:
                app.post_message(compiled)

    def on_compile_screen_compile_progressed(self, event: CompileProgressed) -> None:
        self.query_one(ProgressBar).update(total=event.total, progress=event.done)
        running = ", ".join(event.running)
        self._log(Text(f"[{event.done}/{event.total}] " + (f"compiling {running}" if running else "done")))

    def on_compile_screen_compile_refused(self, event: CompileRefused) -> None:
        self._done()
        self._log_error(event.message, event.hint)

    def on_compile_screen_compile_finished(self, event: CompileFinished) -> None:
        self._done()
        text = Text()
        for o in event.outcomes:
            ok = o.status == "ok"
            text.append("✓ " if ok else "✗ ", style="green" if ok else "bold red")
            text.append(o.label or f"{o.point.kernel} {o.point.target}")
            text.append(f"  {o.status}  {o.seconds:.1f} s\n", style="dim" if ok else "red")
            if o.error:
                text.append(f"    at stage {o.error.get('stage', '?')} ({o.error.get('type', 'error')}):\n", style="red")
                for line in _tail(o.error.get("message", "")):
                    text.append(f"    {line}\n")
        self._log(text)

    def _done(self) -> None:
        self.busy = False
        self.query_one("#compile-go", Button).disabled = False

    def _log(self, text: Text) -> None:
        log = self.query_one("#compile-log", Static)
        log.update(text)
        # On a terminal too short for the form and the results, the dialog scrolls down to them.
        self.call_after_refresh(log.scroll_visible, animate=False)

    def _log_error(self, message: str, hint: str | None) -> None:
        message, hint = in_field_words(message), in_field_words(hint, message=False)
        text = Text()
        text.append("error: ", style="bold red")
        text.append(message)
        if hint:
            text.append("\nhint: ", style="bold cyan")
            text.append(hint)
        self._log(text)


class _Quitting(Exception):
    """Raised from a compile's progress callback when the app quits: the harness then stops its children."""


def snapshots_compiled(outcomes: list, out: Path) -> CompileScreen.SnapshotsCompiled:
    """The app's news of a finished compile: the folders written, and the kernel file typed for each."""
    paths, sources = [], {}
    for o in outcomes:
        if o.path is not None:
            paths.append(Path(o.path))
            named = named_kernel_file(o.point.kernel)
            if named is not None:
                sources[Path(o.path)] = named
    return CompileScreen.SnapshotsCompiled(paths, Path(out), sources)


def named_kernel_file(kernel: str) -> Path | None:
    """The file of a `FILE.py:FUNCTION` kernel reference the user typed, made absolute; None for a name."""
    file, sep, _ = kernel.rpartition(":")
    return Path(file).absolute() if sep and file.endswith(".py") else None


def _tail(text: str, count: int = 6) -> list[str]:
    """The last lines of a compiler message: Triton puts the source excerpt first and the reason last."""
    lines = [ln.rstrip()[:200] for ln in text.strip().splitlines() if ln.strip()]
    return lines[-count:]


_started = False


def _start_forkserver() -> None:
    """Start multiprocessing's forkserver (and its resource tracker) once, with Triton preloaded.

    Preloading means each compile child starts with Triton imported. The tracker is handed
    `sys.stderr.fileno()` when it starts, and under Textual that is a stand-in whose fileno() is -1
    ("bad value(s) in fds_to_keep"), so it starts with /dev/null as its stderr instead: nothing a helper
    process writes may land on the screen Textual draws.
    """
    global _started
    if _started:
        return
    from multiprocessing import forkserver, resource_tracker
    multiprocessing.get_context(START_METHOD).set_forkserver_preload(["irscope.harness.batch", "triton"])
    saved = sys.stderr
    with open(os.devnull, "w") as devnull:
        sys.stderr = devnull
        try:
            resource_tracker.ensure_running()
            forkserver.ensure_running()
        finally:
            sys.stderr = saved
    _started = True
