"""Benches on the device path alone (this host straight to the device models over NBD; no lab, no
guest): runs.py starts the models and runs a preset's configurations on them in random rounds;
sweep.py is `sectorlab bench-sweep` (an assumed parameter over its range), load.py `sectorlab
bench-load` (the seed's own load, closed loop)."""
