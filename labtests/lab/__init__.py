"""The lab itself rather than its disks: the guest image boots with what every guest needs
(test_image_smoke); a stopped lab comes back and a running one converges (test_lab_restart); faults
from outside and interrupted lab-ups and make tests are named and healed (test_faults,
test_interrupts, test_make_test_interrupt); the guests are isolated from the host (test_isolation); a
command touches only its own lab (test_ownership); a lab runs on a remote libvirt host
(test_remote_host). Their markers differ (faults, alone, lifecycle, ownership, vm, lab): each runs
where the Makefile selects it.
"""
