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


# --- One name per idea (issue 39) -------------------------------------------------------------
# Every verb spells an idea the same way: -n/--ranks, --sizes, --ops, --algs, --table,
# -o/--output, --json (a flag: JSON on stdout), --db. Names that verbs used before stay
# accepted as hidden aliases (help=SUPPRESS), so that scripts and notes written against them
# keep working; `colltune VERB --help` shows only the one name.

DB_HELP = "the results store (default: $COLLTUNE_DB, else ~/.local/share/colltune/colltune.db)"
SIZES_UNITS = "K, M and G are binary: 4M = 4 MiB"


def hidden(p: argparse.ArgumentParser, *names: str, dest: str, **kwargs) -> None:
    """An old spelling of an option: accepted, not shown in --help. Its default is
    SUPPRESS, so that it never overrides the canonical option's default."""
    kwargs.setdefault("default", argparse.SUPPRESS)
    p.add_argument(*names, dest=dest, help=argparse.SUPPRESS, **kwargs)


def add_ranks(p: argparse.ArgumentParser, help: str, *, old: tuple[str, ...] = (),
              dest: str = "ranks", **kwargs) -> None:
    """-n/--ranks, the MPI job's rank count (or list, or range, as the verb takes), with the
    verb's old spellings hidden."""
    kwargs.setdefault("metavar", "RANKS")
    p.add_argument("-n", "--ranks", dest=dest, help=help, **kwargs)
    if old:
        hidden(p, *old, dest=dest, type=kwargs.get("type"))


def parse_counts(text: str, option: str = "--ranks") -> list[int]:
    """'4', '2,4,8', '2-16' or '2-4,8': counts >= 1, sorted, without repeats (UsageError if
    not)."""
    out: list[int] = []
    for part in split_list(text, option, what="count"):
        a, _, b = part.partition("-")
        try:
            lo, hi = int(a), int(b or a)
        except ValueError:
            raise UsageError(f"{option} '{text}': '{part}' is not a count or range; allowed: "
                             "counts >= 1 as N, A-B or a comma list (e.g. 2-8 or 4,8,16)") from None
        need(1 <= lo <= hi, f"{option} '{text}': '{part}' is not a range of counts >= 1 "
                            "with A <= B (e.g. 2-8)")
        out += range(lo, hi + 1)
    return sorted(set(out))


def powers_of_two(lo: int, hi: int) -> list[int]:
    """lo, then every power of two above it, up to hi, then hi: a size range as a list."""
    out = [lo]
    s = 1 << lo.bit_length()
    while s < hi:
        out.append(s)
        s <<= 1
    if hi != lo:
        out.append(hi)
    return out


def parse_size_range(text: str, option: str = "--sizes") -> tuple[int, int]:
    """'8-4M' (MIN-MAX) or '64K' (one size): (MIN, MAX) in bytes (UsageError if not)."""
    lo, _, hi = text.partition("-")
    try:
        a, b = parse_size(lo), parse_size(hi or lo)
    except ValueError as e:
        raise UsageError(f"{option} '{text}': {e}") from None
    need(1 <= a <= b, f"{option} '{text}': allowed MIN-MAX with 1 B <= MIN <= MAX "
                      "(e.g. 8-4M)")
    return a, b


def parse_size_list(text: str, option: str = "--sizes") -> list[int]:
    """'8,64K,1M', '8-4M' (MIN, the powers of two between, MAX) or both mixed: sizes in bytes,
    sorted, without repeats (UsageError if not)."""
    out: set[int] = set()
    for part in split_list(text, option, what="size"):
        a, b = parse_size_range(part, option)
        out.update(powers_of_two(a, b))
    return sorted(out)


class SizeRange(argparse.Action):
    """--sizes MIN-MAX (or one size) for verbs that sweep a range: sets `min` and `max`, the
    destinations the old --min/--max options keep writing."""

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            namespace.min, namespace.max = parse_size_range(values, option_string or "--sizes")
        except UsageError as e:
            parser.error(str(e))


def add_size_range(p: argparse.ArgumentParser, lo: str, hi: str, what: str) -> None:
    """--sizes MIN-MAX, with --min and --max as hidden aliases (the same destinations)."""
    p.add_argument("--sizes", action=SizeRange, default=argparse.SUPPRESS, metavar="MIN-MAX",
                   help=f"the size range, powers of two from MIN to MAX, e.g. 8-4M ({SIZES_UNITS})"
                        f"; {what} (default {lo}-{hi})")
    p.set_defaults(min=byte_size(lo), max=byte_size(hi))
    hidden(p, "--min", dest="min", type=byte_size)
    hidden(p, "--max", dest="max", type=byte_size)


