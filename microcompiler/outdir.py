"""Output directories that never lose the user's files.

Every command that writes a directory (``compile -o``, ``create-project -o``, ``run --keep``) goes
through :func:`replace_output_dir`:

- the new contents are written first into a staging directory, so a failure while writing leaves
  the old output as it was;
- a new directory is staged next to it and renamed into place (it appears complete or not at all);
- an existing directory must be empty or a previous output of the same kind, recognised by the
  manifest that output carries (the list of files microcompiler wrote). Only those files are
  replaced, one rename each, undone if one fails; files the user added stay where they are;
- anything else (a file, a path under a file, a directory with someone else's files, a directory we
  may not write) is refused with a one-line :class:`OutputDirError` before anything is touched;
- directories get the permissions the umask gives (not the staging directory's 0700).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from microcompiler.errors import MicrocompilerError

STAGE_PREFIX = ".microcompiler-new-"
BACKUP_PREFIX = ".microcompiler-old-"

# A project path reaches CMake, Ninja, the linker's comma-separated -Wl options, linker scripts and
# /bin/sh (the POST_BUILD objcopy step); each treats other characters specially (`;` `$` quotes `#`
# `\\` `&` `|` `<` `>` `(` `)` `%` `*` `?` `,` `!` ...). Rather than quote for every consumer, a path
# may hold only letters, digits, spaces and these (an allow-list: nothing else can run a command).
SAFE_PATH_PUNCTUATION = " _-.+/@=~"


def unsafe_path_chars(text: str) -> list[str]:
    """The characters of ``text`` that are not allowed in a project path, sorted, once each."""
    return sorted({c for c in text if not (c in SAFE_PATH_PUNCTUATION or (c.isalnum() and c.isprintable()))})


class OutputDirError(MicrocompilerError):
    """An output directory that cannot be written without losing or overwriting someone's files."""


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _describe(exc: OSError) -> str:
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno == errno.EROFS:
        return "read-only file system"
    if exc.errno == errno.ENOSPC:
        return "no space left on the device"
    if exc.errno == errno.ENAMETOOLONG:
        return "file name too long"
    return exc.strerror or str(exc)


def check_path_is_safe(path: Path, what: str) -> None:
    """Refuse a path that the CMake/Ninja build or a copied shell command would split or expand."""
    bad = unsafe_path_chars(str(path))
    if bad:
        shown = " ".join(repr(c) for c in bad)
        raise OutputDirError(
            f"{what} {str(path)!r} contains {shown}, which the firmware build (CMake, Ninja, "
            "the linker, the shell) cannot use in a path; choose a directory named with "
            f"letters, digits and {SAFE_PATH_PUNCTUATION.strip()} or spaces only"
        )


def check_output_dir(out_dir: str | Path, what: str = "output directory") -> Path:
    """Refuse, in one line, an output path that is a file, lies under a file, or cannot be written.

    Returns the absolute path. Nothing is created.
    """
    out_dir = Path(os.path.abspath(Path(out_dir).expanduser()))
    try:
        _check_output_dir(out_dir, what)
    except OSError as exc:  # a name too long, a loop of symbolic links, ...
        raise OutputDirError(f"{what} {out_dir} cannot be used: {_describe(exc)}") from None
    return out_dir


def _check_output_dir(out_dir: Path, what: str) -> None:
    for part in out_dir.parts:
        if len(part.encode()) > 255:
            raise OutputDirError(f"{what} {out_dir} cannot be created: a path component is longer than 255 bytes")
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputDirError(f"{what} {out_dir} is an existing file, not a directory; choose a directory")
    existing = out_dir
    while not existing.exists():  # the deepest part of the path that exists
        if existing.is_symlink():
            raise OutputDirError(f"{what} {out_dir} cannot be created: {existing} is a broken or looping symbolic link")
        existing = existing.parent
    if not existing.is_dir():
        raise OutputDirError(f"{what} {out_dir} cannot be created: {existing} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        target = out_dir if existing == out_dir else existing
        raise OutputDirError(f"cannot write {what} {out_dir}: no write permission for {target}")


def _entries(directory: Path) -> set[str]:
    """Every file, symbolic link and empty directory below ``directory``, relative, as posix paths."""
    found = set()
    for root, dirs, files in os.walk(directory):
        rel_root = Path(root).relative_to(directory)
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            found.add((rel_root / name).as_posix())
        if not dirs and not files and rel_root != Path("."):
            found.add(rel_root.as_posix())
    return found


def listed_files(directory: Path) -> list[str]:
    """The manifest of a freshly written output: every file in it, relative, sorted."""
    return sorted(_entries(directory))


def _covered(entry: str, owned: set[str]) -> bool:
    """Whether ``entry`` is one of ``owned`` or lies inside an owned directory."""
    parts = entry.split("/")
    return any("/".join(parts[:i]) in owned for i in range(1, len(parts) + 1))


def replace_output_dir(
    out_dir: str | Path, fill: Callable[[Path], None], previous_files: Callable[[Path], set[str] | None], what: str
) -> Path:
    """Write an output directory with ``fill(staging_dir)`` and put it in place of ``out_dir``.

    ``previous_files(existing_dir)`` returns the relative paths (files, or directories owned as a
    whole) that a previous output of this kind wrote there, from its manifest, or None when the
    directory is not such an output. ``what`` names the kind in messages ("model library").
    """
    out_dir = check_output_dir(out_dir)
    if out_dir.is_dir():
        return _replace_existing(out_dir, fill, previous_files, what)
    return _create_new(out_dir, fill, what)


def _create_new(out_dir: Path, fill: Callable[[Path], None], what: str) -> Path:
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=STAGE_PREFIX, dir=out_dir.parent))
    except OSError as exc:
        raise OutputDirError(f"cannot create output directory {out_dir}: {_describe(exc)}") from None
    try:
        os.chmod(stage, 0o777 & ~_umask())
        fill(stage)
        os.rename(stage, out_dir)
    except OSError as exc:
        shutil.rmtree(stage, ignore_errors=True)
        raise OutputDirError(f"cannot write the {what} to {out_dir}: {_describe(exc)}") from None
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return out_dir


