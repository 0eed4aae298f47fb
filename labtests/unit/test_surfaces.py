"""The third hostile-input campaign: one battery over every surface of the registry
(sectorlab/surfaces.py), and tests that the registry has every surface there is.

Coverage: the real parsers are walked (sectorlab's, redo-check's), the device model's filter is
asked for its keys (`nbdkit --filter=... --help`), redo-writer's option tables are read from its
source and checked against its --help: an option that names a file and is not in the registry, or
an entry the program no longer has, fails naming it.

The battery: each surface against each hostile value that applies to what it names and holds.
What must hold for each: exit status 2 (the model: it does not start), exactly one line on stderr
and it names the value, no traceback, nothing created or changed outside (the case's own
directory, the image cache, the temporary directory, the checkout's results/ and labs/, the served
file's bytes), within CASE_SECONDS. sectorlab's cases run in this process (cli.main) with
everything that would start a process refused and recorded, so that a value wrongly taken cannot
start a lab; redo-writer and the model run for real, with a timeout. Beside the battery, each
entry takes a valid value, so that its refusals are of the value and not of a wrong command line.

Which cases the old code failed, and what each class of them was, is in docs/reliability.md."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from labtests.conftest import require_program
from labtests.unit.report.test_hostile_results import REPORT, appliance_doc, events_text, make_results
from sectorlab import cli, surfaces
from sectorlab.devices import build
from sectorlab.inguest import redocheck
from sectorlab.paths import REPO
from sectorlab.surfaces import (
    DIRECTORY_READ,
    DIRECTORY_WRITTEN,
    FILE_WRITTEN,
    MODEL_FILE,
    SURFACES,
    Surface,
)

CASE_SECONDS = 20
FILTER = REPO / "devicemodel" / "sectorlab-model.so"
REDO_WRITER = REPO / "redo-writer" / "redo-writer"
INFORMATIONAL = ("sectorlab-model: sleeps end ",)  # the model's line at every start, not an error

# --- coverage: every option that names a file is in the registry --------------------------------

_PATHISH = re.compile(r"\b(files?|dir|directory|preset|lab|events|results|output|path|image|qcow2)\b", re.I)


# The command lines' own number types (cli.whole, cli.fraction, redocheck's _size).
NUMBER_TYPES = ("whole", "fraction", "_size")


def _walk(parser: argparse.ArgumentParser, command: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, (*command, name))
        elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            yield " ".join(command), action


def _option(action: argparse.Action) -> str:
    if not action.option_strings:
        return action.dest
    return max(action.option_strings, key=len)


def _names_a_file(action: argparse.Action) -> bool:
    if action.nargs == 0 or action.choices:  # a flag, or one of fixed words
        return False
    if action.type in (int, float) or getattr(action.type, "__qualname__", "").split(".")[0] in NUMBER_TYPES:
        return False
    if action.type in (Path, cli.results_root):
        return True
    said = " ".join(str(x) for x in (action.dest.replace("_", " "), action.metavar, action.help) if x)
    return bool(_PATHISH.search(said))


def _parsers():
    yield from _walk(cli.build_parser())
    yield from _walk(redocheck.build_parser("sectorlab redo-check", from_host=True), ("redo-check",))


def _command_line_coverage() -> dict[str, list]:
    """What is wrong between the command lines and the registry, by kind (each list empty: nothing)."""
    options = {("sectorlab", command, _option(a)) for command, a in _parsers()}
    naming = {("sectorlab", command, _option(a)) for command, a in _parsers() if _names_a_file(a)}
    registered = {s.key for s in SURFACES if s.program == "sectorlab" and not s.option.startswith("$")}
    known = registered | set(surfaces.NOT_FILES)
    return {"options that name a file and are not in sectorlab/surfaces.py": sorted(naming - known),
            "entries of sectorlab/surfaces.py the command line no longer has": sorted(known - options),
            "in SURFACES and NOT_FILES at once": sorted(registered & set(surfaces.NOT_FILES)),
            # The walk must find each: a surface it cannot see is one it would miss when it is new.
            "entries the walk does not take for a file's option (make it see them)": sorted(known - naming)}


def test_every_command_line_option_that_names_a_file_is_a_surface():
    for what, keys in _command_line_coverage().items():
        assert not keys, f"{what}: {keys}"


@pytest.mark.parametrize("how", ["type", "metavar", "help", "positional"])
def test_a_new_option_that_names_a_file_is_found(monkeypatch, how):
    """The walk finds an option it was not told of: a new command's file, however it is declared."""
    real = cli.build_parser

    def build():
        parser = real()
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        p = sub.add_parser("new-command")
        declared = {"type": dict(type=Path), "metavar": dict(metavar="FILE"), "help": dict(help="the file to read")}
        if how == "positional":
            p.add_argument("source", help="where the input directory is")
        else:
            p.add_argument("--source", **declared[how])
        return parser
    monkeypatch.setattr(cli, "build_parser", build)
    assert _command_line_coverage()["options that name a file and are not in sectorlab/surfaces.py"] == [
        ("sectorlab", "new-command", "source" if how == "positional" else "--source")]


