"""A cache folder that a program fills, checks and replaces, never touching what it did not write.

The rules :func:`pe_lib.pretrained.fetch_weights` follows, written once:

* The folder's path is resolved first (:func:`resolve_folder`): a symbolic link is followed to
  the folder it names; a link loop, a path through a file or a file at the path itself is a
  clear error before any work starts.
* Only a folder the program wrote may be replaced: :func:`foreign_entries` lists what a folder
  holds beyond the files its manifest names (or everything, when it has no manifest of ours);
  the caller refuses to replace a folder with any.
* One fill at a time per folder: :func:`exclusive` takes an advisory lock on a file beside it,
  ``.<name>.pe-book-lock``; a second process waits for the first (the operating system drops
  the lock when its holder ends, however it ends).
* The new contents are built in a scratch folder beside the target,
  ``.<name>.pe-book-fetch-<pid>``, marked as the program's by a file inside it, then swapped in
  by two renames on one file system (:func:`swap_in`): the target is never half-written. A
  scratch folder that a killed process left behind is recognised by its name and its mark and
  removed by the next fill (:func:`remove_leftovers`).
* ``SIGTERM`` during a fill raises :class:`Terminated` (:func:`terminate_raises`), so that the
  scratch folder is removed and a child process is stopped on the way out, as for ``Ctrl-C``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import threading
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from types import FrameType

__all__ = [
    "Terminated",
    "exclusive",
    "foreign_entries",
    "has_leftovers",
    "lock_path",
    "remove_leftovers",
    "resolve_folder",
    "scratch_folder",
    "swap_in",
    "terminate_raises",
    "unchangeable",
]

#: The file inside a scratch folder that marks it as the program's own.
_MARK = ".pe-book-scratch"


def _scratch_prefix(target: Path) -> str:
    return f".{target.name}.pe-book-fetch-"


def lock_path(target: Path) -> Path:
    """The lock file beside ``target``."""
    return target.parent / f".{target.name}.pe-book-lock"


def resolve_folder(path: Path, source: str) -> Path:
    """``path`` with every symbolic link followed; it may not exist yet, but if it does it is a
    folder. ``source`` says where the path came from (``"PE_BOOK_WEIGHTS"``), for the errors.

    Raises:
        ValueError: a loop of symbolic links, a path through a file, or a file (not a folder)
            at ``path``.
    """
    try:
        resolved = Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:
        resolved = Path(os.path.realpath(path))  # not there yet (or a link to nowhere)
    except OSError as error:
        why = {
            errno.ELOOP: "a loop of symbolic links",
            errno.ENOTDIR: "a path through a file",
        }.get(error.errno or 0, error.strerror or str(error))
        raise ValueError(
            f"{source} must be a folder (or a path where one can be made), got {str(path)!r}: "
            f"{why}; point it at a folder"
        ) from None
    if resolved.exists() and not resolved.is_dir():
        raise ValueError(
            f"{source} must be a folder (or a path where one can be made), got {str(path)!r}, "
            f"which is a file; point it at a folder"
        )
    return resolved


def foreign_entries(target: Path, owned_files: Collection[str]) -> list[str]:
    """What ``target`` holds beyond ``owned_files`` (relative POSIX paths), the folders above
    them and nothing else; symbolic links are not followed. An owned path may be anything (a
    file replaced by a folder is the program's to replace), but not what is inside it."""
    if not target.exists():
        return []
    owned_folders = {
        parent.as_posix()
        for name in owned_files
        for parent in Path(name).parents
        if parent != Path(".")
    }
    foreign = []
    for root, folders, files in os.walk(target):
        here = Path(root).relative_to(target)
        for name in sorted(folders + files):
            relative = (here / name).as_posix()
            if relative in owned_files:
                continue
            if relative in owned_folders and (Path(root) / name).is_dir():
                continue
            foreign.append(relative)
    return sorted(foreign)


def unchangeable(target: Path) -> list[Path]:
    """The folders of ``target`` (itself included) whose entries this process may not remove
    or rename; symbolic links are not followed."""
    if not target.is_dir():
        return []
    stuck = []
    for root, _, _ in os.walk(target):
        if not os.access(root, os.W_OK | os.X_OK):
            stuck.append(Path(root))
    return stuck


@contextlib.contextmanager
def exclusive(target: Path, on_wait: Callable[[str], None]) -> Iterator[None]:
    """Hold the lock beside ``target`` for the block; ``on_wait`` is told who holds it (a
    message) before this process waits for it."""
    # Not filelock: this lock file holds its holder's process id, which a waiting process reads
    # to say whom it waits for; the scratch folder, the swap and the clean-up are not a lock's.
    try:
        import fcntl
    except ImportError:  # no advisory locks (Windows): one fill at a time is up to the user
        yield
        return
    with open(lock_path(target), "a+", encoding="utf-8") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            on_wait(f"waiting for the fetch in process {holder} to finish with {target}")
            fcntl.flock(lock, fcntl.LOCK_EX)
        lock.seek(0)
        lock.truncate()
        lock.write(str(os.getpid()))
        lock.flush()
        try:
            yield
        finally:
            lock.truncate(0)
            fcntl.flock(lock, fcntl.LOCK_UN)


def has_leftovers(target: Path) -> bool:
    """Whether a scratch folder named as the program's lies beside ``target``."""
    return target.parent.is_dir() and any(target.parent.glob(_scratch_prefix(target) + "*"))


def remove_leftovers(target: Path) -> list[Path]:
    """Remove the scratch folders beside ``target`` that earlier fills left (a killed process
    cannot clean up): those named as the program's and marked as its own, or empty. Call it
    while holding the lock. Returns what was removed."""
    removed = []
    for path in sorted(target.parent.glob(_scratch_prefix(target) + "*")):
        if path.is_symlink() or not path.is_dir():
            continue
        if (path / _MARK).is_file():
            shutil.rmtree(path)
        elif not any(path.iterdir()):
            path.rmdir()
        else:
            continue
        removed.append(path)
    return removed


@contextlib.contextmanager
def scratch_folder(target: Path) -> Iterator[Path]:
    """A new scratch folder beside ``target``, marked as the program's, removed on the way out
    (on an error, ``Ctrl-C`` or :class:`Terminated` too)."""
    path = target.parent / f"{_scratch_prefix(target)}{os.getpid()}"
    path.mkdir()
    try:
        (path / _MARK).write_text("a pe-book fetch's scratch folder\n", encoding="utf-8")
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def swap_in(new: Path, target: Path, aside: Path) -> None:
    """Put the folder ``new`` at ``target``: the old ``target`` (if any) is first renamed to
    ``aside`` (in the scratch folder, removed with it), and put back if the second rename
    fails."""
    if target.exists():
        os.rename(target, aside)
    try:
        os.rename(new, target)
    except BaseException:
        if aside.exists() and not target.exists():
            os.rename(aside, target)
        raise


class Terminated(BaseException):
    """``SIGTERM`` arrived while :func:`terminate_raises` was in force."""


@contextlib.contextmanager
def terminate_raises() -> Iterator[None]:
    """Within the block, ``SIGTERM`` raises :class:`Terminated` (clean-ups run); on the way out
    the previous handler is restored and, when the signal came, the signal is raised again, so
    that the process ends as it would have. Only the main thread can set a handler: elsewhere
    the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    except Terminated:
        signal.signal(signal.SIGTERM, previous)
        signal.raise_signal(signal.SIGTERM)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
