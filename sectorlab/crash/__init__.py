"""Power loss and torn writes, on two axes: where the cut is made (the device path, or a running
lab) and who judges it (redo-writer verify, or real databases).

The commands: devicepath.py is `sectorlab crash` (the device path, judged by redo-writer verify: a
preset's matrix of profiles, geometries and BLOCKSIZEs) and labdb.py `sectorlab crash-db` (a
running lab, judged by MariaDB and PostgreSQL). What they share:
- powerloss.py: what a cut leaves of a run's writes on each device profile (the rules at a
  geometry, the state a cut leaves), atomic.py whether the stack can promise atomic writes;
- preset.py: a crash preset (labs/crash/*.toml) read and checked;
- redolog.py: a run's redo log as its trace has it, and the disk a cut leaves of the final image;
- writelog.py: a disk's write log (the filter's writelog=), any moment's state built from it;
- labcut.py: a cut of a lab's disk (the VM killed, its disk rewritten to what the cut left);
- labrun.py: the databases' workloads in the lab, cut and judged; databases.py the judges (their
  setup, workload and judge scripts, sectorlab/inguest/sh/) and their verdicts.
The reports are sectorlab/report/crash.py and crashdb.py.
"""
