"""The hostile-input campaign's second round on the surfaces a user hands files and names to before
any lab starts: from-host's collector file (whose text must never become TOML of its own), the one
writer (never through a symbolic link, never into a FIFO or directory), the lab and preset
readers (bounded, nesting bounded, whole-string names), the image cache's records, and numbers.

Each explicit case is one input of the campaign (docs/reliability.md counts them); each class
also has a hypothesis property over its surface: exit 0, or one line with exit 2; no traceback,
no write outside, bounded time."""

from __future__ import annotations

import dataclasses
import json
import os
import re

import pytest
import tomllib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labtests.support.depth import examples
from sectorlab import cli, inputs, labdef
from sectorlab.errors import UsageError
from sectorlab.images import cache
from sectorlab.labdef import fromhost
from sectorlab.labdef import tables as labtables
from sectorlab.paths import REPO, write_atomic

PROPERTY = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                             HealthCheck.function_scoped_fixture])
DISK = {"name": "sda", "log-sec": 512, "phy-sec": 4096, "min-io": 4096, "opt-io": 0, "alignment": 0,
        "size": 1 << 40, "rota": False, "tran": "sas", "model": "ACME SSD"}


def _collector(tmp_path, name="host.json", **fields):
    path = tmp_path / name
    path.write_text(json.dumps({"blockdevices": [{**DISK, **fields}]}))
    return path


def _one_line_or_ok(capsys, rc):
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    if rc != 0:
        assert rc == 2, err
        assert err.count("\n") == 1 and err.startswith("sectorlab: error: "), err
    return out, err


# --- from-host: the collector file's text is data, never TOML -----------------------------------

INJECTED = 'ACME SSD\nlibvirt_uri = "qemu+ssh://elsewhere.example/system"\nmemory_mib = 65536\n#'
MODEL_OR_TRAN = [
    ("model", INJECTED),
    ("model", "x\n[lab]\nname = \"other\""),
    ("model", "x\r\nname = \"evil\""),
    ("model", "x\u2028[[vm]]"),
    ("model", "x\x1b[2J"),
    ("model", "x\x00y"),
    ("model", "\"\"\"\n'''"),
    ("tran", "sas\nmemory_mib = 65536"),
    ("tran", "nvme\n[[vm]]\nname = \"x\""),
    ("model", "\\u0041\\n"),
]


@pytest.mark.parametrize("field,value", MODEL_OR_TRAN, ids=[f"{f}-{i}" for i, (f, _) in enumerate(MODEL_OR_TRAN)])
def test_a_collector_files_model_or_transport_stays_a_comment(tmp_path, capsys, field, value):
    out = tmp_path / "lab.toml"
    rc = cli.main(["lab", "from-host", str(_collector(tmp_path, **{field: value})), "-o", str(out)])
    _one_line_or_ok(capsys, rc)
    assert rc == 0
    data = tomllib.loads(out.read_text())
    assert set(data) == {"lab", "vm"}
    assert data["lab"] == {"name": "lab"}
    assert [set(vm) for vm in data["vm"]] == [{"name", "guest", "disk"}]
    assert "libvirt_uri" not in data["lab"] and "memory_mib" not in data["vm"][0]
    lines = out.read_text().splitlines()
    assert all(not line.startswith(("libvirt_uri", "memory_mib", "name = \"evil\"")) for line in lines)
    labdef.load(out)


HOSTILE_FILE_NAMES = ['x\nmemory_mib = 65536\nlibvirt_uri = "qemu+ssh:elsewhere"\n#.json', "x\r[lab].json",
                      "x\u2028y.json", "x\x1b]0;title\x07.json"]


@pytest.mark.parametrize("name", HOSTILE_FILE_NAMES, ids=range(len(HOSTILE_FILE_NAMES)))
def test_the_collector_files_own_name_stays_a_comment(tmp_path, capsys, name):
    out = tmp_path / "lab.toml"
    rc = cli.main(["lab", "from-host", str(_collector(tmp_path, name=name, alignment=512)), "-o", str(out)])
    _one_line_or_ok(capsys, rc)
    data = tomllib.loads(out.read_text())
    assert data["lab"] == {"name": "lab"} and len(data["vm"]) == 1
    # The file's name is kept as data where the lab has a place for it (a geometry's description)
    # and escaped in comments.
    assert all(line.startswith("#") or "=" in line or line.startswith("[") or not line
               for line in out.read_text().splitlines())


