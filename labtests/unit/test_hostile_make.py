"""Make variables as a hostile or careless user sets them (make bench RESULTS='a b', make image
GUEST='x; touch f', make scenarios PYTEST_ARGS='-k "a', or the same in the environment): each
reaches its program as exactly one argument (none when empty), taken as written. Neither make
(`$(shell ...)`) nor the shell (`;`, `$(...)`, backticks, globs, newlines) reads it as code, and a
value that starts with '-' is not an option. PYTEST_ARGS alone is several arguments: split as a
shell splits words (quotes and backslashes group), never run; unbalanced quotes are one line.

Two kinds of test. The real programs: make runs sectorlab or pytest, which refuse the value in one
line that names all of it, before anything starts. The exact words: make runs stand-ins for
sectorlab and pytest (make VENV=DIR, a virtualenv whose sectorlab and pytest write down the
arguments and the environment they were given, and start nothing), so every target's command line
is checked word for word, `make test`'s whole tree included.

Each explicit case is one input of the campaign (docs/reliability.md counts them); the properties
run any text through the same surfaces."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labtests.support.depth import examples
from sectorlab.paths import REPO

MAKE_DIR = REPO  # where make runs: the checkout's Makefile
# The Makefile's protected variables, as make has them (test_hostile_third_make.py checks that every
# variable a recipe reads is one).
USER_VARS = tuple(subprocess.run(["make", "--no-print-directory", "-s", "--eval", "_vars: ; @echo $(USER_VARS)",
                                  "_vars"], cwd=MAKE_DIR, capture_output=True, text=True, check=True,
                                 env={k: v for k, v in os.environ.items() if not k.startswith("MAKE")}).stdout.split())
# make strips a command-line value's leading white space (its own syntax); the rest is kept as written.
MAKE_STRIPS = " \t\n\v\f\r"
PROPERTY = settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                             HealthCheck.function_scoped_fixture])


def _env(**extra: str) -> dict[str, str]:
    """This process's environment without what a surrounding make (make test VAR=...) or the caller
    set for the variables under test, with `extra`."""
    drop = {*USER_VARS, "SECTORLAB_LAB_SUFFIX", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(extra)
    return env


def _checkout() -> tuple[list[str], list[str]]:
    """What a value run as code would most likely leave behind: entries in the directory make runs
    in, and in results/. Not the caches pytest and hypothesis make there: make test's other lane
    runs pytest in the same checkout at the same time, and a fresh clone gets them then."""
    results = MAKE_DIR / "results"
    return (sorted(set(os.listdir(MAKE_DIR)) - TOOL_CACHES), sorted(os.listdir(results)) if results.is_dir() else [])


TOOL_CACHES = {".pytest_cache", ".hypothesis"}


def _make(args: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", "-s", *args], cwd=MAKE_DIR, env=env,
                          capture_output=True, text=True, timeout=timeout)


# --- the real programs: one line, nothing run, nothing written ---------------------------------------

# (id, make arguments, environment, who says it, what the line says); {M} is a file the value would
# create if run as code, {T} a directory of the test's own. Targets and values are chosen to be
# refused before any lab, VM, image build or bench starts, with this Makefile and with one that
# pastes the values into the shell (which runs the marker's `touch` instead).
REAL = [
    ("lab-status-space", ["lab-status", "LAB=/nonexistent/x y/lab.toml"], {}, "sectorlab",
     "lab definition /nonexistent/x y/lab.toml:"),
    ("lab-status-semicolon", ["lab-status", "LAB=/nonexistent/lab.toml; touch {M}"], {}, "sectorlab",
     "/nonexistent/lab.toml; touch {M}"),
    ("lab-status-option", ["lab-status", "LAB=--help"], {}, "sectorlab", "lab definition --help:"),
    ("lab-status-make-shell", ["lab-status", "LAB=/nonexistent/$(shell touch {M})"], {}, "sectorlab",
     "/nonexistent/$(shell touch {M})"),
    ("lab-suffix-make-shell", ["lab-status", "LAB_SUFFIX=-x$(shell touch {M})"], {}, "sectorlab",
     "SECTORLAB_LAB_SUFFIX='-x$(shell touch {M})'"),
    ("env-lab-suffix-make-shell", ["lab-status"], {"SECTORLAB_LAB_SUFFIX": "-x$(shell touch {M})"}, "sectorlab",
     "SECTORLAB_LAB_SUFFIX='-x$(shell touch {M})'"),
    ("env-cache-make-shell", ["-o", "bootstrap", "lab-status", "LAB=/nonexistent/lab.toml"],
     {"SECTORLAB_CACHE": "{T}/cache$(shell touch {M})"}, "sectorlab", "/nonexistent/lab.toml"),
    ("bench-preset-semicolon", ["bench", "PRESET=nosuch; touch {M}"], {}, "sectorlab",
     "preset file nosuch; touch {M} does not exist"),
    ("bench-preset-backticks", ["bench", "PRESET=nosuch`touch {M}`"], {}, "sectorlab", "nosuch`touch {M}`"),
    ("bench-preset-dollar-dollar", ["bench", "PRESET=nosuch$$(touch {M})"], {}, "sectorlab",
     "nosuch$$(touch {M})"),
    ("bench-preset-make-shell", ["bench", "PRESET=nosuch$(shell touch {M})"], {}, "sectorlab",
     "nosuch$(shell touch {M})"),
    ("bench-preset-option", ["bench", "PRESET=--list"], {}, "sectorlab", "unknown preset '--list'"),
    ("bench-results-space", ["bench", "PRESET=nosuch", "RESULTS={T}/a b"], {}, "sectorlab",
     "unknown preset 'nosuch'"),
    ("bench-results-semicolon", ["bench", "PRESET=nosuch", "RESULTS=x; touch {M}"], {}, "sectorlab",
     "unknown preset 'nosuch'"),
    ("env-results-semicolon", ["bench", "PRESET=nosuch"], {"RESULTS": "x; touch {M}"}, "sectorlab",
     "unknown preset 'nosuch'"),
    ("bench-duration-semicolon", ["bench", "PRESET=nosuch", "DURATION=3; touch {M}"], {}, "sectorlab",
     "invalid int value: '3; touch {M}'"),
    ("bench-warmup-space", ["bench", "PRESET=nosuch", "WARMUP=1 2"], {}, "sectorlab", "invalid int value: '1 2'"),
    ("bench-repeats-pipe", ["bench", "PRESET=nosuch", "REPEATS=2|touch {M}"], {}, "sectorlab",
     "invalid int value: '2|touch {M}'"),
    ("bench-seed-or", ["bench", "PRESET=nosuch", "ORDER_SEED=5 || touch {M}"], {}, "sectorlab",
     "invalid int value: '5 || touch {M}'"),
    ("bench-seed-make-shell", ["bench", "PRESET=nosuch", "ORDER_SEED=$(shell touch {M})5"], {}, "sectorlab",
     "invalid int value: '$(shell touch {M})5'"),
    ("image-guest-semicolon", ["image", "GUEST=nosuch; touch {M}"], {}, "sectorlab",
     "unknown guest 'nosuch; touch {M}'"),
    ("image-guest-space", ["image", "GUEST=nosuch other"], {}, "sectorlab", "unknown guest 'nosuch other'"),
    ("image-guest-option", ["image", "GUEST=--help"], {}, "sectorlab", "unknown guest '--help'"),
    ("image-guest-newline", ["image", "GUEST=nosuch\ntouch {M}"], {}, "sectorlab",
     "unknown guest 'nosuch\\ntouch {M}'"),
    ("scenarios-semicolon", ["scenarios", "PYTEST_ARGS=/nonexistent/x; touch {M}"], {}, "pytest",
     "file or directory not found: /nonexistent/x;"),
    ("scenarios-command-substitution", ["scenarios", "PYTEST_ARGS=/nonexistent/x$(touch {M})"], {}, "pytest",
     "file or directory not found: /nonexistent/x$(touch"),
    ("scenarios-backticks", ["scenarios", "PYTEST_ARGS=/nonexistent/x`touch {M}`"], {}, "pytest",
     "file or directory not found: /nonexistent/x`touch"),
    ("scenarios-quoted-space", ["scenarios", "PYTEST_ARGS='/nonexistent/a b' -q"], {}, "pytest",
     "file or directory not found: /nonexistent/a b"),
    ("scenarios-unbalanced-quote", ["scenarios", "PYTEST_ARGS=-k 'a"], {}, "make",
     "make: PYTEST_ARGS=\"-k 'a\": No closing quotation; expected pytest's arguments quoted as in a shell"),
    ("bench-check-semicolon", ["bench-check", "PYTEST_ARGS=/nonexistent/x; touch {M}"], {}, "pytest",
     "file or directory not found: /nonexistent/x;"),
    ("faults-unbalanced-quote", ["faults", "PYTEST_ARGS=-k \"a or b"], {}, "make",
     "make: PYTEST_ARGS='-k \"a or b': No closing quotation"),
    ("probe-target-semicolon", ["probe", "TARGET=/nonexistent/x; touch {M}"], {}, "sectorlab",
     "probe target /nonexistent/x; touch {M}: No such file or directory"),
    ("probe-samples-pipe", ["probe", "TARGET={T}", "SAMPLES=20|touch {M}"], {}, "sectorlab",
     "'20|touch {M}': expected a whole number from 20 to 2000"),
]
# A value with a line break reaches sectorlab whole, and its one line shows the break escaped (\\n).
REAL += [
    ("lab-status-newline", ["lab-status", "LAB=/nonexistent/a\ntouch {M}"], {}, "sectorlab", "/nonexistent/a"),
    ("bench-preset-path-newline", ["bench", "PRESET=nosuch/\ntouch {M}"], {}, "sectorlab", "nosuch/"),
]
# These also run make's bootstrap first, as a user's make does; the others skip it (-o bootstrap: it
# takes a second and sees none of the variables).
THROUGH_BOOTSTRAP = {"lab-status-space", "bench-preset-semicolon", "image-guest-semicolon",
                     "scenarios-semicolon"}


@pytest.mark.parametrize("args, env, who, says", [
    pytest.param(*c[1:], id=c[0]) for c in REAL])
def test_a_hostile_make_variable_is_refused_whole(tmp_path, request, args, env, who, says):
    marker = tmp_path / "PWNED"
    mine = tmp_path / "t"
    mine.mkdir()

    def fill(text: str) -> str:
        return text.replace("{M}", str(marker)).replace("{T}", str(mine))

    before = _checkout()
    skip = [] if request.node.callspec.id in THROUGH_BOOTSTRAP or "-o" in args else ["-o", "bootstrap"]
    proc = _make([*skip, *map(fill, args)], _env(**{k: fill(v) for k, v in env.items()}))
    said = proc.stdout + proc.stderr
    assert proc.returncode == 2, said
    assert "Traceback" not in said, said
    assert not marker.exists(), f"the value ran as code: {said}"
    assert list(mine.iterdir()) == [] and _checkout() == before, said
    # One line (make's own "make: ***" and the bootstrap's progress aside), from the program that refused.
    ours = [line for line in proc.stderr.split("\n") if line and not line.startswith(("make: ***", "bootstrap: "))]
    assert len(ours) == 1 and fill(says) in ours[0], said
    assert ours[0].startswith({"sectorlab": "sectorlab", "make": "make: PYTEST_ARGS=", "pytest": "ERROR: "}[who]), said


# --- the exact words: stand-ins for sectorlab and pytest ----------------------------------------------
# The stand-ins start without site (-S): they need only the standard library, and make test runs a hundred.

STUB = """#!{python} -S
import json, os, sys
with open(os.environ["STUB_LOG"], "a", encoding="utf-8") as f:
    f.write(json.dumps({{"argv": [os.path.basename(sys.argv[0]), *sys.argv[1:]],
                         "env": {{k: os.environ.get(k) for k in ("SECTORLAB_LAB_FILE", "SECTORLAB_GUEST",
                                                                 "SECTORLAB_LAB_SUFFIX")}}}}) + "\\n")
