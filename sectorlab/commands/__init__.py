"""What each sectorlab command does; sectorlab/cli.py parses the command line and calls these.

One module per group of commands, as the CLI lists them: host.py (doctor, accel, geometries),
image.py (image build|validate|list|path|boot-time), bench.py (compare, plot, report, bench,
bench-writer, bench-lab-up) and lab.py (terraform-check, lab validate|from-host|up|down|status|
forget). common.py holds what they share: the progress line, the default guest, and the one
place where the lab a command names becomes a Lab. Each command takes the parsed arguments and
returns its exit status; an error is raised as a SectorlabError, which cli.main turns into its
one line and exit status.
"""
