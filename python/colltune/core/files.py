"""Files and signals every stage shares: JSON documents written atomically and read with a
validator, the checks the validators share, and SIGTERM turned into an interrupt."""

from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
import signal
import threading
from collections.abc import Iterator

# Python's json gives up (RecursionError) about here; no colltune file comes near it.
MAX_JSON_DEPTH = 900

class Terminated(KeyboardInterrupt):
    """SIGTERM received inside a run; a KeyboardInterrupt so it unwinds like Ctrl-C."""


def is_int(v) -> bool:
    """A JSON integer (not a boolean)."""
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v) -> bool:
    """A finite JSON number (not a boolean)."""
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def problem_recorder(where: str, errors: list[str]):
    """need(cond, field, why): records "where: field: why" in errors when cond is false, and
    returns cond; the validators of the machine, p2p and table files share it."""
    def need(cond, field, why):
        if not cond:
            errors.append(f"{where}: {field}: {why}")
        return cond
    return need


def read_validated(path: str | os.PathLike, validate, error: type[Exception]) -> dict:
    """A JSON file checked by `validate(doc, where) -> [problems]`; `error` (with the file,
    field and reason of every problem) when it cannot be read, is not JSON or is invalid.
    The machine, p2p and tuning-table files all load this way."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise error(f"{os.fspath(path)}: cannot read: {e.strerror}") from e
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise error(f"{os.fspath(path)}: not JSON: {e}") from e
    except RecursionError:
        raise error(f"{os.fspath(path)}: JSON nested too deeply (more than about "
                    f"{MAX_JSON_DEPTH} levels): not a file colltune writes") from None
    problems = validate(doc, os.fspath(path))
    if problems:
        raise error("; ".join(problems))
    return doc


def write_atomic(path: str | os.PathLike, data: str | bytes) -> str:
    """Write `data` to `path` via a temporary file and a rename: readers see old or new."""
    path = os.fspath(path)
    directory, name = os.path.split(os.path.abspath(path))
    tmp = os.path.join(directory, f".{name}.{secrets.token_hex(4)}.tmp")
    payload = data.encode() if isinstance(data, str) else data
    try:
        # 0o666 lets the umask decide the final permissions, as for a plain write.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):  # name the file asked for, not the temporary one
            raise OSError(exc.errno, f"cannot write {path}: {exc.strerror}") from exc
        raise
    return path


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block SIGTERM raises `Terminated`, so it unwinds like Ctrl-C.

    Only where SIGTERM would otherwise kill the process outright (its default action)
    and only in the main thread, the one place Python runs signal handlers.
    """
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL):
        yield
        return

    def terminated(signum, frame):
        raise Terminated()

    signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