def test_two_disks_whose_names_meet_get_names_of_their_own(tmp_path, capsys):
    path = tmp_path / "host.json"
    disks = [{**DISK, "name": "sdA"}, {**DISK, "name": "sda"}, {**DISK, "name": "sd_a"}]
    path.write_text(json.dumps({"blockdevices": disks}))
    out = tmp_path / "lab.toml"
    assert cli.main(["lab", "from-host", str(path), "-o", str(out)]) == 0
    _, err = capsys.readouterr()
    names = [d.name for _, d in labdef.load(out).disks()]
    assert names == ["scsi-sda", "scsi-sda-2", "scsi-sd-a"]
    assert "sda: named scsi-sda-2 in the lab (scsi-sda is another disk's)" in err


@pytest.mark.parametrize("size", ["0", "-1", "1048577", "99999999999999999999"])
def test_size_mib_is_said_as_the_option_it_is(tmp_path, capsys, size):
    rc = cli.main(["lab", "from-host", str(_collector(tmp_path)), "--size-mib", size])
    _, err = _one_line_or_ok(capsys, rc)
    assert rc == 2 and f"--size-mib {size}" in err and "from 16 to 1048576" in err and ".toml" not in err


TEXT = st.text(st.characters(codec="utf-8"), max_size=40)


@PROPERTY
@given(model=TEXT | st.none(), tran=TEXT | st.none(), name=st.from_regex(r"[A-Za-z0-9._:-]{1,64}", fullmatch=True))
def test_any_collector_text_gives_a_lab_whose_only_keys_are_its_own(tmp_path_factory, model, tran, name):
    tmp = tmp_path_factory.mktemp("fh")
    path = tmp / "h.json"
    path.write_text(json.dumps({"blockdevices": [{**DISK, "name": name, "model": model, "tran": tran}]}))
    try:
        disks, skipped = fromhost.read(path)
        plan = fromhost.plan(disks, skipped, path.name, "from-host", 256)
    except UsageError as e:
        assert "\n" not in str(e)
        return
    data = tomllib.loads(plan.toml)
    assert set(data) <= {"lab", "vm", "geometry"} and data["lab"] == {"name": "from-host"}
    for vm in data["vm"]:
        assert set(vm) == {"name", "guest", "disk"}
        for disk in vm["disk"]:
            assert set(disk) <= {"name", "bus", "geometry", "size_mib", "device"}


# --- the one writer: never through what is in the way ----------------------------------------------

def test_the_writer_replaces_a_symlink_instead_of_writing_through_it(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    inside = tmp_path / "results"
    inside.mkdir()
    (inside / "report.md").symlink_to(outside)
    write_atomic(inside / "report.md", "report\n")
    assert outside.read_text() == "precious\n"
    assert not (inside / "report.md").is_symlink() and (inside / "report.md").read_text() == "report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside.txt", "results"]


@pytest.mark.parametrize("kind", ["fifo", "directory", "dangling-symlink", "symlink-to-dir"])
def test_the_writer_refuses_or_replaces_what_is_in_the_way(tmp_path, kind):
    target = tmp_path / "report.md"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "directory":
        target.mkdir()
    elif kind == "dangling-symlink":
        target.symlink_to(tmp_path / "nowhere" / "x")
    else:
        (tmp_path / "d").mkdir()
        target.symlink_to(tmp_path / "d")
    if kind in ("fifo", "directory"):
        with pytest.raises(UsageError, match="report.md: .*expected a regular file or nothing there"):
            write_atomic(target, "x")
        assert os.path.lexists(target) and [p.name for p in tmp_path.iterdir()] == ["report.md"]
    else:
        write_atomic(target, b"x")
        assert target.read_bytes() == b"x" and not target.is_symlink()
        assert not (tmp_path / "nowhere").exists()
        assert kind != "symlink-to-dir" or list((tmp_path / "d").iterdir()) == []


def test_a_planted_temporary_name_is_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.write_text("precious")
    d = tmp_path / "r"
    d.mkdir()
    for pid in range(os.getpid() - 2, os.getpid() + 3):  # the names an older writer used
        (d / f".report.md.{pid}.tmp").symlink_to(outside)
    write_atomic(d / "report.md", "new")
    assert outside.read_text() == "precious" and (d / "report.md").read_text() == "new"