sys.exit(int(os.environ.get("STUB_STATUS_" + os.path.basename(sys.argv[0]).upper(), "0")))
"""


@pytest.fixture(scope="module")
def stubs(tmp_path_factory) -> Path:
    """A virtualenv for make VENV=...: sectorlab and pytest record what they were given; python is
    the project's (make splits PYTEST_ARGS with it)."""
    venv = tmp_path_factory.mktemp("stub-venv")
    (venv / "bin").mkdir()
    for name in ("sectorlab", "pytest"):
        (venv / "bin" / name).write_text(STUB.format(python=sys.executable))
        (venv / "bin" / name).chmod(0o755)
    (venv / "bin" / "python").symlink_to(REPO / ".venv" / "bin" / "python")
    return venv


def _stubbed(stubs: Path, args: list[str], env: dict[str, str] | None = None, bootstrap: bool = False,
             **status: int) -> tuple[subprocess.CompletedProcess, list[dict], Path]:
    """make ARGS with the stand-ins: what it printed, each program's argv and environment in order,
    and a directory of the run's own (empty unless a value ran as code: the values' `touch` target it)."""
    run = Path(tempfile.mkdtemp(dir=stubs))
    log = run / f"calls-{uuid.uuid4().hex}.jsonl"
    extra = {"STUB_LOG": str(log), **{f"STUB_STATUS_{k.upper()}": str(v) for k, v in status.items()}}
    proc = _make([*([] if bootstrap else ["-o", "bootstrap"]), f"VENV={stubs}",
                  *[a.replace("{M}", str(run / "PWNED")) for a in args]],
                 _env(**extra, **{k: v.replace("{M}", str(run / "PWNED")) for k, v in (env or {}).items()}))
    calls = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []
    log.unlink(missing_ok=True)
    assert not (run / "PWNED").exists(), f"a value ran as code: {proc.stdout}{proc.stderr}"
    assert list(run.iterdir()) == [], list(run.iterdir())
    run.rmdir()
    return proc, calls, run


