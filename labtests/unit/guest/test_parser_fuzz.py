"""The host's guest-output parsers fuzzed with hypothesis (bounded: 300 examples each): whatever a
guest prints, lsblk's, blockdev's and nvme id-ns's parsers return a result or raise their own error
naming the command, never anything else (a KeyError or TypeError would be a traceback for the user
instead of a line). The nvme id-ns parser is the guest tools' own (sectorlab/inguest/nvmeformat.py, in the
image: reformat-nvme reads nvme-cli's output with it), fuzzed on its own too."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labtests.support.depth import examples
from sectorlab.guest import disks as guestdisks
from sectorlab.inguest import nvmeformat

FUZZ = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])

SCALARS = st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70) | st.floats(allow_nan=False) \
    | st.text(max_size=12)
JSONISH = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(st.text(max_size=8), inner, max_size=5), max_leaves=20)
LSBLK_KEYS = ["name", "kname", "type", "serial", "log-sec", "phy-sec", "min-io", "opt-io", "alignment", "size",
              "tran", "model"]
DEVICE = st.dictionaries(st.sampled_from(LSBLK_KEYS), SCALARS | st.just("disk") | st.just("512"), max_size=12)
NVME = st.fixed_dictionaries({}, optional={"flbas": SCALARS, "nlbaf": SCALARS,
                                           "lbafs": st.lists(st.dictionaries(st.sampled_from(["ds", "ms", "rp"]),
                                                                             SCALARS, max_size=3) | SCALARS,
                                                             max_size=5)})


def _only_own_error(parse, text: str, error: type) -> None:
    try:
        parse(text, "the command")
    except error as e:
        assert "the command" in str(e) or getattr(e, "command", None) == "the command"


@FUZZ
@given(st.text(max_size=200) | JSONISH.map(json.dumps)
       | st.lists(DEVICE | JSONISH, max_size=4).map(lambda ds: json.dumps({"blockdevices": ds})))
def test_lsblk(text):
    _only_own_error(guestdisks.parse_lsblk, text, guestdisks.GuestOutputError)


@FUZZ
@given(st.text(max_size=40) | st.lists(st.integers(min_value=-10, max_value=2**40) | st.text(max_size=4),
                                       max_size=3).map(lambda xs: "\n".join(map(str, xs))))
def test_blockdev_sizes(text):
    _only_own_error(guestdisks.parse_blockdev_sizes, text, guestdisks.GuestOutputError)


@FUZZ
@given(st.text(max_size=200) | JSONISH.map(json.dumps) | NVME.map(json.dumps))
def test_nvme_id_ns(text):
    _only_own_error(guestdisks.parse_nvme_id_ns, text, guestdisks.GuestOutputError)


@FUZZ
@given(st.text(max_size=200) | JSONISH.map(json.dumps) | NVME.map(json.dumps))
def test_the_guest_tools_nvme_id_ns(text):
    _only_own_error(nvmeformat.parse_lba_formats, text, nvmeformat.UnexpectedOutput)


@pytest.mark.parametrize("parse, text", [
    (guestdisks.parse_lsblk, '{"blockdevices":[null]}'),
    (guestdisks.parse_lsblk, '{"blockdevices":[{"name":"vdb","type":"disk","serial":7}]}'),
    (guestdisks.parse_blockdev_sizes, "\u00b2\n4096"),
    (guestdisks.parse_nvme_id_ns, '{"flbas":null,"lbafs":[],"nlbaf":null}'),
], ids=["null-device", "serial-not-text", "superscript-digit", "flbas-null"])
def test_what_the_fuzzing_found_is_the_parsers_own_error(parse, text):
    with pytest.raises(guestdisks.GuestOutputError, match="unexpected output of 'the command'"):
        parse(text, "the command")


@pytest.mark.parametrize("text", [
    '{"flbas":0,"nlbaf":0,"lbafs":[{"ds":1180591620717411303424}]}',  # 1 << ds: MemoryError before
    '{"flbas":true,"nlbaf":0,"lbafs":[{"ds":9}]}',
    '{"flbas":0,"nlbaf":null,"lbafs":[{"ds":9}]}',
    '{"flbas":0,"nlbaf":0,"lbafs":[{"ds":9.5}]}',
    '{"flbas":0,"nlbaf":0,"lbafs":["9"]}',
    '{"flbas":0,"nlbaf":0,"lbafs":[{"ds":9,"ms":"8"}]}',
    "[" * 100000,
], ids=["huge-ds", "flbas-bool", "nlbaf-null", "ds-fraction", "format-not-object", "ms-text", "deep-nesting"])
def test_the_guest_tools_parser_refuses_fields_of_the_wrong_type(text):
    with pytest.raises(nvmeformat.UnexpectedOutput) as e:
        nvmeformat.parse_lba_formats(text, "nvme id-ns /dev/nvme0n1 -o json")
    assert str(e.value).startswith("unexpected output of 'nvme id-ns /dev/nvme0n1 -o json': ")
