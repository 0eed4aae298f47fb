"""The shell scripts sent to the guests are files (sectorlab/inguest/sh/), not strings in Python: each is
checked by make check's shellcheck, passes it, and is what the guest is sent (crash/databases.py's
guest_script: the files its header sources, then its own text). MariaDB is started and waited for in
one place, databases.sh, by the crash judges and the cross-check scenarios alike; the move changed no
byte of what the crash judges send. And make check validates every lab definition at the top of
labs/, whatever its name, each of which is valid."""

from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from labtests.support import dbs
from sectorlab import cli
from sectorlab.crash import databases
from sectorlab.guest.scripts import guest_script
from sectorlab.paths import REPO

SH = REPO / "sectorlab" / "inguest" / "sh"
FILES = sorted(SH.glob("*.sh"))
RECIPE = re.search(r"^check:.*?\n((?:\t.*\n)+)", (REPO / "Makefile").read_text(), re.M).group(1)
# The start of mariadbd by hand and its wait, which only databases.sh may hold.
START_LOOP = ("setsid mariadbd", "mariadb-admin --socket")


def _shellcheck() -> str:
    path = shutil.which("shellcheck")
    if path is None:
        pytest.skip("shellcheck is not installed (scripts/bootstrap --all installs it for make check)")
    return path


def _make_words(line_start: str) -> list[str]:
    """The words of the check recipe's line that starts with `line_start`, its continuations joined."""
    text = RECIPE.replace("\\\n", " ")
    line = next((line.strip() for line in text.splitlines() if line.strip().startswith(line_start)), None)
    assert line is not None, f"make check has no line starting {line_start!r}:\n{RECIPE}"
    return line.split()