def _call(argv: list[str], lab_file: str | None = None, guest: str | None = None, suffix: str = "") -> dict:
    return {"argv": argv, "env": {"SECTORLAB_LAB_FILE": lab_file, "SECTORLAB_GUEST": guest,
                                  "SECTORLAB_LAB_SUFFIX": suffix}}


HOSTILE_LAB = "/tmp/x y; touch {M}"
HOSTILE_PYTEST = "-k 'a or b' ; $(touch {M}) `touch {M}` * \"c d\" e\\ f"
SPLIT = ["-k", "a or b", ";", "$(touch", "{M})", "`touch", "{M}`", "*", "c d", "e f"]


def _filled(calls: list[dict], marker: str) -> list[dict]:
    return json.loads(json.dumps(calls).replace("{M}", marker.replace("\\", "\\\\").replace('"', '\\"')))


# (id, make arguments, environment, the calls expected, in order)
EXACT = [
    ("lab-status", ["lab-status", f"LAB={HOSTILE_LAB}"], {},
     [_call(["sectorlab", "lab", "status", f"--lab={HOSTILE_LAB}"])]),
    ("lab-status-empty", ["lab-status", "LAB="], {}, [_call(["sectorlab", "lab", "status"])]),
    ("lab-up-make-shell", ["lab-up", "LAB=$(shell touch {M})"], {},
     [_call(["sectorlab", "lab", "up", "--lab=$(shell touch {M})"])]),
    ("lab-down-env", ["lab-down"], {"LAB": "$$(touch {M}) a"},
     [_call(["sectorlab", "lab", "down", "--lab=$$(touch {M}) a"])]),
    ("image-quotes", ["image", "GUEST=a'b\"c\\"], {}, [_call(["sectorlab", "image", "build", "--guest=a'b\"c\\"])]),
    ("smoke", ["smoke", "GUEST=g; touch {M}"], {},
     [_call(["sectorlab", "image", "build", "--guest=g; touch {M}"]),
      _call(["pytest", "-m", "vm", "labtests"], guest="g; touch {M}")]),
    ("bench-every-variable", ["bench", "PRESET=-p $(shell touch {M})", "DURATION=3;touch {M}", "WARMUP=`touch {M}`",
                              "REPEATS=-2", "RESULTS=/tmp/r s", "ORDER_SEED=--list", "CLOCK=virtual;touch {M}",
                              "WAKEUP_US=$(shell touch {M})", "LOG_WRITER_CPU_US=host"], {},
     [_call(["sectorlab", "bench", "--clock=virtual;touch {M}", "--wakeup-us=$(shell touch {M})",
             "--log-writer-cpu-us=host", "--duration=3;touch {M}", "--warmup=`touch {M}`", "--repeats=-2",
             "--results=/tmp/r s", "--seed=--list", "--", "-p $(shell touch {M})"])]),
    ("bench-no-preset", ["bench", "RESULTS=*"], {}, [_call(["sectorlab", "bench", "--results=*"])]),
    ("bench-lab-up", ["bench-lab-up", "LAB=-h"], {},
     [_call(["sectorlab", "bench-lab-up", "--lab=-h", "--rounds", "3"])]),
    ("bench-boot", ["bench-boot", "GUEST=*"], {},
     [_call(["sectorlab", "image", "build", "--guest=*"]),
      _call(["sectorlab", "image", "boot-time", "--guest=*", "--runs", "3"])]),
    ("scenarios", ["scenarios", "LAB=a b", f"PYTEST_ARGS={HOSTILE_PYTEST}"], {},
     [_call(["pytest", "-m", "lab", "labtests", *SPLIT], lab_file="a b")]),
    ("bench-check", ["bench-check", f"PYTEST_ARGS={HOSTILE_PYTEST}"], {},
     [_call(["pytest", "-m", "bench", "labtests", *SPLIT])]),
    ("faults", ["faults", f"LAB={HOSTILE_LAB}", f"PYTEST_ARGS={HOSTILE_PYTEST}"], {},
     [_call(["sectorlab", "lab", "up", f"--lab={HOSTILE_LAB}"]),
      _call(["pytest", "-m", "faults", "labtests", *SPLIT], lab_file=HOSTILE_LAB),
      _call(["sectorlab", "lab", "down", f"--lab={HOSTILE_LAB}"])]),
    ("test-write-units", ["test-write-units", f"LAB={HOSTILE_LAB}", "PYTEST_ARGS=-k '$(touch {M})'"], {},
     [_call(["sectorlab", "lab", "up", "--lab", "labs/write-units.toml"]),
      _call(["pytest", "--durations=8", "-m", "lab", "labtests/geometry/test_sector_detection.py",
             "labtests/rules/test_redo_blocksize.py", "labtests/geometry/test_provision_redo_disk.py",
             "labtests/rules/test_redo_writer_lab.py", "-k", "$(touch {M})"],
            lab_file="labs/write-units.toml"),
      _call(["sectorlab", "lab", "down", "--lab", "labs/write-units.toml"])]),
    ("test-crosscheck-suffix", ["test-crosscheck", "LAB_SUFFIX=-j$(shell touch {M})"], {},
     [_call(["sectorlab", "lab", "up"], suffix="-j$(shell touch {M})-db"),
      _call(["pytest", "--durations=8", "-m", "lab and crosscheck", "labtests"], lab_file="",
            suffix="-j$(shell touch {M})-db"),
      _call(["sectorlab", "lab", "down"], suffix="-j$(shell touch {M})-db")]),
    ("env-lab-suffix", ["lab-status"], {"SECTORLAB_LAB_SUFFIX": "-x`touch {M}`"},
     [_call(["sectorlab", "lab", "status"], suffix="-x`touch {M}`")]),
]


