"""The guest-side shell scripts (sectorlab/inguest/sh/: files shellcheck checks) as the host sends
them to a guest over SSH; the crash judges (crash/databases.py) and the cross-check scenarios
(labtests/support/dbs.py) take theirs from here."""

from __future__ import annotations

import re
from importlib import resources

from ..errors import SectorlabError

# A header line that sources a sibling file: `. "${0%/*}/FILE.sh"`.
_SOURCES = re.compile(r'\. "\$\{0%/\*\}/([\w.-]+\.sh)"')


def guest_script(name: str) -> str:
    """The shell script sectorlab/inguest/sh/NAME as a guest is sent it (`sudo -n sh -c TEXT NAME ARGS...`,
    text over SSH): the texts of the files its header sources, then its own. A file's header, the lines
    up to the first blank one (#!, what it is, the directives to shellcheck, the `. "${0%/*}/FILE.sh"`
    lines), is not sent; the rest is, from that blank line on. So the file run by its path (`sh
    DIR/NAME ARGS...`) runs what the guest is sent, and shellcheck -x reads it whole."""
    text = resources.files("sectorlab.inguest").joinpath("sh", name).read_text(encoding="utf-8")
    header, blank, body = text.partition("\n\n")
    sent = ""
    for line in header.splitlines():
        if m := _SOURCES.fullmatch(line):
            sent += guest_script(m.group(1))
        elif not line.startswith("#"):
            raise SectorlabError(f"sectorlab/inguest/sh/{name}: {line!r} in its header (up to the first blank "
                                 f"line): only comments and the files it sources belong there")
    if not blank:
        raise SectorlabError(f"sectorlab/inguest/sh/{name}: no blank line after its header: nothing to send")
    return sent + "\n" + body
