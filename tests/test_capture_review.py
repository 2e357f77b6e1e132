"""`irscope capture` given programs that do what real programs do (change directory, leave threads running,
write files of their own, declare a source encoding) and launch files that are damaged: each run keeps
what the program launched and the user's files, and a bad launch file is the file's fault, said in one line."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

KERNEL = (
    "import triton\n"
    "import triton.language as tl\n\n\n"
    "@triton.jit\n"
    "def k(x_ptr, n, BLOCK: tl.constexpr):\n"
    "    offs = tl.arange(0, BLOCK)\n"
    "    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)\n"
)


def _program(folder: Path, body: str, name: str = "prog.py") -> Path:
    """A program beside a kernel module `k.py`: it imports k, launches it once (BLOCK=64), then runs `body`."""
    (folder / "k.py").write_text(KERNEL)
    prog = folder / name
    prog.write_text("import os, sys, threading, time\nimport torch\n"
                    "sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))\n"
                    "from k import k\n"
                    "k[(1,)](torch.zeros(64), 64, BLOCK=64)\n" + body)
    return prog


def _launch_ids(path: Path) -> list[str]:
    return [launch["id"] for launch in json.loads(path.read_text())["launches"]]


def _lines(err: str, kind: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith(f"irscope: {kind}: ")]


def test_a_program_that_changes_directory_keeps_its_capture_in_the_output_folder(cli, tmp_path):
    # The child's launch file path was relative to the folder irscope ran in: after os.chdir the program's
    # end wrote it under the new folder (making it), and irscope blamed os._exit for a lost capture.
    away = tmp_path / "elsewhere"
    away.mkdir()
    prog = _program(tmp_path, f"os.chdir({str(away)!r})\n")
    code, _, err = cli("capture", "--no-compile", "--out", "snaps", "--", "python", prog)
    assert code == 0, err
    assert len(_launch_ids(tmp_path / "snaps" / "launches.json")) == 1
    assert list(away.iterdir()) == []
    assert sorted(p.name for p in (tmp_path / "snaps").iterdir()) == ["launches.json"]


def test_a_launch_from_a_thread_still_running_when_the_main_module_ends_is_recorded(cli, tmp_path):
    # The launch file was written as soon as the main module returned; Python waits for such a thread
    # only afterwards, so its launches (documented as recorded) were silently missing.
    prog = _program(tmp_path, "def later():\n"
                              "    time.sleep(0.5)\n"
                              "    k[(1,)](torch.zeros(32), 32, BLOCK=32)\n"
                              "threading.Thread(target=later).start()\n")
    code, _, err = cli("capture", "--no-compile", "--out", "snaps", "--", "python", prog)
    assert code == 0, err
    assert len(_launch_ids(tmp_path / "snaps" / "launches.json")) == 2, err


def test_a_program_that_leaves_a_thread_pool_open_is_captured_and_does_not_hang(tmp_path):
    # Waiting for every thread before Python's own exit hooks ran waited forever for the idle workers of a
    # ThreadPoolExecutor never shut down (python itself ends such a program at once).
    prog = _program(tmp_path, "import concurrent.futures\n"
                              "pool = concurrent.futures.ThreadPoolExecutor(2)\n"
                              "pool.submit(lambda: k[(1,)](torch.zeros(32), 32, BLOCK=32)).result()\n")
    done = subprocess.run([sys.executable, "-m", "irscope", "capture", "--no-compile", "--out", "snaps", "--",
                           sys.executable, str(prog)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(_launch_ids(tmp_path / "snaps" / "launches.json")) == 2, done.stderr


def test_a_kernel_in_a_file_that_declares_its_encoding_is_captured_and_compiles_back(cli, tmp_path):
    # The capture read the kernel's file as UTF-8: a latin-1 file (valid Python, `# -*- coding: latin-1 -*-`)
    # raised UnicodeDecodeError as the program ended, a traceback, and nothing was recorded.
    (tmp_path / "latin.py").write_bytes(KERNEL.replace("import triton\n", "# -*- coding: latin-1 -*-\n# caf\xe9\n"
                                                       "import triton\n", 1).encode("latin-1"))
    (tmp_path / "prog.py").write_text("import os, sys\nimport torch\n"
                                      "sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))\n"
                                      "from latin import k\nk[(1,)](torch.zeros(64), 64, BLOCK=64)\n")
    code, _, err = cli("capture", "--target", "sm_80", "--out", "snaps", "--", "python", "prog.py")
    assert code == 0, err
    data = json.loads((tmp_path / "snaps" / "launches.json").read_text())
    [kernel] = data["kernels"].values()
    assert "# caf\xe9" in kernel["module_source"]
    [launch_id] = _launch_ids(tmp_path / "snaps" / "launches.json")
    assert json.loads((tmp_path / "snaps" / launch_id / "sm_80" / "irscope.json").read_text())["status"] == "ok"


def test_a_launches_json_the_program_writes_while_it_runs_is_kept_and_the_capture_goes_beside_it(cli, tmp_path):
    # The output folder was checked before the program ran only: a program whose own result is
    # launches.json, captured with --out ., had that file replaced by the capture.
    prog = _program(tmp_path, "open('launches.json', 'w').write('{\"my\": \"results\"}')\n")
    code, _, err = cli("capture", "--no-compile", "--out", ".", "--", "python", prog)
    assert code == 0, err
    assert (tmp_path / "launches.json").read_text() == '{"my": "results"}'
    assert len(_launch_ids(tmp_path / "launches-1.json")) == 1
    [warning] = _lines(err, "warning")
    assert "launches-1.json" in warning and "--out" in warning


@pytest.fixture(scope="module")
def small_launches(tmp_path_factory) -> Path:
    """A real capture of tests/capture_programs/small.py (a tl.dtype constexpr, an autotuned kernel)."""
    out = tmp_path_factory.mktemp("small")
    done = subprocess.run([sys.executable, "-m", "irscope", "capture", "--no-compile", "--out", str(out), "--",
                           "python", str(Path(__file__).parent / "capture_programs" / "small.py")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return out / "launches.json"


def _set_dt(value):
    def damage(data, launch, kernel):
        next(a for a in launch["args"] if a["name"] == "DT")["value"] = value
    return damage


def _set_jit(value):
    def damage(data, launch, kernel):
        kernel["src"] += "\n"  # no longer the module's: the kernel is made again from its src, with its jit
        kernel["jit"]["do_not_specialize"] = value
    return damage


@pytest.mark.parametrize("damage, says", [
    (_set_dt({"tl_dtype": 5}), "constexpr dtype '5' is no Triton dtype"),
    (_set_dt({"tl_dtype": "nonsense"}), "constexpr dtype 'nonsense' is no Triton dtype"),
    (_set_dt({"tuple": 5}), "constexpr tuple is a int, not a list"),
    (_set_dt({"jit_function": 5}), "constexpr jit function's name is a int"),
    (_set_jit(5), "jit.do_not_specialize is 5, not a list of parameter names"),
], ids=["dtype-int", "dtype-name", "tuple-int", "jit-function-int", "do-not-specialize-int"])
def test_a_damaged_constexpr_or_jit_field_is_the_launch_files_fault_not_an_internal_error(
        cli, tmp_path, small_launches, damage, says):
    # Each was "internal error: TypeError/AssertionError/AttributeError ... this is a bug in irscope" (exit 70).
    data = json.loads(small_launches.read_text())
    launch = next(la for la in data["launches"] if any(a["name"] == "DT" for a in la["args"]))
    damage(data, launch, data["kernels"][launch["kernel"]])
    (tmp_path / "bad.json").write_text(json.dumps(data))
    code, _, err = cli("compile", "bad.json", "--target", "sm_80", "--out", "snaps")
    assert code == 4, err
    [error], [hint] = _lines(err, "error"), _lines(err, "hint")
    assert f"bad.json is damaged: launch '{launch['id']}': " in error and says in error, error
    assert "capture it again" in hint and "bug" not in err


AUTOTUNED = (
    "import torch, triton, triton.language as tl\n\n"
    "def make():\n"
    "    @triton.heuristics({'EVEN': lambda args: args['n'] % 2 == 0})\n"
    "    @triton.autotune(configs=[triton.Config({'BLOCK': 32}, num_warps=1), triton.Config({'BLOCK': 64}, num_warps=2)],\n"
    "                     key=['n'])\n"
    "    @triton.jit\n"
    "    def inner(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):\n"
    "        offs = tl.arange(0, BLOCK)\n"
    "        tl.store(x_ptr + offs, 1.0, mask=offs < n)\n"
    "    return inner\n\n"
    "KERNELS = {'inner': make()}  # held by no module global of its own, as libraries keep kernels\n"
    "x = torch.zeros(64)\n"
    "KERNELS['inner'][(1,)](x, 64)\n"
    "assert x.sum() == (64 if 'check' in __import__('sys').argv else 0)\n"
)


@pytest.mark.parametrize("execute", [False, True], ids=["record", "execute"])
def test_an_autotuned_kernel_records_its_configs_when_no_global_holds_it_and_under_execute(cli, tmp_path, execute):
    # The autotuner was looked for among the kernel's module globals only, and under --execute the chain of
    # `.fn` reached the InterpretedFunction, not the shadow the JIT compiled: either way the launch file
    # had no `autotune` and no `autotune_config`, silently.
    (tmp_path / "tuned.py").write_text(AUTOTUNED)
    code, _, err = cli("capture", "--no-compile", *(["--execute"] if execute else []), "--out", "snaps", "--",
                       "python", "tuned.py", *(["check"] if execute else []))
    assert code == 0, err
    data = json.loads((tmp_path / "snaps" / "launches.json").read_text())
    [kernel] = data["kernels"].values()
    assert [c["BLOCK"] for c in kernel["autotune"]["configs"]] == [32, 64]
    assert kernel["autotune"]["wrappers"] == ["Heuristics", "Autotuner"]
    assert sorted(launch["autotune_config"] for launch in data["launches"]) == [0, 1]


def test_a_password_the_program_puts_in_its_environment_under_a_short_name_stays_out_of_the_launch_file(cli, tmp_path):
    # DB_PASS, PGPASSFILE-style and PASSPHRASE names held none of the words the filter knew (PASSWORD, PASSWD),
    # so their values were written into a launch file meant to be shared.
    prog = _program(tmp_path, "os.environ['DB_PASS'] = 'hunter2'\nos.environ['SSH_PASSPHRASE'] = 'hunter3'\n"
                              "os.environ['GIT_CREDS'] = 'hunter4'\nos.environ['MY_LIB_VENDOR'] = 'nvidia'\n")
    code, _, err = cli("capture", "--no-compile", "--out", "snaps", "--", "python", prog)
    assert code == 0, err
    text = (tmp_path / "snaps" / "launches.json").read_text()
    assert json.loads(text)["environment"] == {"MY_LIB_VENDOR": "nvidia"}
    assert "hunter" not in text