def test_the_environment_variables_named_are_read_by_sectorlab():
    source = "".join(p.read_text() for p in (REPO / "sectorlab").rglob("*.py") if p.name != "surfaces.py")
    for s in SURFACES:
        for name, _ in s.env:
            assert f'"{name}"' in source, f"{s.id}: sectorlab reads no {name}"


@pytest.fixture(scope="module")
def built_filter():
    require_program("nbdkit")
    require_program("cc")
    return build.built(build.FILTER)


@pytest.fixture(scope="module")
def built_redo_writer():
    require_program("cc")
    return build.built(build.REDO_WRITER)


def test_every_model_key_that_names_a_file_is_a_surface(built_filter):
    out = subprocess.run(["nbdkit", f"--filter={built_filter}", "memory", "1M", "--help"], capture_output=True,
                         text=True, timeout=30)
    text = out.stdout + out.stderr
    assert "filter: sectorlab-model" in text, text[-500:]
    own = text.split("filter: sectorlab-model", 1)[1].split("\nplugin:", 1)[0]
    keys = set(re.findall(r"(?<![\w.-])([a-z][\w.-]*)=(?:FILE|PATH)\b", own))
    assert keys, own
    registered = {s.option for s in SURFACES if s.program == "model"}
    assert keys - registered == set(), f"the model's keys that name a file, not in the registry: {keys - registered}"
    assert registered - keys == set(), f"registry keys the model no longer has: {registered - keys}"


def _redo_writer_file_options() -> set[tuple[str, str, str]]:
    """(redo-writer, command, --option) of every option of redo-writer's tables that takes text of
    no fixed choices (a path), and every PATH of its usage lines."""
    source = (REPO / "redo-writer" / "redo-writer.c").read_text()
    found = set()
    for command in ("run", "verify", "io"):
        table = re.search(rf"static struct opt {command}_opts\[\] = \{{(.*?)\n\}};", source, re.S)
        assert table, f"no {command}_opts table in redo-writer.c"
        entries = re.split(r"\n\s*\{\s*(?=\")", table.group(1))
        for entry in entries:
            m = re.match(r'"([\w-]+)",\s*OPT_(STR|NUM|FLAG)\b', entry)
            if m and m.group(2) == "STR" and not re.search(r'"[\w-]+(?:\|[\w-]+)+"', entry):
                found.add(("redo-writer", command, f"--{m.group(1)}"))
    usage = re.findall(r"%s (\w+) ([A-Z]+)\b", source)
    found |= {("redo-writer", command, name) for command, name in usage}
    keys = re.search(r"MODEL_FILE_KEYS\[MODEL_FILES\] = \{([^}]*)\}", source)  # a model: member's files
    assert keys, "no MODEL_FILE_KEYS in redo-writer.c"
    found |= {("redo-writer", "run", f"--target model:{key}=") for key in re.findall(r'"(\w+)"', keys.group(1))}
    return found


def test_every_redo_writer_option_that_names_a_file_is_a_surface(built_redo_writer):
    found = _redo_writer_file_options()
    assert ("redo-writer", "run", "--target") in found, found
    helptext = subprocess.run([str(built_redo_writer), "--help"], capture_output=True, text=True, timeout=30)
    shown = helptext.stdout + helptext.stderr
    for _, command, option in found:
        said = option.partition(":")[2] if option.startswith("--target model:") else option
        assert said in shown, f"redo-writer --help does not show {said} ({command}): is the source read right?"
    registered = {s.key for s in SURFACES if s.program == "redo-writer"}
    assert found - registered == set(), f"redo-writer's file options not in the registry: {found - registered}"
    assert registered - found == set(), f"registry entries redo-writer no longer has: {registered - found}"


def test_the_registry_is_well_formed():
    ids = [s.id for s in SURFACES]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]
    for s in SURFACES:
        assert s.names in surfaces.NAMES, s
        assert sum("{path}" in a for a in s.argv) + sum("{path}" in v for _, v in s.env) == 1, s.id
        unknown = {p for a in (*s.argv, *(v for _, v in s.env)) for p in re.findall(r"\{(\w+)\}", a)} - PLACEHOLDERS
        assert not unknown, f"{s.id}: placeholders the battery does not make: {unknown}"
        assert not s.refuses_existing or s.names == FILE_WRITTEN, s.id
    assert surfaces.markdown().count("\n") == len(SURFACES) + 2


def test_the_docs_show_the_registry():
    text = (REPO / "docs" / "reliability.md").read_text()
    block = re.search(r"<!-- generated by sectorlab/surfaces.py markdown\(\): begin -->\n(.*)<!-- generated by "
                      r"sectorlab/surfaces.py markdown\(\): end -->", text, re.S)
    assert block, "docs/reliability.md: no generated table of the surfaces"
    assert block.group(1) == surfaces.markdown(), (
        "docs/reliability.md's table of the surfaces differs from the registry: paste the output of "
        "python3 -c 'from sectorlab import surfaces; print(surfaces.markdown(), end=\"\")' between the markers")