@pytest.mark.parametrize("args, env, calls", [c[1:] for c in EXACT], ids=[c[0] for c in EXACT])
def test_each_program_gets_each_value_as_one_word(stubs, args, env, calls):
    proc, got, run = _stubbed(stubs, args, env)
    assert proc.returncode == 0, proc.stderr
    assert got == _filled(calls, str(run / "PWNED")), proc.stderr


def test_pytest_args_that_select_none_are_said_as_written(stubs):
    """pytest's "no tests collected" after PYTEST_ARGS narrowed a lab's scenarios: make says the
    value as it was written (not run) and passes."""
    proc, got, run = _stubbed(stubs, ["faults", "PYTEST_ARGS=-k x$(touch {M}) `touch {M}`"], pytest=5)
    marker = run / "PWNED"
    assert proc.returncode == 0, proc.stderr
    assert (f"make: PYTEST_ARGS=-k x$(touch {marker}) `touch {marker}` selects none of these scenarios "
            f"(-m faults labtests)") in proc.stdout, proc.stdout
    assert [c["argv"][:3] for c in got] == [["sectorlab", "lab", "up"], ["pytest", "-m", "faults"],
                                             ["sectorlab", "lab", "down"]]


def test_pytest_args_that_do_not_split_start_no_lab(stubs):
    proc, got, _ = _stubbed(stubs, ["test-labs", "PYTEST_ARGS=-k \"a\\"])
    assert proc.returncode == 2 and got == [], (proc.stderr, got)
    ours = [line for line in proc.stderr.splitlines() if not line.startswith("make: ***")]
    assert ours == ["make: PYTEST_ARGS='-k \"a\\\\': No escaped character; expected pytest's arguments quoted as "
                    "in a shell (PYTEST_ARGS=\"-k 'a or b'\"): close the quote, or put a backslash before a quote or "
                    "backslash that is text"], ours