def _replace_existing(
    out_dir: Path, fill: Callable[[Path], None], previous_files: Callable[[Path], set[str] | None], what: str
) -> Path:
    try:
        present = _entries(out_dir)
    except OSError as exc:
        raise OutputDirError(f"cannot read output directory {out_dir}: {_describe(exc)}") from None
    owned: set[str] = set()
    if present:
        listed = previous_files(out_dir)
        if listed is None:
            raise OutputDirError(
                f"{out_dir} is not empty and is not a {what} written by microcompiler; "
                "microcompiler will not replace files it did not write: choose a new or empty "
                "directory"
            )
        owned = {p for p in listed if os.path.lexists(out_dir / p)}
        owned = {p for p in owned if not _covered(p, owned - {p})}  # a listed file inside an owned directory
    stage = backup = None
    keep_backup = False
    try:
        stage = Path(tempfile.mkdtemp(prefix=STAGE_PREFIX, dir=out_dir))
        fill(stage)
        new = listed_files(stage)
        foreign = [p for p in new if _covered_by_foreign(p, out_dir, owned)]
        if foreign:
            raise OutputDirError(
                f"{out_dir / foreign[0]} was not written by microcompiler and would be "
                f"overwritten by the new {what}; move it away or choose another directory"
            )
        backup = Path(tempfile.mkdtemp(prefix=BACKUP_PREFIX, dir=out_dir))
        _swap(out_dir, stage, backup, owned, new)
    except _IncompleteRestore as exc:
        keep_backup = True
        why = _describe(exc.cause) if isinstance(exc.cause, OSError) else type(exc.cause).__name__
        raise OutputDirError(
            f"cannot write the {what} to {out_dir}: {why}; {len(exc.missing)} "
            f"of its previous files could not be put back and are in {backup}"
        ) from None
    except OSError as exc:
        raise OutputDirError(
            f"cannot write the {what} to {out_dir}: {_describe(exc)}; its previous contents are unchanged"
        ) from None
    finally:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        if backup is not None and not keep_backup:
            shutil.rmtree(backup, ignore_errors=True)
    return out_dir


class _IncompleteRestore(Exception):
    """A failed swap whose undo failed too: the previous files left in the backup directory."""

    def __init__(self, cause: BaseException, missing: list[str]):
        super().__init__(str(cause))
        self.cause, self.missing = cause, missing


def _covered_by_foreign(rel: str, out_dir: Path, owned: set[str]) -> bool:
    """Whether writing ``rel`` would overwrite something that is not ours (a user file or link)."""
    parts = rel.split("/")
    for i in range(1, len(parts) + 1):
        prefix = "/".join(parts[:i])
        if prefix in owned:
            return False  # ours: replaced
        path = out_dir / prefix
        if os.path.islink(path) or (path.exists() and not path.is_dir()):
            return True  # a user's file (or link) where we need a directory or our file
    return False


def _swap(out_dir: Path, stage: Path, backup: Path, owned: set[str], new: list[str]) -> None:
    """Move the old owned entries into backup and the new ones in; undo everything on failure."""
    moved_out: list[str] = []
    moved_in: list[str] = []
    try:
        for rel in sorted(owned):
            (backup / rel).parent.mkdir(parents=True, exist_ok=True)
            os.rename(out_dir / rel, backup / rel)
            moved_out.append(rel)
        for rel in new:
            if (stage / rel).is_dir() and not (stage / rel).is_symlink() and (out_dir / rel).is_dir():
                continue  # an empty directory that is already there
            (out_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            os.rename(stage / rel, out_dir / rel)
            moved_in.append(rel)
    except BaseException as exc:
        for rel in reversed(moved_in):
            try:
                os.rename(out_dir / rel, stage / rel)
            except OSError:
                pass  # a new file left in place: it is ours, and the old one is restored below if it can be
        missing = []
        for rel in reversed(moved_out):
            try:
                if os.path.lexists(out_dir / rel) and not (out_dir / rel).is_dir():
                    os.unlink(out_dir / rel)  # a new file of ours still in the old one's place
                os.rename(backup / rel, out_dir / rel)
            except OSError:
                missing.append(rel)
        if missing:  # keep the backup whatever stopped us: it holds the only copy of those files
            raise _IncompleteRestore(exc, missing) from None
        raise
    _remove_empty_parents(out_dir, owned)


def _remove_empty_parents(out_dir: Path, owned: set[str]) -> None:
    """Drop the directories the old output made that are now empty (src/ of a renamed model, ...)."""
    parents = {p for rel in owned for p in Path(rel).parents if p != Path(".")}
    for rel in sorted(parents, key=lambda p: len(p.parts), reverse=True):
        try:
            (out_dir / rel).rmdir()
        except OSError:
            pass  # not empty (new or user files), or gone


def read_manifest(files, directory: Path) -> set[str] | None:
    """Validate a manifest's list of relative paths: inside ``directory``, no '..', no absolute paths."""
    if not isinstance(files, list) or not all(isinstance(f, str) and f for f in files):
        return None
    safe = set()
    for f in files:
        parts = Path(f).parts
        if Path(f).is_absolute() or ".." in parts or re.search(r"[\x00]", f):
            return None
        if parts[0].startswith((STAGE_PREFIX, BACKUP_PREFIX)):
            continue
        safe.add(Path(f).as_posix())
    return safe
