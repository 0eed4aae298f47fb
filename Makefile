# sectorlab: one verb per step. Everything installs through scripts/bootstrap (idempotent).
SHELL := /bin/bash
.DEFAULT_GOAL := help

# What a user sets (make bench RESULTS=..., or the environment) is taken as written: make expands
# nothing in it (a $ is a $), and the shell never reads it as code. Each variable reaches the
# recipes as an environment variable, quoted there: one argument, or none when empty. PYTEST_ARGS
# alone is several arguments, split as a shell splits words (PYTEST_ARGS_SPLIT below).
# A variable a recipe reads (as $$NAME in the shell) must be here: labtests/unit/test_hostile_third_make.py
# fails on one that is not.
USER_VARS := GUEST LAB LAB_SUFFIX PYTEST_ARGS PRESET DURATION WARMUP REPEATS RESULTS ORDER_SEED SWEEP \
             CUTS CRASH_SEED JUDGES RUNS TARGET SAMPLES PROBE_NAME DESTROY_DATA CLOCK WAKEUP_US CPUS CPU_DIST \
             WAKEUP_DIST LOG_WRITER_CPU_US AWR
# LAB_SUFFIX's default is the environment's SECTORLAB_LAB_SUFFIX, as written.
ifeq ($(origin LAB_SUFFIX),undefined)
override LAB_SUFFIX := $(value SECTORLAB_LAB_SUFFIX)
endif
$(foreach v,$(USER_VARS),$(eval override $(v) := $$(value $(v))))
export $(USER_VARS)

VENV      := .venv
SECTORLAB := $(VENV)/bin/sectorlab
PYTEST    := $(VENV)/bin/pytest
RUFF      := $(VENV)/bin/ruff
CACHE     := $(or $(value SECTORLAB_CACHE),$(or $(value XDG_CACHE_HOME),$(value HOME)/.cache)/sectorlab)
# Shell words of the recipes: an option with its value as one word (--guest=VALUE, so that a value
# that starts with '-' is not read as an option), none when the variable is empty.
GUEST_ARG := $${GUEST:+--guest="$$GUEST"}

# Python keeps the checkout's compiled modules (__pycache__, ignored by git) whatever the caller's
# environment says: make test starts pytest and the sectorlab command hundreds of times, and each
# would compile the package and the tests from source again (pytest's collection of labtests/unit:
# 1.8 s with them kept, 3.7 s without; docs/testing.md).
export PYTHONDONTWRITEBYTECODE :=

# The project's own Terraform CLI config (the libvirt provider from the local mirror); the
# environment may point TF_CLI_CONFIG_FILE at a file that does not exist.
export TF_CLI_CONFIG_FILE := $(CACHE)/tools/terraform.rc
export CHECKPOINT_DISABLE := 1

LAB_ARG   := $${LAB:+--lab="$$LAB"}
# Appended to every lab's name (LAB_SUFFIX=-job2): two checkouts on one host, such as two CI jobs on
# one runner, then run their labs apart (domains, pools, ports, keys, saved states; docs/reliability.md).
export SECTORLAB_LAB_SUFFIX := $(LAB_SUFFIX)
# Extra pytest arguments for the lab scenarios, e.g. PYTEST_ARGS="-k sector4k" or "-k 'a or b'":
# split into words as a shell splits them (quotes and backslashes group; nothing is expanded, run
# or globbed: a ';' or '$(...)' is text in a word). Unbalanced quotes are one line and exit 2,
# before anything starts.
define PYTEST_ARGS_SPLIT
import os, shlex, sys
value = os.environ.get("PYTEST_ARGS", "")
try:
    words = shlex.split(value)
except ValueError as e:
    sys.exit(f"make: PYTEST_ARGS={value!r}: {e}; expected pytest's arguments quoted as in a shell "
             f"(PYTEST_ARGS=\"-k 'a or b'\"): close the quote, or put a backslash before a quote "
             "or backslash that is text")
sys.stdout.write("".join(word + "\0" for word in words))
endef
export PYTEST_ARGS_SPLIT
# Shell: the bash array pytest_args holds PYTEST_ARGS's words (exit 2 when they do not split).
pytest-args = mapfile -d '' -t pytest_args < <($(VENV)/bin/python -c "$$PYTEST_ARGS_SPLIT"); wait $$! || exit 2
# Shell: `show COMMAND...` prints the command as make prints a recipe's line (not under make -s), each
# word quoted as the shell would need it (what is shown is what runs), then runs it in the shell's
# place (the recipe's last command).
show = show() { $(if $(findstring s,$(firstword -$(MAKEFLAGS))),,local line; line=$$(printf '%q ' "$$@"); \
  printf '%s\n' "$${line% }";) exec "$$@"; }