# --- the battery ---------------------------------------------------------------------------------

PLACEHOLDERS = {"path", "results", "out", "lab", "preset", "crash_preset", "collector", "report", "awr", "events",
                "log", "log2", "requests", "redo_writer", "filter", "served", "socket", "trace", "writelog",
                "unreadable", "floor"}
TEXT_SYNTAX = {"TOML", "JSON", "CSV", "text"}
MODEL_HOSTILE = ("served", "served-hard-link", "served-symlink", "another-model-file", "fifo")
WRITTEN_DIRECTORY_HOSTILE = ("dev-null", "regular-file", "fifo", "under-a-file")


def _named_member(s: Surface) -> bool:
    return s.member.startswith("runs[]")


def hostile_values(s: Surface) -> list[str]:
    """The hostile values that apply to what the surface names and holds."""
    c = s.content
    if s.names == MODEL_FILE:
        return list(MODEL_HOSTILE)
    if s.names == DIRECTORY_WRITTEN:
        return list(WRITTEN_DIRECTORY_HOSTILE)
    if s.names == FILE_WRITTEN:
        out = ["fifo", "char-device", "directory", "under-a-file"]
        out += ["existing-file"] if s.refuses_existing else []
        out += ["another-output"] if s.program == "redo-writer" and s.option != "--target" else []
        return out
    if s.names == DIRECTORY_READ and not s.member:
        return ["fifo", "char-device", "regular-file", "symlink-to-dev-zero"]
    if c in (surfaces.PATH_ON_FILESYSTEM, surfaces.PROBE_TARGET):  # a file or directory on a filesystem answers
        return ["char-device", "symlink-to-dev-zero"]
    out = ["fifo", "directory", "symlink-to-dev-zero"] + ([] if s.member else ["char-device"])
    if c.syntax in TEXT_SYNTAX:
        out.append("not-utf8")
        out += ["huge"] if c.bound is not None else []
        out += ["nested-5000"] if c.syntax in ("TOML", "JSON") else []
        out += ["dotted-key-100000"] if c.syntax == "TOML" else []
        out += ["duplicate"] if c.duplicate else []
        out += ["duplicate-key"] if c.syntax == "JSON" else []
    if _named_member(s):
        out += ["named-twice", "nul-in-name", "dotdot-escape", "absolute-name"]
    elif s.member and s.names == DIRECTORY_READ:  # a file of a fixed name in the directory
        out.append("link-out-of-the-directory")
    return out


CASES = [(s, h) for s in SURFACES for h in hostile_values(s)]


@dataclass
class World:
    """What every case shares: valid inputs, an isolated image cache and temporary directory."""
    root: Path
    cache: Path
    tmp: Path
    valid: dict[str, str] = field(default_factory=dict)


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> World:
    root = tmp_path_factory.mktemp("surfaces-world")
    w = World(root, root / "cache", root / "tmp")
    w.cache.mkdir()
    w.tmp.mkdir()
    valid = root / "valid"
    valid.mkdir()
    (valid / "lab.toml").write_text(LAB_TEXT)
    (valid / "collector.json").write_text(json.dumps(COLLECTOR))
    (valid / "report.json").write_text(json.dumps(REPORT))
    (valid / "awr.txt").write_text((REPO / "labtests" / "unit" / "data" / "awr" / "awrrpt-11g.txt").read_text())
    (valid / "events.csv").write_text(events_text())
    (valid / "requests.txt").write_text(IO_REQUESTS_TEXT)
    for name in ("log.img", "log2.img"):
        with open(valid / name, "wb") as f:
            f.truncate(65536)
    w.valid = {"lab": str(valid / "lab.toml"), "preset": "ssd-vs-hdd", "crash_preset": "small",
               "collector": str(valid / "collector.json"), "report": str(valid / "report.json"),
               "awr": str(valid / "awr.txt"),
               "events": str(valid / "events.csv"), "log": str(valid / "log.img"), "log2": str(valid / "log2.img"),
               "requests": str(valid / "requests.txt"), "redo_writer": str(REDO_WRITER)}
    return w


IO_REQUESTS_TEXT = "write-durable 0 4096\nflush\nread 0 4096\n"
DEVICE_PROFILE_TEXT = ('[profile]\nname = "probed"\ndescription = "a drive probed"\nwrite_cache = "protected"\n'
                       '[profile.params]\nwrite = "fixed:20"\nread = "fixed:80"\n'
                       '[profile.sources]\nwrite = "probed"\nread = "probed"\nwrite_cache = "probed"\n'
                       '[profile.evidence]\nwrite = "measured"\nread = "measured"\n')
