"""Code that runs inside the lab's guests: the standard library only (Python 3.9+), no third-party
import and nothing of sectorlab outside this folder. rules.py, asmrules.py, redocheck.py, blockdev.py,
redodisk.py and nvmeformat.py are copied into every guest image (redo-check, provision-redo-disk,
reformat-nvme; blockdev.py is what the last two share); guestprobe.py is sent to a running guest at each lab-up
and status. The host imports them too (the rules engine, the nvme id-ns parser), as
sectorlab.inguest.*. labtests/unit/inguest/test_inguest.py holds them to that.

A file that needs a sibling imports it as `try: from . import rules` / `except ImportError: import
rules`: on the host it is a module of this package; in a guest the files lie flat in
/usr/local/lib/sectorlab/, which the launchers put on sys.path, so there is no package and the
relative import fails.
"""
