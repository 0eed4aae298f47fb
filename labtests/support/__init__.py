"""The scenarios' helpers, shared across groups.

lab.py (the declared disks as test parameters and what each should show, steps in the guest such as
blanking or re-plugging a disk, the lab's QEMU processes on this host), requires.py (what a scenario
needs of the running lab, as blktests' requires(): a skip that says what is missing), dbs.py
(databases and filesystems on a lab disk, for the cross-checks), sshd.py (a private OpenSSH server on
127.0.0.1, for the remote-host scenario). data/ holds the bench-check's three-bus preset, guest/ the
sysbench script the cross-checks copy into the guest.
"""