def test_make_checks_every_script_of_the_folder():
    words = _make_words("shellcheck -x")
    covered = {REPO / p for word in words[2:] for p in glob.glob(word, root_dir=REPO)}
    unchecked = [p.name for p in FILES if p not in covered]
    assert FILES and unchecked == [], f"make check's shellcheck line does not name {unchecked}"


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_it_passes_shellcheck(path):
    proc = subprocess.run([_shellcheck(), "-x", str(path.relative_to(REPO))], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("path", [p for p in FILES if p.name != "databases.sh"],
                         ids=[p.name for p in FILES if p.name != "databases.sh"])
def test_the_text_a_guest_is_sent_passes_shellcheck_too(path):
    """As sent, joined: a variable databases.sh uses is set by the script after it (its header may say
    so only because it is). Excluded: SC2317, the functions of databases.sh a script does not call,
    and SC2012, the one ls there (its header says why), whose directive is in the header not sent."""
    proc = subprocess.run([_shellcheck(), "--shell=sh", "--exclude=SC2317,SC2012", "-"],
                          input=guest_script(path.name), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_each_file_says_what_it_is_and_is_sent_without_its_header(path):
    text = path.read_text()
    lines = text.splitlines()
    assert lines[0] == "#!/bin/sh" and lines[1].startswith("# ") and len(lines[1]) > 20, lines[:2]
    header, _, body = text.partition("\n\n")
    assert guest_script(path.name).endswith("\n" + body)
    assert "#!/bin/sh" not in guest_script(path.name)


def test_the_start_of_mariadbd_and_its_wait_are_in_one_file_only():
    holding = {p.name for p in FILES if any(n in p.read_text() for n in START_LOOP)}
    assert holding == {"databases.sh"}
    here = Path(__file__).resolve()
    in_python = [str(p.relative_to(REPO)) for root in ("sectorlab", "labtests") for p in (REPO / root).rglob("*.py")
                 if p.resolve() != here and any(n in p.read_text() for n in START_LOOP)]
    assert in_python == []


def test_the_crash_judges_and_the_cross_checks_start_mariadb_with_the_same_text():
    shared = guest_script("databases.sh")
    for script in (databases.setup_script(), databases.workload_script(), databases.judge_script(),
                   databases.stop_script(), dbs._MARIADB_START, dbs._MARIADB_STOP):
        assert script.startswith(shared) and script.count(START_LOOP[0]) == 1
    assert 'mariadb_start "$run"' in dbs._MARIADB_START and 'mariadb_kill "$run"' in dbs._MARIADB_STOP


# sha256 of what each function or constant gave when the scripts were strings in Python (the commit
# before the move), for those moved with their text unchanged; a deliberate change to one changes its
# digest here. The cross-checks' MariaDB start and stop now use databases.sh's functions, and their
# disk-name lookup quotes its expansions: tested below by what they do, not by their bytes.
# setup_script and judge_script changed on purpose on 2026-11-29: their CHECKSUMS argument (a
# PostgreSQL judge without data checksums). TRACE_ON and TRACE_OFF changed on purpose on 2026-11-30:
# given a disk, each reads its counters at once after the tracepoint goes on or off; and again later
# that day: each marks the trace on the far side of its read, the tracepoint on around both.
SENT_BEFORE = {
    "setup_script": "992368cbb080ba679e5b182e5eb2d0f3d8293b35bb7fe771c03eeaf26d035b93",
    "workload_script": "905461a4a91a29dd288a85b250ed59d5a5654eba3035129086e42da88fc71db1",
    "judge_script": "d692c164f4143e435c77a74bd5efd956b5281bf1e39fdcbb718c61367429d14f",
    "stop_script": "b93d8a7862239cf631092978d6bd997670902aa591c88b8ebab3c8d0c30d8778",
    "dbs._MOUNT": "61c87d7ee03377e2d0dbf8d06715639c87a27114a03a374c1000e3eab0a76bcb",
    "dbs._UNMOUNT": "190bd8a87db053b425c3f7f95dd944bf3bc26b6ee29a1acb53eb064c6d6e9354",
    "dbs._NOTHING_LEFT": "87b25c613dfa150fc6cdb8e633c33700c8ac683508ff099de4294a72c02a22f3",
    "dbs.TRACE_ON": "fb4a1725dc46a0f349421d4a885f21d75875080ea6c77f58c5009d69e7dcde39",
    "dbs.TRACE_OFF": "3ff534526dd38b4ea1a7615b674a6752b1477900dae781e795045102af10054a",
    "dbs._BATCH": "531c83d673ed1a87ea525025b7d79404381fa892327da1ef442e0463973836f1",
    "dbs._XFS_EACH": "73f660ee50d784ed9281802a97b3459a1288fe0f92d6d68ff79d55a00f438352",
}


@pytest.mark.parametrize("name", SENT_BEFORE)
def test_what_is_sent_is_byte_for_byte_what_the_strings_were(name):
    text = getattr(dbs, name[4:]) if name.startswith("dbs.") else getattr(databases, name)()
    assert hashlib.sha256(text.encode()).hexdigest() == SENT_BEFORE[name]


def test_the_judge_prints_every_line_its_parser_reads():
    judge = databases.judge_script()
    printed = set(re.findall(r'echo "(\w+) ', judge))
    assert printed == {"mounted", "why", "started", "recovery_s", "ids", "sum_k", "count_log", "check", "errors",
                       "restored", "checksum_failures", "checksum_error", "checksums"}
    for line in ('innodb_doublewrite=$3', 'full_page_writes = $2', "CHECK TABLE t, log EXTENDED",
                 "from the doublewrite buffer", "verify_heapam('t')", "pg_checksums\" --check"):
        assert line in judge, line
    workload = databases.workload_script()
    assert "SELECT CONCAT('ack ', $i);" in workload and "SELECT 'ack ' || $i;" in workload
    assert 'echo "CHECKPOINT;"' in workload
    assert "mkfs.ext4 -q -F -b 4096 -E lazy_journal_init=1" in databases.setup_script()


# A mariadbd and a mariadb-admin that start nothing: the server answers (its socket appears) after a
# moment and logs the line the scenarios read, or exits first with an error.
_FAKE_MARIADBD = """#!/bin/sh
cnf=${1#--defaults-file=}; run=${cnf%/my.cnf}
if [ "$FAKE" = exits ]; then echo "[ERROR] fake: cannot start" >> "$run/error.log"; exit 1; fi
sleep 0.3
echo "InnoDB: File system buffers for log disabled (block size=4096 bytes)" >> "$run/error.log"
: > "$run/mariadb.sock"
exec sleep 60
"""
_FAKE_ADMIN = """#!/bin/sh
for a; do case $a in --socket=*) s=${a#--socket=} ;; esac; done
[ -e "$s" ]
"""


@pytest.fixture
def fake_mariadb(tmp_path):
    if shutil.which("setsid") is None:
        pytest.skip("no setsid on this host (util-linux)")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("mariadbd", _FAKE_MARIADBD), ("mariadb-admin", _FAKE_ADMIN), ("chown", "#!/bin/sh\n")):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    (tmp_path / "template").mkdir()
    (tmp_path / "mnt").mkdir()
    return tmp_path, {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def _sh(script: str, *args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-c", script, "xcheck", *args], env=env, capture_output=True, text=True, timeout=60)


def test_the_cross_checks_mariadb_is_waited_for_by_the_shared_loop_and_killed(fake_mariadb):
    tmp, env = fake_mariadb
    run = str(tmp / "run")
    started = _sh(dbs._MARIADB_START, str(tmp / "mnt"), run, "innodb_extra=1", str(tmp / "template"), env=env)
    assert (started.returncode, started.stdout, started.stderr) == (0, "", "")
    assert (tmp / "run" / "my.cnf").read_text().endswith("innodb_flush_log_at_trx_commit=1\ninnodb_extra=1\n")
    pid = int((tmp / "run" / "launched.pid").read_text())
    stopped = _sh(dbs._MARIADB_STOP, run, env=env)
    assert stopped.returncode == 0, stopped.stderr
    assert dbs.mariadb_log_block_size(stopped.stdout) == (4096, "disabled")
    assert not (tmp / "run").exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_mariadbd_that_exits_first_is_said_with_its_error_log(fake_mariadb):
    tmp, env = fake_mariadb
    run = str(tmp / "run")
    started = _sh(dbs._MARIADB_START, str(tmp / "mnt"), run, "", str(tmp / "template"), env={**env, "FAKE": "exits"})
    assert started.returncode == 1
    assert started.stderr.startswith("mariadbd exited before it answered; the last lines of its error log:\n")
    assert "[ERROR] fake: cannot start" in started.stderr
    assert _sh(dbs._MARIADB_STOP, run, env=env).stdout == "[ERROR] fake: cannot start\n"


LABS = sorted((REPO / "labs").glob("*.toml"))


def test_make_check_validates_every_lab_definition_at_the_top_of_labs():
    """By name or by a loop over a glob: a lab file added to labs/ is validated without a Makefile edit."""
    text = RECIPE.replace("\\\n", " ")
    covered = set()
    for line in text.splitlines():
        if "lab validate --offline" not in line:
            continue
        loop = re.search(r"for (\w+) in (\S+); do .*lab validate --offline \"\$\$\1\"", line)
        if loop:
            covered |= {REPO / p for p in glob.glob(loop.group(2), root_dir=REPO)}
        covered |= {REPO / m for m in re.findall(r"lab validate --offline (labs/\S+\.toml)", line)}
    unchecked = [str(p.relative_to(REPO)) for p in LABS if p not in covered]
    assert LABS and unchecked == [], f"make check does not validate {unchecked}"


@pytest.mark.parametrize("path", LABS, ids=[p.stem for p in LABS])
def test_each_lab_definition_is_valid(path, capsys):
    assert cli.main(["lab", "validate", "--offline", str(path)]) == 0, capsys.readouterr().err