def op_name(allowed: list[str]):
    """An argparse type: one operation name (a list is refused: the verb takes one)."""
    def parse(text: str) -> str:
        if text not in allowed:
            many = " (this verb takes one operation)" if "," in text else ""
            raise argparse.ArgumentTypeError(
                f"invalid choice: '{text}'{many}; allowed: {', '.join(allowed)}")
        return text
    parse.__name__ = "operation"
    return parse


def add_ops(p: argparse.ArgumentParser, help: str, *, one: list[str] | None = None,
            dest: str = "ops", **kwargs) -> None:
    """--ops, with --op a hidden alias. one=ALLOWED: the verb takes one operation from
    ALLOWED (dest `op`); else a comma-separated list the verb splits."""
    if one is not None:
        kwargs.setdefault("type", op_name(one))
        kwargs.setdefault("metavar", "{" + ",".join(one) + "}")  # as argparse shows choices
    p.add_argument("--ops", dest=dest, help=help, **kwargs)
    hidden(p, "--op", dest=dest, type=kwargs.get("type"))


def add_algs(p: argparse.ArgumentParser, help: str, *, dest: str = "algs", **kwargs) -> None:
    """--algs, with --alg a hidden alias."""
    p.add_argument("--algs", dest=dest, help=help, **kwargs)
    hidden(p, "--alg", dest=dest)


def add_table(p: argparse.ArgumentParser, help: str, *, positional: bool = False) -> None:
    """--table FILE; positional=True: the old positional TABLE still works too (one of the two
    is needed; resolve_args joins them into `table`)."""
    p.add_argument("--table", metavar="FILE", default=None, help=help)
    if positional:
        p.add_argument("table_arg", nargs="?", metavar="TABLE", default=None,
                       help="the same as --table FILE (the older spelling)")
        p.set_defaults(table_needed=True)


def add_output(p: argparse.ArgumentParser, help: str, *, default: str | None = None,
               metavar: str = "FILE") -> None:
    """-o/--output FILE, the file the verb writes; resolve_args checks before anything runs
    that it can be written."""
    p.add_argument("-o", "--output", metavar=metavar, default=default, help=help)
    writes(p, "output")


def writes(p: argparse.ArgumentParser, *dests: str) -> None:
    """Destinations holding paths the verb writes: checked by resolve_args before it runs."""
    old = p.get_default("writes_to") or ()
    p.set_defaults(writes_to=(*old, *dests))


class JsonFlag(argparse.Action):
    """--json: JSON on stdout. `--json FILE`, bench's older spelling of -o FILE, still
    writes FILE."""

    def __init__(self, option_strings, dest, output_dest: str = "output", **kwargs):
        self.output_dest = output_dest
        kwargs.setdefault("metavar", "FILE")
        super().__init__(option_strings, dest, nargs="?", const=True, default=False, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        if values is True:
            setattr(namespace, self.dest, True)
        else:
            setattr(namespace, self.output_dest, values)


def add_db(p: argparse.ArgumentParser) -> None:
    """--db FILE, the results store this verb reads or writes."""
    p.add_argument("--db", metavar="FILE", default=None, help=DB_HELP)


def cannot_write(path: str | os.PathLike) -> str | None:
    """Why `path` cannot be written as a file (its folder missing or not writable, a folder
    in its place), or None when it can. Checked before any measurement, so that the error
    comes before the work instead of after it."""
    from pathlib import Path

    if str(path) == "-":
        return None
    p = Path(path).expanduser()
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        return "it is a directory"
    if not parent.exists():
        return "no such directory"
    if not parent.is_dir():
        return f"{parent} is not a directory"
    if p.exists():
        if not os.access(p, os.W_OK):
            return "permission denied"
    elif not os.access(parent, os.W_OK | os.X_OK):
        return f"directory {parent} is not writable"
    return None


def check_writable(path: str | os.PathLike | None) -> None:
    """UsageError 'cannot write PATH: why' unless `path` (None: nothing) can be written."""
    if path is None:
        return
    why = cannot_write(path)
    need(why is None, f"cannot write {path}: {why}")


def resolve_args(args: argparse.Namespace) -> None:
    """What every verb's arguments need after parsing and before the verb runs: the table
    given either way, every output path writable (UsageError: one line, exit status 2,
    nothing run or recorded)."""
    if hasattr(args, "table_arg"):
        a, b = args.table_arg, getattr(args, "table", None)
        need(not (a and b and a != b), f"two tables given: {a} and --table {b}; give one")
        args.table = a or b
        if getattr(args, "table_needed", False):
            need(args.table is not None, "a table is needed: --table FILE")
    for dest in getattr(args, "writes_to", ()) or ():
        value = getattr(args, dest, None)
        for path in value if isinstance(value, (list, tuple)) else [value]:
            check_writable(path)