def test_make_test_hands_every_program_the_values_whole(stubs):
    """The whole of make test (its lanes, their sub-makes, the labs of their own) with a hostile value
    in each variable: every lab-up and lab-down names the lab whole (or its own file), every pytest
    gets PYTEST_ARGS's words, the guest and the lab file in its environment, every program the suffix."""
    lab, guest, suffix = "/tmp/l b;touch {M}", "g`touch {M}`", "-s$(shell touch {M})"
    proc, got, run = _stubbed(stubs, ["test", f"LAB={lab}", f"GUEST={guest}", "PYTEST_ARGS=-k 'x y' $(touch {M})",
                                      f"LAB_SUFFIX={suffix}"], bootstrap=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    marker = str(run / "PWNED")
    lab, guest, suffix = (v.replace("{M}", marker) for v in (lab, guest, suffix))
    own = {"labs/write-units.toml", "labs/behaviours.toml"}
    labs_up = []
    for c in got:
        argv, env = c["argv"], c["env"]
        assert env["SECTORLAB_LAB_SUFFIX"] in (suffix, suffix + "-db"), c
        if argv[:2] == ["sectorlab", "lab"]:
            named = [a for a in argv[3:] if a != "--require-warm"]
            assert named in ([f"--lab={lab}"], ["--lab", "labs/write-units.toml"], ["--lab", "labs/behaviours.toml"]), c
            labs_up += [argv[2]]
        elif argv[:2] == ["sectorlab", "image"]:
            assert argv == ["sectorlab", "image", "build", f"--guest={guest}"], c
        elif "-m" in argv and argv[argv.index("-m") + 1].startswith("lab"):
            assert argv[-4:] == ["-k", "x y", "$(touch", f"{marker})"], c
            assert env["SECTORLAB_LAB_FILE"] in (lab, *own), c
        elif argv[1:3] == ["-m", "vm"]:
            assert env["SECTORLAB_GUEST"] == guest, c
    assert labs_up.count("up") == labs_up.count("down") == 5, labs_up


# --- properties: any text, any variable, either way a user sets it -------------------------------------

def _one(var: str, target: str, argv: list[str], prefix: list[str] = (), **env_of: str):
    """A surface: make TARGET VAR=value; the calls expected for a value (None: empty)."""
    def calls(value: str | None) -> list[dict]:
        words = [f"{w}{value}" if w.endswith("=") else w for w in argv] if value else [w for w in argv
                                                                                    if not w.endswith("=")]
        env = {k: (value or "") if v == "$" else v for k, v in env_of.items()}
        return [*prefix, _call(words, **env)]
    return var, target, calls


SURFACES = [
    _one("LAB", "lab-status", ["sectorlab", "lab", "status", "--lab="]),
    _one("LAB", "bench-lab-up", ["sectorlab", "bench-lab-up", "--lab=", "--rounds", "3"]),
    _one("GUEST", "image", ["sectorlab", "image", "build", "--guest="]),
    _one("DURATION", "bench", ["sectorlab", "bench", "--duration="]),
    _one("WARMUP", "bench", ["sectorlab", "bench", "--warmup="]),
    _one("REPEATS", "bench", ["sectorlab", "bench", "--repeats="]),
    _one("RESULTS", "bench", ["sectorlab", "bench", "--results="]),
    _one("ORDER_SEED", "bench", ["sectorlab", "bench", "--seed="]),
    _one("LAB_SUFFIX", "lab-status", ["sectorlab", "lab", "status"], suffix="$"),
    _one("LAB", "scenarios", ["pytest", "-m", "lab", "labtests"], lab_file="$"),
]
SHELLISH = st.text(alphabet="ab -;|&$()`'\"\\<>*?[]{}~#!=%:,\n\t", max_size=30)
ANY_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=30)


