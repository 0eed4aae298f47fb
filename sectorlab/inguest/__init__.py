"""Code that runs inside the lab's guests: the standard library only (Python 3.9+), no third-party
import and nothing of sectorlab outside this folder. rules.py and redodisk.py are copied into every
guest image (redo-check, provision-redo-disk, reformat-nvme); guestprobe.py is sent to a running
guest at each lab-up and status. The host imports them too (the rules engine, the nvme id-ns
parser), as sectorlab.inguest.*. labtests/unit/test_inguest.py holds them to that.
"""