# make bench: the preset (labs/bench/PRESET.toml; empty: vsphere-512e) and what overrides its [bench]:
# DURATION, WARMUP, REPEATS, RESULTS, and ORDER_SEED, the seed of the run order (a bench's report
# prints the one it drew: ORDER_SEED=n repeats its order); CLOCK_OPTIONS, its twins' clock. The preset follows '--': a name that
# starts with '-' is a preset's name, not an option.
BENCH_ARGS := $${DURATION:+--duration="$$DURATION"} $${WARMUP:+--warmup="$$WARMUP"} \
              $${REPEATS:+--repeats="$$REPEATS"} $${RESULTS:+--results="$$RESULTS"} \
              $${ORDER_SEED:+--seed="$$ORDER_SEED"} $${PRESET:+-- "$$PRESET"}

.PHONY: help bootstrap bootstrap-all doctor image lab-up lab-down lab-status test test-lane-labs test-lane-databases test-lane-devices test-labs test-databases test-devices test-busy test-crosscheck test-behaviours test-zfs test-crash test-probe-guest test-devicemodel test-write-units crosscheck unit fuzz smoke scenarios check bench-boot bench-writer \
        bench-lab-up bench-floor bench-tails bench-host bench bench-all bench-check bench-timing bench-sweep bench-load crash crash-db faults \
        faults-beside faults-hostwide alone ci-more ci-lane-busy ci-lane-appliances ci-lane-bench ci-busy ci-appliances \
        ci-bench ci-alone probe

