"""The appliance bench ([appliance] presets, appliance.json; seed 004, a storage appliance's shares
over NFS): preset.py reads and checks a preset, run.py runs it in its lab."""