LAB_TEXT = '[[vm]]\nname = "lab1"\n\n[[vm.disk]]\nname = "d1"\nbus = "virtio"\ngeometry = "sector512n"\n'
COLLECTOR = {"blockdevices": [{"name": "sda", "log-sec": 512, "phy-sec": 4096, "min-io": 4096, "opt-io": 0,
                               "alignment": 0, "size": 1 << 40, "rota": False, "tran": "sas", "model": "ACME SSD"}]}
IMAGE_RECORD = {"guest": "debian12", "image": "", "image_sha256": "0" * 64, "input_hash": "0" * 64,
                "base_url": "https://example.invalid/base.qcow2", "base_sha256": "0" * 64,
                "built_at": "2026-11-26T00:00:00", "build_seconds": 60.0, "accelerator": "tcg", "size_bytes": 1}


def _valid_text(s: Surface) -> str:
    """The content of the surface's kind, valid, for the values that change it in one place."""
    c = s.content
    if c in (surfaces.LAB,):
        return LAB_TEXT
    if c is surfaces.BENCH_PRESET:
        return (REPO / "labs" / "bench" / "ssd-vs-hdd.toml").read_text()
    if c is surfaces.CRASH_PRESET:
        return (REPO / "labs" / "crash" / "small.toml").read_text()
    if c is surfaces.COLLECTOR:
        return json.dumps(COLLECTOR)
    if c is surfaces.REDO_REPORT:
        return json.dumps(REPORT)
    if c is surfaces.BENCH_RECORD:
        return "(the results directory's own)"
    if c is surfaces.APPLIANCE_RECORD:
        return json.dumps(appliance_doc())
    if c is surfaces.IMAGE_RECORD:
        return json.dumps(IMAGE_RECORD)
    if c is surfaces.EVENTS:
        return events_text()
    if c is surfaces.RANGES:
        return "0 512\n"
    if c is surfaces.IO_REQUESTS:
        return IO_REQUESTS_TEXT
    if c is surfaces.AWR_REPORT:
        return (REPO / "labtests" / "unit" / "data" / "awr" / "awrrpt-11g.txt").read_text()
    if c is surfaces.DEVICE_PROFILE:
        return DEVICE_PROFILE_TEXT
    raise AssertionError(f"no valid content for {c}")


# The key given twice in each kind of JSON: one whose second value the reader would take without a
# word of its own (so that only the key given twice can refuse it).
DUPLICATE_KEY = {surfaces.COLLECTOR.name: "blockdevices", surfaces.REDO_REPORT.name: "target",
                 surfaces.BENCH_RECORD.name: "started", surfaces.APPLIANCE_RECORD.name: "title",
                 surfaces.IMAGE_RECORD.name: "built_at"}


def _duplicate_key(s: Surface, text: str) -> tuple[str, str]:
    """The valid JSON text with a key of its outermost object given twice, and that key."""
    doc = json.loads(text)
    key = DUPLICATE_KEY[s.content.name]
    other = json.dumps({key: doc[key] + "-2" if isinstance(doc[key], str) else doc[key]})
    return text.rstrip()[:-1] + ", " + other[1:], key


def _duplicated(s: Surface, text: str) -> tuple[str, str]:
    """The valid text with one name (Content.duplicate) given twice, and that name."""
    c = s.content
    if c is surfaces.LAB:
        return text + text, "lab1"
    if c is surfaces.BENCH_PRESET:
        assert 'name = "hdd"' in text
        return text.replace('name = "hdd"', 'name = "ssd"'), "ssd"
    if c is surfaces.CRASH_PRESET:
        line = next(x for x in text.splitlines() if x.startswith("profiles = "))
        first = json.loads(line.split("=", 1)[1])[0]
        return text.replace(line, f"profiles = {json.dumps([first, first])}"), first
    doc = json.loads(text)
    if c is surfaces.COLLECTOR:  # a second disk of the same name, of other sectors
        disk = doc["blockdevices"][0]
        doc["blockdevices"].append({**disk, "log-sec": 4096, "phy-sec": 4096})
        return json.dumps(doc), disk["name"]
    if c is surfaces.APPLIANCE_RECORD:
        doc["shares"].append(dict(doc["shares"][0]))
        return json.dumps(doc), doc["shares"][0]["name"]
    raise AssertionError(f"no duplicate for {c} (bench.json's is made by _member_case)")


def _content(hostile: str, s: Surface, text: str) -> tuple[bytes | None, str]:
    """(bytes of the hostile file, a word the line may name instead of its path) for the values
    that are content; (None, '') for those that are not."""
    if hostile == "not-utf8":
        if s.content.syntax == "TOML":
            return b"# caf\xe9\n" + text.encode(), ""
        if s.content.syntax == "JSON":
            return text.replace("}", ', "note": "caf\xe9"}', 1).encode("latin-1"), ""
        return text.encode() + b"caf\xe9 \xff\xfe\n", ""
    if hostile == "nested-5000":
        if s.content.syntax == "TOML":
            return ("a = " + "[" * 5000 + "]" * 5000 + "\n").encode(), ""
        return ("[" * 5000 + "]" * 5000).encode(), ""
    if hostile == "dotted-key-100000":
        return ("a" + ".a" * 99_999 + " = 1\n").encode(), ""
    if hostile == "duplicate":
        dup, name = _duplicated(s, text)
        return dup.encode(), name
    if hostile == "duplicate-key":
        dup, name = _duplicate_key(s, text)
        return dup.encode(), name
    return None, ""