help:
	@echo "make lab-up               bootstrap the host, build the image if needed, bring up the lab and verify every disk"
	@echo "make test                 three lanes at once, each line prefixed by its lane, each tier's time at the end:"
	@echo "                            labs: lab-up, the scenarios, lab-down (also on failure), then a warm lab-up"
	@echo "                                  from the saved state and the sector-detection and restart scenarios again,"
	@echo "                                  the image smoke test, two labs whose names share a prefix (ownership)"
	@echo "                            databases: unit tests, the cross-checks on a lab of their own (default-db)"
	@echo "                            devices: the device model served on this host (nbdkit + qemu-io, judged by"
	@echo "                                  its trace), the device-behaviour lab (labs/behaviours.toml) and its"
	@echo "                                  scenarios, a lab made by 'sectorlab lab from-host' from a saved file, the"
	@echo "                                  scenarios on labs/write-units.toml (write units above 4 KiB)"
	@echo "                          LAB_SUFFIX=-job2 gives every lab a name of its own (two checkouts on one host)"
	@echo "make test-busy            the device model and the behaviour lab again beside stress-ng --cpu 1 (CI runs it)"
	@echo "make ci-more              what CI runs after make test: three lanes (busy: test-busy, fuzz, the package"
	@echo "                          installed whole, faults; appliances: test-crash, test-zfs; bench: bench-check),"
	@echo "                          then with nothing beside them libvirtd stopped under a lab, and make alone"
	@echo "make crosscheck           lab-up, MariaDB, pg_test_fsync and XFS on every disk (docs/cross-checks.md), lab-down"
	@echo "make lab-down             destroy the lab: no domain, volume, pool, process or state left"
	@echo "make lab-status           the lab's VMs and what each guest sees"
	@echo "make image GUEST=...      build one guest image with Packer (cached by the hash of its inputs)"
	@echo "make doctor               what this host has: accelerator, libvirt, provider, packer, terraform, disk"
	@echo "make check                shellcheck, ruff, packer/terraform fmt + validate, redo-writer with -Werror"
	@echo "make bench [PRESET=p3700-4k] [DURATION=s] [REPEATS=n] [ORDER_SEED=n]  a seed's experiment: its own lab up, every"
	@echo "                          configuration REPEATS times in random interleaved rounds (open loop, controls), lab down,"
	@echo "                          results/<time>-<preset>/report.html (sectorlab bench --list); CLOCK=virtual: each"
	@echo "                          run's device-path twin in the models' own time"
	@echo "make bench-sweep PRESET=p [SWEEP=param]  an assumed device parameter over its plausible range on the device"
	@echo "                          path (no lab): where each headline flips (also make bench PRESET=p SWEEP=param)"
	@echo "make bench-load PRESET=p  the seed's own load, closed loop, on the device path (no lab): group commit and"
	@echo "                          the seed's figures beside the lab's; CLOCK=virtual (also bench-sweep): in the"
	@echo "                          models' own time, at any load [WAKEUP_US=us] [CPUS=n] [CPU_DIST=exponential|fixed]"
	@echo "                          [WAKEUP_DIST=exponential|fixed] [LOG_WRITER_CPU_US=us]; AWR=awrrpt.txt: an AWR"
	@echo "                          report's load (Oracle's text or HTML layout, or its tables quoted from a web"
	@echo "                          page) in place of the seed's"
	@echo "make probe TARGET=dir     a device's timing at queue depth 1 through a file the probe makes in dir (or a"
	@echo "                          block device or an NBD URI, each with DESTROY_DATA=yes), and a calibrated profile:"
	@echo "                          results/<time>-probe-NAME/profile.toml and report.html (docs/probe.md)"
	@echo "make crash [PRESET=redo-matrix]  power cuts on the device path (no lab) per profile, geometry and BLOCKSIZE,"
	@echo "                          3 runs a cell, cuts inside the writes' windows and at random moments, judged by"
	@echo "                          redo-writer verify: acknowledged commits lost, torn blocks, their rates (docs/crash.md)"
	@echo "make crash-db [RUNS=3] [CUTS=7] [JUDGES=a,b]  power cuts judged by MariaDB (doublewrite on, off) and PostgreSQL"
	@echo "                          (full_page_writes on, off; off without data checksums) in a lab of their own, 4 disks"
	@echo "make bench-all            every preset in turn (about 60 minutes; zfs-appliance builds its image the first time)"
	@echo "make bench-check          make bench on the default preset with short runs, checked against its files; a three-bus"
	@echo "                          preset's device counters; a Ctrl-C and a SIGTERM"
	@echo "make bench-timing         how late the device model replies, per distribution and profile (a quiet machine)"
	@echo "make unit                 the unit tests (no VM), property tests at most 20 examples each"
	@echo "make fuzz                 the property tests at their own depth (hundreds of examples each)"
	@echo "make alone                with no lab up: a lab on a libvirt host over qemu+ssh (an sshd on 127.0.0.1), a Ctrl-C of make test"
	@echo "make faults               a VM's QEMU killed, a volume deleted, a device model killed, the state directory lost:"
	@echo "                          lab-status names each, lab-up/down heal it; also libvirtd stopped under the lab"
	@echo "                          and during lab-ups (faults-beside: all but those three; faults-hostwide: those,"
	@echo "                          nothing beside them)"
	@echo "make test-zfs             seed 004: OpenZFS and NFS in a guest of its own (labs/zfs-nfs.toml; its image ~6 min the first time)"
	@echo "make test-probe-guest     the probe's round trip in a guest: five profiles probed, fitted, served and probed"
	@echo "                          again, the guest's path measured on each disk's own floor and taken away (two labs)"
	@echo "make test-crash           power cuts in a lab of its own: QEMU killed mid-redo and mid-commit, recovery judged"
	@echo "                          in the guest by redo-writer, MariaDB and PostgreSQL"
	@echo "make bench-boot           boot the image 3 times, median time to SSH login"
	@echo "make bench-lab-up         cold and warm lab-up side by side, 3 rounds (destroys the running lab)"
	@echo "make bench-floor          what the lab itself costs a redo write, per bus, in the running lab (3 rounds)"
	@echo "make bench-tails          the catalog's tails held to their sources on this host's device path [SAMPLES=n]"
	@echo "make bench-host           this host's wake-up and log writer CPU per write, for CLOCK=virtual's WAKEUP_US and"
	@echo "                          LOG_WRITER_CPU_US (each also =host: measured before the runs)"
	@echo "make bench-writer         redo-writer against fio on the same file, post/wait and polling (4 rounds each)"
	@echo "LAB=labs/x.toml selects another lab definition; PYTEST_ARGS='-k sector4k' narrows the scenarios"

bootstrap:
	@scripts/bootstrap

# Also what make check and report --png need (shellcheck, chromium), which a lab does not.
bootstrap-all:
	@scripts/bootstrap --all

doctor: bootstrap
	@$(SECTORLAB) doctor

image: bootstrap
	@$(SECTORLAB) image build $(GUEST_ARG)

lab-up: bootstrap
	@$(SECTORLAB) lab up $(LAB_ARG)

lab-down: bootstrap
	@$(SECTORLAB) lab down $(LAB_ARG)

lab-status: bootstrap
	@$(SECTORLAB) lab status $(LAB_ARG)

# The unit tests in workers side by side (pytest-xdist): four, the fastest of three to six on this
# machine's 2 cores (docs/testing.md has the times), handed tests at most 16 at a time, so that no
# worker holds a long run of long tests while the others run out (labtests/unit/conftest.py).
UNIT_WORKERS := 4
UNIT_XDIST = -n $(UNIT_WORKERS) --maxschedchunk 16
unit: bootstrap
	$(PYTEST) $(UNIT_XDIST) labtests/unit

