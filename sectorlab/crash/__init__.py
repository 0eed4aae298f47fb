"""Power loss and torn writes: what a cut leaves of a run's writes on each device profile
(powerloss), crash runs on the device path judged by redo-writer verify (run), and their report."""
