"""The one exception type the CLI turns into a one-line error and exit status."""


class SectorlabError(Exception):
    """A user-facing failure: the message names the value, what was expected and what to do."""

    exit_status = 1


class UsageError(SectorlabError):
    """Bad input from the user (exit status 2, as for a bad command line). Its message is one
    line: a value it names that holds a newline or another control character (a file name, a Make
    variable) is shown with that character escaped (one_line)."""

    exit_status = 2

    def __str__(self) -> str:
        return one_line(super().__str__())


def one_line(text: str) -> str:
    """`text` with every character that is not printable (newline, carriage return, escape,
    U+2028) written as its escape, so that a value from the user cannot end the line or move the
    terminal's cursor."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