# The property tests at their own depth (labtests/support/depth.py): make test draws at most 20
# examples a property, this each property's own count (a few minutes; CI runs it).
fuzz: bootstrap
	SECTORLAB_FUZZ=deep $(PYTEST) $(UNIT_XDIST) -m hypothesis labtests/unit

smoke: image
	@$(show); show env SECTORLAB_GUEST="$$GUEST" $(PYTEST) -m vm labtests

# The scenarios against a running lab (make lab-up first).
scenarios: bootstrap
	@$(show); $(pytest-args); show env SECTORLAB_LAB_FILE="$$LAB" $(PYTEST) -m lab labtests "$${pytest_args[@]}"

# $(call lab-run,LAB-UP OPTIONS,PYTEST SELECTION[,LAB FILE[,TIER]]): lab-up, those scenarios, and
# lab-down whatever they did. The lab is $(LAB) (the default lab when empty) unless a file is given;
# a TIER's time is recorded for make test's table (scripts/timed --record), and its 8 slowest
# scenarios are printed (pytest --durations).
# PYTEST_ARGS that do not split into words are one line before the lab-up. When PYTEST_ARGS narrows
# the selection (the CI matrix's -k GEOMETRY) and leaves none of this lab's scenarios, pytest's
# "no tests collected" (exit 5) is said and passes; without PYTEST_ARGS it fails.
# A Ctrl-C stops the lab-up or the scenarios (they get the signal), and the lab is still taken down:
# the shell traps SIGINT (its children keep the default), and make waits for it (exit 130).
define lab-run
@$(pytest-args); start=$$SECONDS; rc=0; int=0; trap 'int=1' INT; if $(SECTORLAB) lab up $(1) $(if $(3),--lab $(3),$(LAB_ARG)); then \
  SECTORLAB_LAB_FILE=$(if $(3),$(3),"$$LAB") $(PYTEST) $(if $(4),--durations=8) $(2) "$${pytest_args[@]}"; s=$$?; \
  if [ $$s -eq 5 ] && [ $${#pytest_args[@]} -gt 0 ]; then \
    echo "make: PYTEST_ARGS=$$PYTEST_ARGS selects none of these scenarios ($(2))"; \
  elif [ $$s -ne 0 ]; then rc=1; fi; \
  else rc=1; fi; \
  if [ $$int -eq 1 ]; then echo "make: interrupted; taking the lab down"; rc=130; fi; \
  $(SECTORLAB) lab down $(if $(3),--lab $(3),$(LAB_ARG)) || rc=1; \
  $(if $(4),scripts/timed --record "$(4)" $$rc $$((SECONDS - start));) exit $$rc
endef

# Everything from a fresh clone: three lanes at once, every line of their output starting with its
# lane's name (scripts/tag). Each lane runs one guest (one vCPU under TCG) at a time. No scenario
# judges this host's timing margins (docs/testing.md): the lanes may run beside each other and
# beside whatever else a CI runner runs (.ci/run runs the device lanes again beside a CPU hog).
# The lanes are laid out by their measured lengths (docs/testing.md has the table).
# Lane "labs": lab-up, the scenarios, lab-down; a second lab-up restores the state the first one
# saved: the sector-detection scenarios must pass after it as after a cold boot; then the lab is
# stopped as a host restart stops it, and a lab-up must bring it back with fresh disks; then the
# image smoke test and two labs whose names share a prefix (labtests/lab/test_ownership.py: a
# command touches only its own lab). The last two here since the guests keep their mappings under
# TCG (norandmaps), which took this lane from 420 to 224 s against 327 and 348 s for the others.
# Lane "databases": the unit tests, the real-database cross-checks on a lab of their own with the
# same disks (the lab's name with -db appended).
# Lane "devices": the device model served on this host (labtests/devices/test_devicemodel_host.py),
# the device-behaviour lab (labs/behaviours.toml) and its scenarios, a lab made by `sectorlab lab
# from-host` from a saved collector file (its own lab-up and lab-down), then the scenarios on disks
# whose write unit is above 4 KiB (labs/write-units.toml).
# Each tier's time is printed at the end (scripts/timed, scripts/times); a Ctrl-C stops the lanes
# (each lane's labs are taken down; exit 130).
test: bootstrap image
	$(call lanes,make test,test-lane-labs test-lane-databases test-lane-devices)

# $(call lanes,NAME,LANES[,AFTER]): the LANES (make targets) at once, each line of their output
# starting with its lane's name (scripts/tag), then, when they passed, the AFTER targets one after
# another with nothing beside them; each tier's time at the end (scripts/timed, scripts/times). A
# Ctrl-C stops them (each lane's labs are taken down; exit 130). Under make -n the line runs ('+', as
# a line naming $$(MAKE) does): the lanes' makes say what they would run, and run nothing.
define lanes
+@start=$$SECONDS; int=0; trap 'int=1' INT; SECTORLAB_TEST_TIMES=$$(mktemp -t sectorlab-test-times.XXXXXX) || exit 1; \
  export SECTORLAB_TEST_TIMES; \
  $(MAKE) --no-print-directory -j$(words $(2)) $(2); rc=$$?; \
  $(if $(3),if [ $$rc -eq 0 ] && [ $$int -eq 0 ]; then $(MAKE) --no-print-directory $(3); rc=$$?; fi;) \
  if [ $$int -eq 1 ]; then rm -f "$$SECTORLAB_TEST_TIMES"; echo "$(1): interrupted after $$((SECONDS - start)) s; each" \
    "lane's last lines say where it stopped; its labs were taken down ('sectorlab lab status' names any still up)"; \
    exit 130; fi; \
  scripts/times "$$SECTORLAB_TEST_TIMES" $$((SECONDS - start)) "$(1)"; rm -f "$$SECTORLAB_TEST_TIMES"; \
  if [ $$rc -eq 0 ]; then echo "$(1): passed in $$((SECONDS - start)) s"; \
  else echo "$(1): FAILED after $$((SECONDS - start)) s (each lane's last line says how it ended)"; fi; exit $$rc
endef

# What .ci/run runs after make test, laid out as make test is by their measured lengths and what
# each takes of the host (docs/testing.md): three lanes at once, then what needs the host to itself.
# Lane "busy": the device model and the behaviour lab beside a CPU hog (test-busy: the other lanes
# beside it only make it busier), the property tests at their depth (fuzz), the package installed
# whole into a virtualenv of its own (scripts/check-install), the faults injected into a running
# lab (faults-beside: all but those that stop libvirtd).
# Lane "appliances": a power cut (test-crash: it waits on its disks more than it computes, so it
# goes beside the hog), then OpenZFS and NFS in a guest of their own (test-zfs: it computes).
# Lane "bench": make bench on the default preset, short runs (bench-check).
# Then alone: libvirtd stopped under a running lab and during lab-ups (faults-hostwide), make alone.
# Each lane's targets run with bootstrap and the image already done (-o: not remade); each line
# names $(MAKE) itself, so make hands it the jobserver (and make -n runs it, to say what it would run).
CI_LANE_FLAGS := --no-print-directory -o bootstrap -o bootstrap-all -o image
ci-more: bootstrap-all image
	$(call lanes,make ci-more,ci-lane-busy ci-lane-appliances ci-lane-bench,ci-alone)

ci-lane-busy:
	@scripts/tag busy $(MAKE) $(CI_LANE_FLAGS) ci-busy

ci-lane-appliances:
	@scripts/tag appliances $(MAKE) $(CI_LANE_FLAGS) ci-appliances

ci-lane-bench:
	@scripts/tag bench $(MAKE) $(CI_LANE_FLAGS) ci-bench

# test-busy's behaviour lab records its own tier under make test's name ("devices: behaviour lab"):
# here only this lane's line is recorded.
ci-busy:
	scripts/timed "busy: device model, behaviour lab, CPU hog" env -u SECTORLAB_TEST_TIMES $(MAKE) $(CI_LANE_FLAGS) test-busy
	scripts/timed "busy: property tests at depth" $(MAKE) $(CI_LANE_FLAGS) fuzz
	scripts/timed "busy: the package installed whole" scripts/check-install
	scripts/timed "busy: faults in a running lab" $(MAKE) $(CI_LANE_FLAGS) faults-beside

ci-appliances:
	scripts/timed "appliances: a power cut" $(MAKE) $(CI_LANE_FLAGS) test-crash
	scripts/timed "appliances: OpenZFS and NFS" $(MAKE) $(CI_LANE_FLAGS) test-zfs

ci-bench:
	scripts/timed "bench: make bench, short runs" $(MAKE) $(CI_LANE_FLAGS) bench-check

ci-alone:
	scripts/timed "alone: libvirtd stopped under a lab" $(MAKE) $(CI_LANE_FLAGS) faults-hostwide
	scripts/timed "alone: remote host, Ctrl-C of make test" $(MAKE) $(CI_LANE_FLAGS) alone
	scripts/timed "alone: the probe's round trip in a guest" $(MAKE) $(CI_LANE_FLAGS) test-probe-guest

# The file make test's tiers append their times to (scripts/timed), handed to the lanes through
# their environment: make test makes one of its own and removes it at its end; a target run alone
# has none and records nothing.
export SECTORLAB_TEST_TIMES ?=

test-lane-labs:
	@scripts/tag labs $(MAKE) --no-print-directory test-labs

test-lane-databases:
	@scripts/tag databases $(MAKE) --no-print-directory test-databases

test-lane-devices:
	@scripts/tag devices $(MAKE) --no-print-directory test-devices

# After the warm lab-up: sector detection again, then the lab stopped and brought back.
WARM_SCENARIOS := labtests/geometry/test_sector_detection.py labtests/lab/test_lab_restart.py
test-labs:
	$(call lab-run,,-m "lab and not behaviours and not crosscheck" labtests,,labs: the default lab)
	$(call lab-run,--require-warm,-m "lab or lifecycle" $(WARM_SCENARIOS),,labs: the warm lab-up)
	@$(show); show scripts/timed "labs: image smoke" env SECTORLAB_GUEST="$$GUEST" $(PYTEST) -m vm labtests
	scripts/timed "labs: ownership" $(PYTEST) -m ownership labtests

test-databases:
	scripts/timed "databases: unit tests" env -u SECTORLAB_TEST_TIMES $(PYTEST) $(UNIT_XDIST) labtests/unit
	@$(MAKE) --no-print-directory test-crosscheck

test-devices:
	@scripts/timed "devices: model on this host" $(MAKE) --no-print-directory test-devicemodel
	@$(MAKE) --no-print-directory test-behaviours
	scripts/timed "devices: from-host lab" $(PYTEST) -m fromhost labtests
	@$(MAKE) --no-print-directory test-write-units

# The scenarios that judge time (from the model's trace: the device model on this host and the
# device-behaviour lab) again beside a CPU hog (stress-ng --cpu 1, a shared CI runner's neighbour):
# they must pass on a busy host too (.ci/run runs it).
test-busy: bootstrap-all
	@scripts/beside-cpu-hog make --no-print-directory test-devicemodel test-behaviours

# The scenarios of each disk on disks that write in units above 4 KiB (labs/write-units.toml):
# lab-up, sector detection, BLOCKSIZE verdicts, provisioning and redo-writer, lab-down (the
# scenarios that are not about a disk run on the default lab).
WRITE_UNIT_SCENARIOS := labtests/geometry/test_sector_detection.py labtests/rules/test_redo_blocksize.py \
  labtests/geometry/test_provision_redo_disk.py labtests/rules/test_redo_writer_lab.py
test-write-units:
	$(call lab-run,,-m lab $(WRITE_UNIT_SCENARIOS),labs/write-units.toml,devices: write units)

test-devicemodel:
	$(PYTEST) -m devicemodel labtests

test-behaviours: bootstrap
	$(call lab-run,,-m "lab and behaviours" labtests,labs/behaviours.toml,devices: behaviour lab)

# Seed 004: OpenZFS and NFS in a guest of their own (labs/zfs-nfs.toml); its image, debian12-zfs,
# is built the first time (about 6 min), then cached like any other (docs/zfs-nfs.md).
test-zfs: bootstrap
	$(call lab-run,,-m zfs labtests,labs/zfs-nfs.toml)

# The probe's round trip in a guest (labtests/devices/test_probe_guest.py; docs/probe.md): five
# profiles' models probed from inside a guest, its path measured on each disk itself (its model
# answering as a floor in the floor's turns), the fitted profiles served in a second lab and probed
# again; each lab up and down in turn. In CI's alone lane (ci-alone) since 2026-12-01, when it held
# five runs of five on the rules it has (a step judged on the path, the path's spread taken out
# once, what a time is known to including how far the path moved near it between the turns),
# after 3, 4, 5, 5, 4, 5, 4 and 4 of 5 as the causes were found (docs/probe.md).
test-probe-guest: bootstrap image
	$(PYTEST) -m probeguest labtests

# A power cut in a lab of its own (labs/power-cut.toml; docs/crash.md): the guest's QEMU killed
# mid-redo, the disk set to what the cut left, recovery judged in the guest.
test-crash: bootstrap
	$(call lab-run,,-m crash labtests,labs/power-cut.toml)

test-crosscheck: export SECTORLAB_LAB_SUFFIX := $(LAB_SUFFIX)-db
test-crosscheck:
	$(call lab-run,,-m "lab and crosscheck" labtests,,databases: cross-checks)

# The real databases and XFS on every disk of the lab (docs/cross-checks.md): lab-up, the
# scenarios, lab-down (make test runs them on a lab of their own beside the default lab).
crosscheck: bootstrap image
	$(call lab-run,,-m "lab and crosscheck" labtests)

# Faults injected into a running lab (labtests/lab/test_faults.py): lab-up, the scenarios, lab-down.
# faults-beside: all but the three that stop libvirtd (marked hostwide), which other labs may run
# beside (.ci/run's lanes); faults-hostwide: those three, with nothing beside them.
faults: bootstrap
	$(call lab-run,,-m faults labtests)

faults-beside: bootstrap
	$(call lab-run,,-m "faults and not hostwide" labtests)

faults-hostwide: bootstrap
	$(call lab-run,,-m "faults and hostwide" labtests)

# What needs this host to itself (no lab up): a lab on a remote libvirt host, qemu+ssh:// to an sshd
# started on 127.0.0.1 for the test (labtests/lab/test_remote_host.py; it re-uploads the shared guest
# image), and a Ctrl-C of a whole make test (labtests/lab/test_make_test_interrupt.py).
alone: bootstrap image
	$(PYTEST) -m alone labtests

# Every lab definition at the top of labs/ is validated, whatever its name (labs/crash/'s presets by
# crash --list).
check: bootstrap-all
	shellcheck -x scripts/bootstrap scripts/build-provider scripts/build-debian-base scripts/debian-boot-files scripts/lib.sh scripts/tag scripts/timed scripts/times scripts/beside-cpu-hog scripts/collect-host-geometry .ci/run packer/scripts/*/*.sh packer/files/sectorlab-nvme-tcp sectorlab/inguest/sh/*.sh
	$(RUFF) check sectorlab labtests images/debian12/overlay/usr/local/sbin/sectorlab-seed
	packer fmt -check packer
	$(SECTORLAB) image validate
	$(SECTORLAB) terraform-check
	@rc=0; for lab in labs/*.toml; do echo "$(SECTORLAB) lab validate --offline $$lab"; \
	  $(SECTORLAB) lab validate --offline "$$lab" || rc=1; done; exit $$rc
	$(SECTORLAB) bench --list
	$(SECTORLAB) crash --list
	$(MAKE) -C redo-writer
	$(MAKE) -C devicemodel

# A seed's experiment (labs/bench/): on a quiet machine, with no other lab up. With SWEEP, make bench
# is make bench-sweep, chosen here rather than in the recipe: a recipe line that holds $(MAKE) runs
# even under make -n, and the whole bench ran when a user asked what would run.
ifeq ($(SWEEP),)
bench: bootstrap
	@$(show); show $(SECTORLAB) bench $(CLOCK_OPTIONS) $(BENCH_ARGS)
else
bench: bench-sweep
endif

# An assumed device parameter of a preset over its plausible range, on the device path (no lab):
# make bench-sweep PRESET=vsphere-512e [SWEEP=write-buffer] [REPEATS=n] [DURATION=s] [ORDER_SEED=n]
# [CLOCK=virtual [WAKEUP_US=us] [CPUS=n] [CPU_DIST=exponential|fixed]].
bench-sweep: bootstrap
	@$(show); show $(SECTORLAB) bench-sweep $${SWEEP:+--param="$$SWEEP"} $${REPEATS:+--repeats="$$REPEATS"} \
	  $${DURATION:+--duration="$$DURATION"} $${ORDER_SEED:+--seed="$$ORDER_SEED"} $${RESULTS:+--results="$$RESULTS"} \
	  $(CLOCK_OPTIONS) -- "$${PRESET:-vsphere-512e}"

# The seed's own load (its sessions, redo and CPU per transaction), closed loop on the device path:
# With AWR=FILE, an AWR report's load (Oracle's text or HTML layout, or its tables quoted from a web page)
# in place of the preset's (sectorlab/awr/).
# make bench-load PRESET=ssd-vs-hdd [AWR=awrrpt.txt] [REPEATS=n] [DURATION=s] [ORDER_SEED=n] [CLOCK=virtual
# [WAKEUP_US=us] [CPUS=n] [CPU_DIST=exponential|fixed]].
bench-load: bootstrap
	@$(show); show $(SECTORLAB) bench-load $${REPEATS:+--repeats="$$REPEATS"} $${DURATION:+--duration="$$DURATION"} \
	  $${ORDER_SEED:+--seed="$$ORDER_SEED"} $${RESULTS:+--results="$$RESULTS"} $${AWR:+--awr="$$AWR"} $(CLOCK_OPTIONS) \
	  -- "$${PRESET:-ssd-vs-hdd}"

# The clock of bench-sweep's and bench-load's runs, and of make bench's device-path twins
# (redo-writer/README.md, "Virtual time").
CLOCK_OPTIONS = $${CLOCK:+--clock="$$CLOCK"} $${WAKEUP_US:+--wakeup-us="$$WAKEUP_US"} $${CPUS:+--cpus="$$CPUS"} \
	  $${CPU_DIST:+--cpu-dist="$$CPU_DIST"} $${WAKEUP_DIST:+--wakeup-dist="$$WAKEUP_DIST"} \
	  $${LOG_WRITER_CPU_US:+--log-writer-cpu-us="$$LOG_WRITER_CPU_US"}

# A device's timing, and a profile calibrated from it (docs/probe.md):
# make probe TARGET=/u01/oradata [SAMPLES=n] [PROBE_NAME=name] [RESULTS=dir] [DESTROY_DATA=yes for a block device or an NBD URI].
probe: bootstrap
	@case "$${DESTROY_DATA-}" in ""|yes) ;; *) printf '%s\n' "make: DESTROY_DATA=$$(printf '%q' "$$DESTROY_DATA"): expected yes (a block"\
	  "device or NBD TARGET is written over) or nothing"; exit 2;; esac; \
	$(show); show $(SECTORLAB) probe $${SAMPLES:+--samples="$$SAMPLES"} $${PROBE_NAME:+--name="$$PROBE_NAME"} \
	  $${RESULTS:+--results="$$RESULTS"} $${DESTROY_DATA:+--destroy-data} -- "$${TARGET-}"

# Power cuts on the device path (no lab), judged by redo-writer verify; docs/crash.md:
# make crash [PRESET=redo-matrix] [RUNS=n] [CUTS=n] [CRASH_SEED=n] [CLOCK=virtual].
crash: bootstrap
	@$(show); show $(SECTORLAB) crash $${RUNS:+--runs="$$RUNS"} $${CUTS:+--cuts="$$CUTS"} \
	  $${CRASH_SEED:+--seed="$$CRASH_SEED"} $${CLOCK:+--clock="$$CLOCK"} \
	  $${RESULTS:+--results="$$RESULTS"} -- "$${PRESET:-redo-matrix}"

# The databases' power cuts: a lab of their own (labs/crash-databases.toml), taken down after.
crash-db: bootstrap
	@rc=0; lab=labs/crash-databases.toml; \
	  if $(SECTORLAB) lab up --lab $$lab; then \
	    $(SECTORLAB) crash-db --lab $$lab $${RUNS:+--runs="$$RUNS"} $${CUTS:+--cuts="$$CUTS"} \
	      $${CRASH_SEED:+--seed="$$CRASH_SEED"} \
	      $${JUDGES:+--judges="$$JUDGES"} $${RESULTS:+--results="$$RESULTS"} || rc=1; \
	  else rc=1; fi; \
	  $(SECTORLAB) lab down --lab $$lab || rc=1; exit $$rc

# The catalog's tails (a profile's times given as its source's percentiles) held to their sources on
# this host's device path over NBD (docs/device-models.md, "Tails"); on a quiet machine:
# make bench-tails [SAMPLES=n] [RESULTS=dir].
bench-tails: bootstrap
	@$(show); show $(SECTORLAB) geometries --tails device $${SAMPLES:+--samples="$$SAMPLES"} \
	  --results="$${RESULTS:-results}"

bench-all: bootstrap
	@set -e; for p in $$($(SECTORLAB) bench --list | cut -d' ' -f1); do $(SECTORLAB) bench -- "$$p"; done

bench-check: bootstrap
	@$(show); $(pytest-args); show $(PYTEST) -m bench labtests "$${pytest_args[@]}"

# How late the device model's replies are on this host, each distribution and catalog profile
# (labtests/bench/test_model_timing.py): held to OVERSHOOT_P50_US at the median, so run it on a quiet
# machine (CI does not: a shared runner is not one; docs/device-models.md has the numbers).
bench-timing: bootstrap
	@$(show); $(pytest-args); show $(PYTEST) -m timing labtests "$${pytest_args[@]}"

# redo-writer against fio on the same file, side by side (run it on a quiet machine).
bench-writer: bootstrap
	$(MAKE) -C redo-writer
	@echo "== post/wait (default): each commit wakes the log writer and sleeps until it is woken"
	$(SECTORLAB) bench-writer --rounds 4 --seconds 10
	@echo "== polling (--spin-us 300): as Oracle's adaptive log file sync in polling mode"
	$(SECTORLAB) bench-writer --rounds 4 --seconds 10 --spin-us 300

bench-lab-up: bootstrap
	@$(show); show $(SECTORLAB) bench-lab-up $(LAB_ARG) --rounds 3

# What the lab itself costs a redo write, per bus, in the running lab (run it on a quiet machine).
bench-floor: bootstrap
	@$(show); show $(SECTORLAB) bench-floor $(LAB_ARG) --rounds 3 --seconds 4

# This host's wake-up and log writer CPU per write, for the virtual clock's modelled host
# (bench/cost/host.py): make bench-load CLOCK=virtual WAKEUP_US=... LOG_WRITER_CPU_US=... (or =host).
bench-host: bootstrap
	@$(show); show $(SECTORLAB) bench-host

bench-boot: image
	@$(show); show $(SECTORLAB) image boot-time $(GUEST_ARG) --runs 3