# --- names match whole; nesting and numbers are bounded ---------------------------------------------

NAME_CHECKS = [
    (labtables.name_field, "default"),
    (lambda w, k, v: labtables._disk_name(w, k, v, {}), "redo1"),
    (lambda w, k, v: labtables._serial(w, k, v, {}), "SL-1"),
    (lambda w, k, v: labtables._uri(w, k, v, {}), "qemu:///system"),
]


@pytest.mark.parametrize("check,good", NAME_CHECKS, ids=["lab-name", "disk-name", "serial", "uri"])
@pytest.mark.parametrize("tail", ["\n", "\r\n", "\n\n"], ids=["lf", "crlf", "lflf"])
def test_a_name_with_a_trailing_newline_is_refused(check, good, tail):
    assert check("lab.toml", "name", good) == good
    with pytest.raises(UsageError):
        check("lab.toml", "name", good + tail)


@pytest.mark.parametrize("suffix", ["-job2\n", "-a\n\n", "\n"])
def test_a_lab_suffix_with_a_newline_is_refused(suffix):
    lab = labdef.load(REPO / "labs" / "default.toml")
    with pytest.raises(UsageError, match="SECTORLAB_LAB_SUFFIX"):
        labdef.with_suffix(lab, suffix)


NESTED = ["a" + ".a" * 50_000 + " = 1", "[" + "a." * 50_000 + "a]", "x = " + "[" * 100_000 + "]" * 100_000,
          "x = " + "{a = " * 5000 + "1" + "}" * 5000, "[[" + ".".join(["vm"] * 20) + "]]"]


@pytest.mark.parametrize("text", NESTED, ids=["dotted-key", "table-header", "arrays", "inline-tables", "aot"])
def test_deeply_nested_toml_is_one_line_at_once(tmp_path, capsys, text):
    path = tmp_path / "lab.toml"
    path.write_text(text + "\n")
    for argv in (["lab", "validate", "--offline", str(path)], ["bench", str(path)]):
        rc = cli.main(argv)
        _, err = _one_line_or_ok(capsys, rc)
        assert rc == 2 and "nests" in err and "expected at most 16" in err, err


@pytest.mark.parametrize("text", ['{"a": NaN}', '{"a": -Infinity}', "[1e400]", '{"a": ' * 70 + "1" + "}" * 70])
def test_json_that_is_no_number_or_too_deep_is_one_line(text):
    with pytest.raises(UsageError) as e:
        inputs.json_value(text, "bench results", "b.json")
    assert "\n" not in str(e.value) and "b.json" in str(e.value)


@PROPERTY
@given(st.text(alphabet=st.sampled_from('[]{}.="\'#\n ax1,'), max_size=300))
def test_any_toml_text_is_a_table_or_one_line(text):
    try:
        data = inputs.toml(text, "lab definition", "x.toml")
    except UsageError as e:
        assert "\n" not in str(e).rstrip("\n") or "not valid TOML" in str(e)
        return
    assert isinstance(data, dict)


@PROPERTY
@given(st.text(max_size=40))
def test_any_name_is_taken_only_when_the_whole_of_it_matches(value):
    for check, pattern in ((labtables.name_field, labtables.NAME_RE),
                           (lambda w, k, v: labtables._disk_name(w, k, v, {}), labtables.DISK_NAME_RE),
                           (lambda w, k, v: labtables._serial(w, k, v, {}), labtables.SERIAL_RE)):
        try:
            check("lab.toml", "name", value)
        except UsageError:
            assert not pattern.fullmatch(value)
        else:
            assert pattern.fullmatch(value) and "\n" not in value


# --- the image cache's records ----------------------------------------------------------------------

RECORD = {f.name: {"float": 90.0, "int": 1, "str": "x"}[str(f.type)] for f in dataclasses.fields(cache.ImageRecord)}


def _written(path, text):
    path.write_text(text)
    return path


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "truncated", "list", "missing-field", "wrong-type",
                                  "unknown-field", "nan", "huge"])
