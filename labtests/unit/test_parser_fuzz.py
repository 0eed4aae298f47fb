"""The host's guest-output parsers fuzzed with hypothesis (bounded: 300 examples each): whatever a
guest prints, lsblk's, blockdev's and nvme id-ns's parsers return a result or raise their own error
naming the command, never anything else (a KeyError or TypeError would be a traceback for the user
instead of a line). The guest tools' own copy of the nvme id-ns parser (sectorlab/redodisk.py, in
the image) is not hardened yet: the host wraps what it raises."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sectorlab import guestdisks

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

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


@pytest.mark.parametrize("parse, text", [
    (guestdisks.parse_lsblk, '{"blockdevices":[null]}'),
    (guestdisks.parse_lsblk, '{"blockdevices":[{"name":"vdb","type":"disk","serial":7}]}'),
    (guestdisks.parse_blockdev_sizes, "\u00b2\n4096"),
    (guestdisks.parse_nvme_id_ns, '{"flbas":null,"lbafs":[],"nlbaf":null}'),
], ids=["null-device", "serial-not-text", "superscript-digit", "flbas-null"])
def test_what_the_fuzzing_found_is_the_parsers_own_error(parse, text):
    with pytest.raises(guestdisks.GuestOutputError, match="unexpected output of 'the command'"):
        parse(text, "the command")