@dataclass
class Case:
    argv: list[str]
    env: dict[str, str]
    named: tuple[str, ...]          # the line must name one of these
    value: str                      # the hostile value as given
    may_create: tuple[Path, ...] = ()  # model cases: what the model may make of its own files
    served: Path | None = None


def _fill(text: str, values: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], text)


def _place(hostile: str, s: Surface, at: Path, text: str) -> tuple[str, tuple[str, ...]]:
    """Makes the hostile value at `at` (a file read, or a member); returns (value, words naming it)."""
    at.parent.mkdir(parents=True, exist_ok=True)
    data, word = _content(hostile, s, text)
    if data is not None:
        at.write_bytes(data)
    elif hostile == "fifo":
        os.mkfifo(at)
    elif hostile == "directory":
        at.mkdir()
    elif hostile == "symlink-to-dev-zero":
        at.symlink_to("/dev/zero")
    elif hostile == "char-device":
        return "/dev/zero", ("/dev/zero",)
    elif hostile == "huge":
        with open(at, "wb") as f:
            f.truncate(s.content.bound + 1)
    elif hostile == "regular-file":  # a file where a directory is due
        shutil.copyfile(REPO / "README.md", at)
    else:
        raise AssertionError(f"{hostile} is not placed at a path")
    return str(at), (str(at),) + ((word,) if word else ())


def _results_dir(s: Surface, r: Path) -> Path:
    """A valid results directory of the surface's kind; a bench's with two runs of each BLOCKSIZE,
    a comparison of the two, and each run's device-path twin, so that the report reads every file
    its record names (a twin's events only a comparison reads)."""
    if s.member == "appliance.json":
        r.mkdir(parents=True)
        (r / "appliance.json").write_text(json.dumps(appliance_doc()))
        return r
    make_results(r, events=False, comparisons=[{"title": "c", "a": {"disk": "d1", "blocksize": 512},
                                                "b": {"disk": "d1", "blocksize": 4096}}])
    bench = json.loads((r / "bench.json").read_text())
    runs = []
    for run in bench["runs"]:
        (r / run["report"]).unlink()
        for repeat in (1, 2):
            stem = f"runs/{run['blocksize']}-{repeat}"
            for name in (stem, f"{stem}-twin"):
                (r / f"{name}.json").write_text(json.dumps(REPORT))
                (r / f"{name}.csv").write_text(events_text())
            runs.append({**run, "repeat": repeat, "report": f"{stem}.json", "events": f"{stem}.csv",
                         "device_path": {"report": f"{stem}-twin.json", "events": f"{stem}-twin.csv"}})
    bench["runs"] = runs
    (r / "bench.json").write_text(json.dumps(bench))
    return r


def _named_entry(bench: dict, member: str, run: int = 0) -> tuple[dict, str]:
    """The dict and key in bench.json that names the member ('runs[].device_path.report': the first
    run's device_path, 'report')."""
    *path, key = member.removeprefix("runs[].").split(".")
    entry = bench["runs"][run]
    for p in path:
        entry = entry[p]
    return entry, key


def _member_case(hostile: str, s: Surface, tmp: Path) -> tuple[str, tuple[str, ...]]:
    r = _results_dir(s, tmp / "r")
    if not _named_member(s):
        member = r / s.member
        text = member.read_text()
        if hostile == "duplicate" and s.content is surfaces.BENCH_RECORD:  # the first run again, in files of its own
            bench = json.loads(text)
            run = json.loads(json.dumps(bench["runs"][0]))
            for entry in (run, run["device_path"]):
                for key in ("report", "events"):
                    shutil.copyfile(r / entry[key], r / f"{entry[key]}.again")
                    entry[key] += ".again"
            bench["runs"].append(run)
            member.write_text(json.dumps(bench))
            return str(r), (str(member), repr(s.member), f"'{run['disk']}'")
        member.unlink()
        if hostile == "link-out-of-the-directory":
            outside = tmp / f"outside-{s.member}"
            outside.write_text(text)
            member.symlink_to(outside)
            return str(r), (str(member), repr(s.member), str(outside))
        _, named = _place(hostile, s, member, text)
        return str(r), named + (repr(s.member),)
    bench = json.loads((r / "bench.json").read_text())
    entry, key = _named_entry(bench, s.member)
    name = entry[key]
    if hostile in ("named-twice", "nul-in-name", "dotdot-escape", "absolute-name"):
        outside = tmp / f"outside{Path(name).suffix}"
        shutil.copyfile(r / name, outside)
        if hostile == "named-twice":
            other, other_key = _named_entry(bench, s.member, run=1)
            if "device_path" in s.member:  # the twin names its own run's file
                other, other_key = bench["runs"][0], key
            else:
                (r / other[other_key]).unlink()
            other[other_key] = name
            shown = name
        else:
            new = {"nul-in-name": name.replace("runs/", "runs/x\0"), "dotdot-escape": f"../{outside.name}",
                   "absolute-name": str(outside)}[hostile]
            entry[key] = new
            shown = repr(new)[1:-1]
        (r / "bench.json").write_text(json.dumps(bench))
        return str(r), (shown, str(r / name))
    member = r / name
    text = member.read_text()
    member.unlink()
    _, named = _place(hostile, s, member, text)
    return str(r), named + (name,)


