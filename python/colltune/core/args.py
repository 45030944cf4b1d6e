"""The argument layer every verb shares: one size parser, range checks, one-line usage errors.

A bad argument ends the command before anything is launched or recorded, with one line that
names the argument and what it accepts, and exit status 2. Parsers built from `Parser` (the
`colltune` command and all its verbs) print that one line instead of argparse's usage block;
checks of relations between arguments (min <= max, root < ranks, memory) raise `UsageError`,
which the `colltune` command turns into the same line and status.
"""

from __future__ import annotations

import argparse
import os
import sys

from .units import fmt_size, parse_size

# The exit status of a usage error (argparse's and the shell's convention).
USAGE_STATUS = 2
# Counts are C ints in MPI: no message may have more elements than this.
MAX_COUNT = (1 << 31) - 1


class UsageError(Exception):
    """A bad argument or combination of arguments: one line, exit status 2."""


def size_type(minimum: int = 1, maximum: int | None = None):
    """An argparse type: a size (parse_size) in [minimum, maximum]."""
    def parse(text: str) -> int:
        try:
            value = parse_size(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        if value < minimum or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(
                f"{text} is out of range: allowed {_range_text(minimum, maximum, size=True)}")
        return value
    parse.__name__ = "size"
    return parse


# A size on the command line, at least one byte: the type of every --size-like option.
byte_size = size_type(1)


def int_type(minimum: int | None = None, maximum: int | None = None, what: str = "an integer"):
    """An argparse type: an integer in [minimum, maximum] (either may be open)."""
    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"'{text}' is not {what}: allowed {_range_text(minimum, maximum)}") from None
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(
                f"{text} is out of range: allowed {_range_text(minimum, maximum)}")
        return value
    parse.__name__ = "integer"
    return parse


def float_type(minimum: float | None = None, maximum: float | None = None,
               below_max: bool = False):
    """An argparse type: a finite number in [minimum, maximum] ([minimum, maximum) with
    below_max)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if value != value or value in (float("inf"), float("-inf")):
            raise argparse.ArgumentTypeError(f"'{text}' is not a number")
        if ((minimum is not None and value < minimum)
                or (maximum is not None and (value >= maximum if below_max else value > maximum))):
            hi = f"{maximum} (excluded)" if below_max else maximum
            raise argparse.ArgumentTypeError(
                f"{text} is out of range: allowed {_range_text(minimum, hi)}")
        return value
    parse.__name__ = "number"
    return parse


positive_int = int_type(1)
count_int = int_type(0)
# 0 asks the system for any free port.
port_type = int_type(0, 65535, "a port number")


def _range_text(lo, hi, size: bool = False) -> str:
    show = (lambda v: fmt_size(v) if isinstance(v, int) else str(v)) if size else str
    if lo is not None and hi is not None:
        return f"{show(lo)} to {show(hi)}"
    if lo is not None:
        return f">= {show(lo)}"
    if hi is not None:
        return f"<= {show(hi)}"
    return "any"


def need(cond: bool, message: str) -> None:
    """Raise UsageError(message) unless cond."""
    if not cond:
        raise UsageError(message)


def split_list(text: str, option: str, allowed: list[str] | None = None,
               what: str = "name") -> list[str]:
    """A comma-separated list: at least one item, no empty ones, each in `allowed` if given."""
    items = [t.strip() for t in text.split(",")]
    need(all(items), f"{option} '{text}': an empty {what} in the list; give comma-separated "
                     + (f"names from: {', '.join(allowed)}" if allowed else f"{what}s"))
    if allowed is not None:
        bad = [t for t in items if t not in allowed]
        need(not bad, f"{option}: unknown {what} '{bad[0] if bad else ''}'; "
                      f"allowed: {', '.join(allowed)}")
    return items


def available_memory() -> int | None:
    """Bytes the machine can give a new job (MemAvailable), or None when unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_memory(per_rank: int, ranks: int, force: bool, what: str) -> None:
    """Refuse (UsageError) a job whose ranks would allocate more than 80% of the memory the
    machine has free, with the figures; --force lets it go on."""
    free = available_memory()
    total = per_rank * ranks
    if free is None or total <= 0.8 * free or force:
        return
    raise UsageError(f"{what} needs about {fmt_size(per_rank)} per rank x {ranks} ranks = "
                     f"{fmt_size(total)}, more than the {fmt_size(free)} this machine has "
                     "free; lower --max or the ranks, or add --force to run it anyway")


class DefaultsFormatter(argparse.HelpFormatter):
    """Help that states every option's default, unless its text already does."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.help is argparse.SUPPRESS:
            return text
        if ("default" not in text and "%(default)" not in text and action.option_strings
                and action.default not in (None, False, argparse.SUPPRESS)
                and action.nargs != 0):
            shown = fmt_size(action.default) if getattr(action.type, "__name__", "") == "size" \
                else "%(default)s"
            text = f"{text} (default: {shown})" if text else f"default: {shown}"
        return text


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit status 2) and defaults in the help. Sub-parsers
    made from it are of the same class."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(USAGE_STATUS, f"{self.prog}: {message} (see {self.prog} --help)\n")


def report_usage(prog: str, exc: UsageError) -> int:
    """Print a UsageError as the one line and return the usage exit status."""
    print(f"{prog}: {exc}", file=sys.stderr)
    return USAGE_STATUS
