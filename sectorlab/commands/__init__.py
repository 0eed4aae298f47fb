"""What each sectorlab command does; sectorlab/cli.py parses the command line and calls these.

One module per group of commands, as the CLI lists them: host.py (doctor, accel, geometries),
image.py (image build|validate|list|path|boot-time), results.py (compare, plot, report), bench.py
(bench, bench-sweep, bench-load, bench-writer, bench-floor, bench-lab-up), crash.py (crash,
crash-db) and lab.py (terraform-check, lab validate|from-host|fields|up|down|status|forget).
common.py holds what they share: the progress line, the default guest, the one place where the
lab a command names becomes a Lab, and a results directory's report drawn to PNG (--png). Each command
takes the parsed arguments and returns its exit status; an error is raised as a SectorlabError,
which cli.main turns into its one line and exit status.
"""