def make_case(s: Surface, hostile: str, tmp: Path, w: World) -> Case:
    values = {**w.valid, "results": str(tmp / "results"), "out": str(tmp / "out")}
    (tmp / "out").mkdir()
    may_create: tuple[Path, ...] = ()
    served = None
    if s.names == MODEL_FILE:
        served = tmp / "disk.img"
        with open(served, "wb") as f:
            f.write(b"precious " * 1000)
            f.truncate(1 << 20)
        own = {k: tmp / f"disk.{k}" for k in ("trace", "writelog", "unreadable", "floor")}
        values.update({"filter": str(FILTER), "served": str(served), "socket": "disk.sock",
                       **{k: str(p) for k, p in own.items()}})
        value = {"served": str(served), "served-hard-link": str(tmp / "hard.img"),
                 "served-symlink": str(tmp / "soft.img"), "fifo": str(tmp / "model.fifo"),
                 "another-model-file": str(own["writelog" if s.option == "trace" else "trace"])}[hostile]
        if hostile == "served-hard-link":
            os.link(served, value)
        elif hostile == "served-symlink":
            os.symlink(served, value)
        elif hostile == "fifo":
            os.mkfifo(value)
        read_only = ("unreadable", "floor")   # the model's files it reads: never made
        may_create = (tmp / "disk.sock", *(p for k, p in own.items() if k != s.option and k not in read_only))
        named = (value,)
    elif s.names == DIRECTORY_WRITTEN or s.names == FILE_WRITTEN:
        readme = tmp / "README.md"
        if hostile in ("regular-file", "existing-file", "under-a-file"):
            shutil.copyfile(REPO / "README.md", readme)
        value = {"dev-null": "/dev/null", "char-device": "/dev/zero", "regular-file": str(readme),
                 "existing-file": str(readme), "under-a-file": str(readme / "sub"), "fifo": str(tmp / "out.fifo"),
                 "directory": str(tmp / "adir"), "another-output": str(tmp / "out" / "t.log")}[hostile]
        if hostile == "fifo":
            os.mkfifo(value)
        elif hostile == "directory":
            os.mkdir(value)
        named = (value,)
    elif s.names == DIRECTORY_READ and not s.member:
        value, named = _place(hostile, s, tmp / "in put" / "results", "")
    elif s.names == DIRECTORY_READ:
        value, named = _member_case(hostile, s, tmp)
    elif s.member == ".json":  # the record beside the image named
        image = tmp / "in put" / "img.qcow2"
        image.parent.mkdir()
        image.write_bytes(b"")
        record = dict(IMAGE_RECORD, image=str(image))
        _, named = _place(hostile, s, image.with_suffix(".json"), json.dumps(record))
        value, named = str(image), (str(image), *named)
    else:
        suffix = {"TOML": ".toml", "JSON": ".json", "CSV": ".csv"}.get(s.content.syntax, "")
        text = _valid_text(s) if s.content.syntax in TEXT_SYNTAX else ""
        value, named = _place(hostile, s, tmp / "in put" / f"hostile{suffix}", text)
    values["path"] = value
    return Case([_fill(a, values) for a in s.argv], {k: _fill(v, values) for k, v in s.env}, named, value,
                may_create, served)


