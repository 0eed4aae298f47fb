"""The lab's own cost: tools.py is `sectorlab bench-writer` (redo-writer against fio on one file) and
`sectorlab bench-lab-up` (cold and warm lab-up), floor.py `sectorlab bench-floor` (what the lab
itself costs a redo write per bus: the guest's latency beside the model's)."""