@PROPERTY
@given(surface=st.sampled_from(SURFACES + [("PRESET", "bench", None)]), value=st.one_of(SHELLISH, ANY_TEXT),
       channel=st.sampled_from(["command line", "environment"]))
def test_any_value_reaches_its_program_as_one_word(stubs, surface, value, channel):
    var, target, calls = surface
    if channel == "command line":
        proc, got, _ = _stubbed(stubs, [target, f"{var}={value}"])
        value = value.lstrip(MAKE_STRIPS)
    else:
        proc, got, _ = _stubbed(stubs, [target], {var: value})
    assert proc.returncode == 0, proc.stderr
    if var == "PRESET":  # a positional argument, after the options' end
        assert got == [_call(["sectorlab", "bench", *(["--", value] if value else [])])], got
    else:
        assert got == calls(value), (got, value)


@PROPERTY
@given(value=st.one_of(SHELLISH, st.text(alphabet="ab '\"\\ ;$()", max_size=20)),
       target=st.sampled_from(["scenarios", "bench-check", "faults"]))
def test_any_pytest_args_are_their_shell_words_or_one_line(stubs, value, target):
    mark = {"scenarios": "lab", "bench-check": "bench", "faults": "faults"}[target]
    proc, got, _ = _stubbed(stubs, [target, f"PYTEST_ARGS={value}"])
    value = value.lstrip(MAKE_STRIPS)
    try:
        words = shlex.split(value)
    except ValueError:
        assert proc.returncode == 2 and got == [], (proc.stderr, got)
        ours = [line for line in proc.stderr.splitlines() if not line.startswith("make: ***")]
        assert len(ours) == 1 and ours[0].startswith(f"make: PYTEST_ARGS={value!r}: "), proc.stderr
        return
    assert proc.returncode == 0, proc.stderr
    pytests = [c["argv"] for c in got if c["argv"][0] == "pytest"]
    assert pytests == [["pytest", "-m", mark, "labtests", *words]], (pytests, words)