def _block_device() -> str | None:
    """A block device this user may read (the one under the checkout), or None."""
    st = os.stat(REPO)
    try:
        name = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}").resolve().name
    except OSError:
        return None
    dev = f"/dev/{name}"
    try:
        fd = os.open(dev, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        return dev if stat.S_ISBLK(os.fstat(fd).st_mode) else None
    finally:
        os.close(fd)


def make_valid(s: Surface, tmp: Path, w: World) -> Case | None:
    """The surface's case with a valid value where the hostile one would be (None: none here)."""
    values = {**w.valid, "results": str(tmp / "results"), "out": str(tmp / "out")}
    (tmp / "out").mkdir()
    if s.names == MODEL_FILE:
        values.update({"filter": str(FILTER), "served": str(tmp / "disk.img"), "socket": "disk.sock",
                       **{k: str(tmp / f"disk.{k}") for k in ("trace", "writelog", "unreadable", "floor")}})
        with open(tmp / "disk.img", "wb") as f:
            f.truncate(1 << 20)
        value = str(tmp / f"disk.{s.option}")
    elif s.names == DIRECTORY_WRITTEN:
        value = str(tmp / "new")
    elif s.names == FILE_WRITTEN:
        value = str(tmp / "out" / {surfaces.PICTURE: "new.png", surfaces.LAB_WRITTEN: "new.toml"}.get(s.content, "new"))
    elif s.names == DIRECTORY_READ:
        value = str(_results_dir(s, tmp / "r"))
    elif s.member == ".json":
        image = tmp / "img.qcow2"
        image.write_bytes(b"")
        image.with_suffix(".json").write_text(json.dumps(dict(IMAGE_RECORD, image=str(image))))
        value = str(image)
    elif s.content in (surfaces.PATH_ON_FILESYSTEM, surfaces.PROBE_TARGET):
        value = str(tmp)
    elif s.content is surfaces.BLOCK_DEVICE:
        value = _block_device()
        if value is None:
            return None
    elif s.content is surfaces.LOG_IMAGE:
        value = w.valid["log"]
    else:
        suffix = {"TOML": ".toml", "JSON": ".json", "CSV": ".csv"}.get(s.content.syntax, "")
        path = tmp / f"valid{suffix}"
        path.write_text(_valid_text(s))
        value = str(path)
    values["path"] = value
    return Case([_fill(a, values) for a in s.argv], {k: _fill(v, values) for k, v in s.env}, (value,), value)


# --- what must hold ------------------------------------------------------------------------------

def _snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under root (root itself included), as lstat and the bytes of small files see it."""
    out = {}
    if not os.path.lexists(root):
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        for name in ["."] + dirnames + filenames if dirpath == str(root) else dirnames + filenames:
            p = os.path.normpath(os.path.join(dirpath, name))
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[p] = ("link", os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                small = st.st_size <= (1 << 20) and st.st_blocks * 512 <= (2 << 20)
                digest = hashlib.sha256(Path(p).read_bytes()).hexdigest() if small else None
                out[p] = ("file", st.st_size, st.st_mtime_ns, st.st_ino, st.st_nlink, digest)
            elif stat.S_ISDIR(st.st_mode):
                out[p] = ("dir",)
            else:
                out[p] = ("special", stat.S_IFMT(st.st_mode), st.st_ino, st.st_rdev)
    return out


def _checkout_listing() -> dict[str, tuple[str, ...]]:
    """The names in the checkout's top level, results/ and labs/ (what a run or a lab would add)."""
    out = {}
    for d in (REPO, REPO / "results", REPO / "labs", REPO / "labs" / "bench", REPO / "labs" / "crash"):
        out[str(d)] = tuple(sorted(os.listdir(d))) if d.is_dir() else ()
    return out


def _changes(before: dict, after: dict, may_create=()) -> list[str]:
    allowed = {os.path.normpath(p) for p in map(str, may_create)}
    out = [f"changed: {p}" for p in before if p in after and before[p] != after[p]]
    out += [f"removed: {p}" for p in before if p not in after]
    out += [f"created: {p}" for p in after if p not in before and p not in allowed]
    return out


def _lock_files_only(created: list[str], cache: Path) -> list[str]:
    """The image cache's labs/LAB.lock is left empty by design (docs/reliability.md): not a change."""
    def ok(line: str) -> bool:
        p = Path(line.removeprefix("created: "))
        return line.startswith("created: ") and cache in p.parents and (
            p.is_dir() or (p.name.endswith(".lock") and p.stat().st_size == 0))
    return [c for c in created if not ok(c)]


class Hung(BaseException):
    """Raised by the case's alarm: a BaseException, so that no `except Exception` of the code under
    test takes it for a refusal."""


@pytest.fixture
def nothing_starts(monkeypatch):
    """Whatever would start a process is refused and recorded: a value wrongly taken cannot start a
    lab, a VM, a model or a build from here (the case fails naming what it would have started)."""
    started: list[str] = []

    def refuse(what):
        def call(*args, **kwargs):
            started.append(f"{what} {args[0] if args else kwargs.get('args', '')!r}"[:300])
            raise AssertionError(f"would start {started[-1]}")
        return call

    class Popen:
        def __init__(self, *args, **kwargs):
            refuse("subprocess.Popen")(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", Popen)
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve", "execvp",
                 "execvpe", "spawnv", "spawnve"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, refuse(f"os.{name}"))
    return started


def _run_in_process(case: Case, monkeypatch, capsys, started) -> tuple[int, str]:
    for k, v in case.env.items():
        monkeypatch.setenv(k, v)
    hung: list[bool] = []
    raised = None

    def alarm(signum, frame):
        hung.append(True)
        raise Hung(f"over {CASE_SECONDS} s")
    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(CASE_SECONDS)
    try:
        try:
            rc = cli.main(case.argv)
        except SystemExit as e:  # argparse
            rc = e.code
        except Hung:
            rc = None
        except Exception as e:  # what a user would see as a traceback
            rc, raised = None, e
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    _, err = capsys.readouterr()
    assert not hung, f"{case.argv} took over {CASE_SECONDS} s (it waits on the value?)"
    assert not started, f"{case.argv} would start: {started}"
    assert raised is None, f"{case.argv}: a traceback: {type(raised).__name__}: {str(raised)[:300]}"
    return rc, err


def _run_program(case: Case, cwd: Path, w: World) -> tuple[int, str]:
    env = {**os.environ, "TMPDIR": str(w.tmp), **case.env}
    try:
        out = subprocess.run(case.argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                             timeout=CASE_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{case.argv} took over {CASE_SECONDS} s (it waits on the value?)")
    return out.returncode, out.stderr.decode(errors="replace")


def _one_line_naming(err: str, case: Case) -> None:
    assert "Traceback" not in err, err
    lines = [x for x in err.splitlines() if x.strip() and not x.startswith(INFORMATIONAL)]
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}: {err[-1500:]!r}"
    assert any(n in lines[0] for n in case.named), f"the line does not name {case.named[0]!r}: {lines[0]!r}"


def _isolate(monkeypatch, tmp_path: Path, w: World) -> None:
    """The image cache and temporary files in the world's directory, the case's as the working one."""
    monkeypatch.setenv("SECTORLAB_CACHE", str(w.cache))
    monkeypatch.setenv("TMPDIR", str(w.tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(w.tmp))
    monkeypatch.delenv("SECTORLAB_LAB_FILE", raising=False)
    monkeypatch.delenv("SECTORLAB_ACCEL", raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("surface, hostile", CASES, ids=[f"{s.id}-{h}" for s, h in CASES])
def test_a_hostile_value_is_one_line_and_nothing_else(surface, hostile, tmp_path, world, monkeypatch, capsys,
                                                       request):
    if surface.names == MODEL_FILE:
        request.getfixturevalue("built_filter")
    elif surface.program == "redo-writer":
        request.getfixturevalue("built_redo_writer")
    case = make_case(surface, hostile, tmp_path, world)
    _isolate(monkeypatch, tmp_path, world)
    watched = (tmp_path, world.root)
    before = {str(d): _snapshot(d) for d in watched}
    checkout = _checkout_listing()
    served = case.served.read_bytes() if case.served else None
    if surface.program == "sectorlab":
        rc, err = _run_in_process(case, monkeypatch, capsys, request.getfixturevalue("nothing_starts"))
        assert rc == 2, f"exit {rc}, expected 2: {err[-1500:]!r}"
    else:
        rc, err = _run_program(case, tmp_path, world)
        if surface.names == MODEL_FILE:
            assert rc != 0, f"the model started with {surface.option}={case.value}: {err[-1500:]!r}"
        else:
            assert rc == 2, f"exit {rc}, expected 2: {err[-1500:]!r}"
    _one_line_naming(err, case)
    if case.served:
        assert case.served.read_bytes() == served, "the served file's bytes changed"
    changes = []
    for d in watched:
        changes += _changes(before[str(d)], _snapshot(d), case.may_create)
    changes = _lock_files_only(changes, world.cache)
    assert not changes, changes
    assert _checkout_listing() == checkout, "the checkout's results/ or labs/ changed"


@pytest.mark.parametrize("surface", SURFACES, ids=[s.id for s in SURFACES])
def test_a_valid_value_is_taken(surface, tmp_path, world, monkeypatch, capsys, request):
    """Each entry's command line is the one its surface reads: a valid value there is taken (exit 0,
    or it goes on until it would start something), so that the battery's refusals are of the value."""
    if surface.names == MODEL_FILE:
        request.getfixturevalue("built_filter")
    elif surface.program == "redo-writer":
        request.getfixturevalue("built_redo_writer")
    case = make_valid(surface, tmp_path, world)
    if case is None:
        pytest.skip(f"no valid value for {surface.id} on this host")
    _isolate(monkeypatch, tmp_path, world)
    if surface.program == "sectorlab":
        started = request.getfixturevalue("nothing_starts")
        try:
            rc, err = _run_in_process(case, monkeypatch, capsys, started)
        except AssertionError:
            if not started:
                raise
            return  # it went on to start something: the value was taken
        refused = rc == 2 and any(n in err for n in case.named)  # exit 1: taken, and then no lab is up
        assert not refused, f"a valid value was refused (exit {rc}): {err[-1500:]!r}"
    else:
        rc, err = _run_program(case, tmp_path, world)
        assert rc == 0, f"a valid value was refused (exit {rc}): {err[-1500:]!r}"


def test_the_battery_has_every_surface_and_value():
    assert {s.id for s, _ in CASES} == {s.id for s in SURFACES}
    kinds = {h for _, h in CASES}
    assert kinds >= {"fifo", "char-device", "directory", "symlink-to-dev-zero", "not-utf8", "nested-5000",
                     "dotted-key-100000", "huge", "duplicate", "duplicate-key", "nul-in-name", "dotdot-escape",
                     "dev-null", "regular-file", "under-a-file", "served", "served-hard-link", "served-symlink",
                     "another-model-file"}, kinds
