"""The one exception type the CLI turns into a one-line error and exit status."""


class SectorlabError(Exception):
    """A user-facing failure: the message names the value, what was expected and what to do."""

    exit_status = 1


class UsageError(SectorlabError):
    """Bad input from the user (exit status 2, as for a bad command line)."""

    exit_status = 2