# The real programs on any text: exit 2 and one line, no traceback, nothing written. The values sit
# where they are refused whatever they are (a preset or guest of no such name, a lab file under a
# directory that does not exist, a bench whose preset is refused), line breaks and all.
REAL_SURFACES = [("lab-status", "LAB", "/nonexistent/", []), ("image", "GUEST", "nosuch-", []),
                 ("bench", "PRESET", "nosuch-", []), ("bench", "RESULTS", "", ["PRESET=nosuch"]),
                 ("bench", "DURATION", "", ["PRESET=nosuch"]), ("bench", "ORDER_SEED", "", ["PRESET=nosuch"])]


@settings(PROPERTY, max_examples=examples(30))
@given(surface=st.sampled_from(REAL_SURFACES), value=st.one_of(SHELLISH, ANY_TEXT))
def test_any_value_is_refused_in_one_line_by_the_real_program(surface, value):
    target, var, prefix, others = surface
    before = _checkout()
    proc = _make(["-o", "bootstrap", target, f"{var}={prefix}{value}", *others], _env(), timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    ours = [line for line in proc.stderr.split("\n") if line and not line.startswith("make: ***")]
    assert len(ours) == 1 and ours[0].startswith("sectorlab"), proc.stderr
    assert _checkout() == before


def test_the_campaign_counts():
    assert len(REAL) == 35 and len(EXACT) == 16