def test_an_image_record_that_is_not_one_is_one_line(tmp_path, kind):
    path = tmp_path / "debian12-0123.json"
    record = RECORD
    text = json.dumps(record)
    assert cache.ImageRecord.load(_written(tmp_path / "good.json", text)).build_seconds == 90.0
    if kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.write_text({"truncated": text[:len(text) // 2], "list": "[1, 2]",
                         "missing-field": json.dumps({k: v for k, v in record.items() if k != "image"}),
                         "wrong-type": json.dumps({**record, "build_seconds": "ninety"}),
                         "unknown-field": json.dumps({**record, "evil": 1}),
                         "nan": text.replace("90.0", "NaN"), "huge": "[" + " " * (70 << 10) + "]"}[kind])
    with pytest.raises(UsageError) as e:
        cache.ImageRecord.load(path)
    assert "\n" not in str(e.value) and str(path) in str(e.value) and "make image" in str(e.value)


# --- two names for one thing: a remote lab's volumes ------------------------------------------------

def _volume_names(vms: dict[str, list[str]]) -> list[str]:
    """The volume names terraform/main.tf gives a remote lab's root and data disks, its own templates
    filled in."""
    tf = (REPO / "terraform" / "main.tf").read_text()
    root = re.search(r'resource "libvirt_volume" "root" \{.*?name\s*=\s*"([^"]+)"', tf, re.S).group(1)
    data = re.search(r'resource "libvirt_volume" "data" \{.*?name\s*=\s*"([^"]+)"', tf, re.S).group(1)
    names = [root.replace("${each.key}", vm) for vm in vms]
    names += [data.replace("${each.value.vm}", vm).replace("${each.value.name}", d)
              for vm, ds in vms.items() for d in ds]
    return names


@pytest.mark.parametrize("vms", [{"lab1": ["root"]}, {"a-b": ["c"], "a": ["b-c"]}, {"x": ["root-2"], "x-root": ["2"]}],
                         ids=["disk-named-root", "hyphens-meet", "root-and-hyphens"])
def test_a_remote_labs_volume_names_never_meet(vms):
    lab = "[lab]\nname = \"t\"\n" + "".join(
        f'[[vm]]\nname = "{vm}"\n' + "".join(f'[[vm.disk]]\nname = "{d}"\nbus = "virtio"\ngeometry = "sector512n"\n'
                                               for d in ds) for vm, ds in vms.items())
    labdef.validate(tomllib.loads(lab))  # the lab definition takes these names
    names = _volume_names(vms)
    assert len(set(names)) == len(names), names


@PROPERTY
@given(st.dictionaries(st.from_regex(labtables.NAME_RE, fullmatch=True),
                       st.lists(st.from_regex(labtables.DISK_NAME_RE, fullmatch=True), min_size=1, max_size=3),
                       min_size=1, max_size=4))
def test_any_vm_and_disk_names_give_volumes_of_their_own(vms):
    disks = [d for ds in vms.values() for d in ds]
    if len(set(disks)) != len(disks):  # disk names are unique in a lab (labdef refuses duplicates)
        return
    names = _volume_names(vms)
    assert len(set(names)) == len(names), names


# --- numbers on the command line -------------------------------------------------------------------

NUMBERS = [(["compare", "a.json", "b.json", "--alpha", v], "--alpha") for v in ("5", "1", "0", "-0.1", "nan", "inf",
                                                                                  "1e-400", "0x1")] + \
          [(["image", "boot-time", "--runs", v], "--runs") for v in ("0", "-1", "101", "1.5", "4294967297")] + \
          [(["image", "boot-time", "--timeout", v], "--timeout") for v in ("nan", "inf", "-1", "0")] + \
          [(["bench-writer", "--rounds", "0"], "--rounds"), (["bench-writer", "--seconds", "-5"], "--seconds"),
           (["bench-writer", "--spin-us", "-1"], "--spin-us"), (["bench-lab-up", "--rounds", "1e9"], "--rounds")]


@pytest.mark.parametrize("argv,option", NUMBERS, ids=[" ".join(a[-2:]) for a, _ in NUMBERS])
def test_a_number_out_of_its_bounds_is_one_line(capsys, argv, option):
    # Parsed only: a bound that let a number through must not boot a guest in the unit tests.
    with pytest.raises(SystemExit) as e:
        cli.build_parser().parse_args(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and f"argument {option}: '{argv[-1]}': expected" in err, err
