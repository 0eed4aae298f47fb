"""`sectorlab bench-writer`: redo-writer against fio, side by side, on the same file in one run.

redo-writer with one session and one 4 KiB write per commit (4080 bytes of redo + the 16-byte
block header) against `fio --rw=write --bs=4k --direct=1 --sync=1 --ioengine=psync` for the same
time on the same file, written out beforehand; rounds alternate in ABBA order so that drift hits
both alike. Reports the median write IOPS of each, their ratio, the spread, and CPU time per
write (from the children's rusage around each run).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from ... import lab, paths, redowriter
from ...devices.build import REDO_WRITER
from ...errors import SectorlabError
from ...lab.record import Timing


def _timed(cmd: list[str]) -> tuple[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SectorlabError(f"'{' '.join(cmd)}' exited {proc.returncode}: {proc.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return proc.stdout, cpu


def redo_writer_round(target: Path, seconds: int, size: int, spin_us: int = 0) -> dict:
    out, cpu = _timed([str(REDO_WRITER), *redowriter.run_args(str(target), 4096, sessions=1, redo_per_txn=4080,
                                                              seconds=seconds, log_size=size)[1:],
                       "--spin-us", str(spin_us), "--output", "json"])
    data = json.loads(out)
    return {"iops": data["writes"] / data["elapsed_s"], "writes": data["writes"], "cpu_us_per_write":
            1e6 * cpu / max(data["writes"], 1), "p99_us": data["log_file_parallel_write"]["p99_us"]}


def fio_round(target: Path, seconds: int, size: int) -> dict:
    out, cpu = _timed(["fio", "--name=redo", f"--filename={target}", "--rw=write", "--bs=4k", "--direct=1",
                       "--sync=1", "--ioengine=psync", f"--size={size}", f"--runtime={seconds}", "--time_based",
                       "--output-format=json"])
    job = json.loads(out)["jobs"][0]["write"]
    return {"iops": job["iops"], "writes": job["total_ios"], "cpu_us_per_write": 1e6 * cpu / max(job["total_ios"], 1),
            "p99_us": job["clat_ns"]["percentile"].get("99.000000", 0) / 1000.0}


def bench_writer(directory: Path, rounds: int = 3, seconds: int = 10, size: int = 256 << 20,
                 spin_us: int = 0) -> dict:
    # a directory, or a new name under one: /dev/null, a file or a FIFO is one line, not a traceback
    paths.results_root(directory, "--dir")
    if not REDO_WRITER.exists():
        raise SectorlabError(f"{REDO_WRITER} is not built: run 'make -C redo-writer'")
    if shutil.which("fio") is None:
        raise SectorlabError("fio is not installed; run scripts/bootstrap")
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sectorlab-bench-", dir=directory) as tmp:
        target = Path(tmp) / "redo.log"
        # Written out, not fallocated: an fallocated extent is "unwritten", and the first O_DSYNC
        # write into it also commits the extent's conversion, so whichever tool ran first paid
        # for that on most of the file. Written, neither tool pays for the file's layout.
        chunk = bytes(1 << 20)
        with open(target, "wb") as f:
            for _ in range(size // len(chunk)):
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        rw, fio = [], []
        for r in range(rounds):  # ABBA order, so that drift within a round pair hits both alike
            if r % 2 == 0:
                rw.append(redo_writer_round(target, seconds, size, spin_us))
                fio.append(fio_round(target, seconds, size))
            else:
                fio.append(fio_round(target, seconds, size))
                rw.append(redo_writer_round(target, seconds, size, spin_us))

    def summary(runs: list[dict]) -> dict:
        iops = [r["iops"] for r in runs]
        return {"iops_median": statistics.median(iops), "iops_min": min(iops), "iops_max": max(iops),
                "cpu_us_per_write_median": statistics.median(r["cpu_us_per_write"] for r in runs),
                "p99_us_median": statistics.median(r["p99_us"] for r in runs), "runs": runs}

    result = {"directory": str(directory), "rounds": rounds, "seconds": seconds, "size": size, "spin_us": spin_us,
              "redo_writer": summary(rw), "fio": summary(fio)}
    result["iops_ratio"] = result["redo_writer"]["iops_median"] / result["fio"]["iops_median"]
    result["cpu_ratio"] = (result["redo_writer"]["cpu_us_per_write_median"]
                           / result["fio"]["cpu_us_per_write_median"])
    return result


def bench_lab_up(lab_file, rounds: int, progress) -> dict:
    """Cold and warm lab-up side by side: each round brings the lab up cold (booting, and saving
    a fresh state), down, up warm (restoring that state), down. Times are to every disk verified.
    `lab_file`: the lab (a labdef.Lab, read once by the CLI) or its path."""
    if rounds < 1:
        raise SectorlabError(f"--rounds {rounds}: expected at least 1")
    runs: dict[str, list[Timing]] = {"cold": [], "warm": []}
    lab.down(lab_file, progress)
    try:
        for r in range(rounds):
            for path in ("cold", "warm"):
                progress(f"round {r + 1}/{rounds}: {path} lab-up")
                data = lab.up(lab_file, progress, cold=(path == "cold"), require_warm=(path == "warm"))
                runs[path].append(data.timing)
                lab.down(lab_file, progress)
    except BaseException:
        lab.down(lab_file, progress)  # a failed lab-up leaves the lab up
        raise
    result = {}
    for path, timings in runs.items():
        totals = [t.total_s for t in timings]
        phases = sorted({p for t in timings for p in t.phases})
        result[path] = {"totals_s": totals, "median_s": statistics.median(totals),
                        "min_s": min(totals), "max_s": max(totals),
                        "phase_medians_s": {p: statistics.median(t.phases.get(p, 0.0) for t in timings)
                                            for p in phases}}
    result["warm_over_cold"] = result["warm"]["median_s"] / result["cold"]["median_s"]
    return result
