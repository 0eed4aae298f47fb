"""Running lab-up's phases: each phase is a function that takes, by the names of its parameters,
the facts earlier phases returned, and returns the facts it adds (the shape of Vagrant's action
sequences, STYLE.md). A phase may have a recover step that undoes its own work; when a phase fails
or lab-up is interrupted, the recover steps of the phases run so far are called in reverse. A phase
that picks a path returns a route's name: the phases of that route (ROUTES in __init__.py) follow.
A phase that cannot go on its route but knows another raises Reroute: its recover step runs, and
the other route's phases run from their first.
"""

from __future__ import annotations

import inspect
import os
import time
from dataclasses import dataclass
from typing import Callable

from ...errors import UsageError

PAUSE_ENV = "SECTORLAB_PAUSE_BEFORE"  # a lab-up phase to wait before (pause_point)


@dataclass(frozen=True)
class Phase:
    name: str                                  # as lab-up's output and $SECTORLAB_PAUSE_BEFORE name it
    run: Callable[..., dict | None]            # facts in (by parameter name), new facts out
    gives: tuple[str, ...] = ()                # the facts run() may return
    label: str | None = None                   # timed under this label in the summary (None: not on its own)
    recover: Callable[..., None] | None = None  # undoes this phase's own work after a failure


class Reroute(Exception):
    """Raised by a phase that cannot go on its route: lab-up goes on by `route`, with `facts`."""

    def __init__(self, route: str, facts: dict):
        super().__init__(route)
        self.route, self.facts = route, facts


class Timings(list):
    """(label, seconds) in the order first timed; a label timed again adds up."""

    def add(self, label: str, seconds: float) -> None:
        for t in self:
            if t[0] == label:
                t[1] += seconds
                return
        self.append([label, seconds])


def unmet(first: tuple[Phase, ...], routes: dict[str, tuple[Phase, ...]], given: set[str]) -> list[str]:
    """What a phase (or its recover step) needs that neither `given` nor a phase before it on some
    route gives: the tables' check, made without running anything."""
    problems = []
    for route, rest in routes.items():
        known = set(given)
        for phase in first + rest:
            for fn in (phase.run, phase.recover):
                if fn is not None:
                    problems += [f"{route}: '{phase.name}' needs {n}" for n in needs(fn) if n not in known]
            known |= set(phase.gives)
    return sorted(set(problems))


def needs(fn: Callable) -> list[str]:
    """The facts a phase function takes."""
    return list(inspect.signature(fn).parameters)


def call(fn: Callable, facts: dict):
    missing = [n for n in needs(fn) if n not in facts]
    if missing:  # a phase table out of order: a fault of sectorlab's, said as one
        raise RuntimeError(f"lab-up phase {fn.__module__}.{fn.__qualname__} needs {', '.join(missing)}, "
                           f"which no phase before it gives")
    return fn(**{n: facts[n] for n in needs(fn)})


def pause_point(phase: str, facts: dict) -> None:
    """With $SECTORLAB_PAUSE_BEFORE naming this phase, wait there (up to an hour) after saying so:
    the interrupt scenarios signal a lab-up at a phase of their choice, not at whatever moment a
    timer hits."""
    if os.environ.get(PAUSE_ENV) == phase:
        lab = facts.get("lab")
        facts["progress"](f"lab {lab and lab.name}: paused before its '{phase}' phase ({PAUSE_ENV})")
        time.sleep(3600)


def run(first: tuple[Phase, ...], routes: dict[str, tuple[Phase, ...]], facts: dict) -> dict:
    """Run `first`, then the phases of the route a phase names; returns the facts at the end."""
    facts.setdefault("timings", Timings())
    pending, done = list(first), []
    while pending:
        phase = pending.pop(0)
        start = time.monotonic()
        done.append(phase)
        try:
            pause_point(phase.name, facts)
            out = call(phase.run, facts) or {}
        except Reroute as r:
            _recover([phase], facts)
            facts.update(r.facts, route=r.route)
            pending = list(routes[r.route])
            out = {}
        except BaseException as e:
            # Bad input is refused in one line before anything starts; past that, say where it stopped.
            if phase is not first[0] and not isinstance(e, UsageError):
                lab = facts.get("lab")
                facts["progress"](f"lab {lab and lab.name}: lab-up stopped in its '{phase.name}' phase"
                                  + (" (interrupted)" if isinstance(e, KeyboardInterrupt) else ""))
            _recover(reversed(done), facts)
            raise
        if undeclared := sorted(set(out) - set(phase.gives)):
            raise RuntimeError(f"lab-up phase '{phase.name}' returned {', '.join(undeclared)}, which it does not "
                               f"declare")
        facts.update(out)
        if "route" in out:
            pending = list(routes[out["route"]])
        if phase.label:
            facts["timings"].add(phase.label, time.monotonic() - start)
    return facts


def _recover(phases, facts: dict) -> None:
    """Each phase's recover step, with what it needs of the facts; one that fails is said, and the
    others still run (the first failure is the one lab-up reports)."""
    for phase in phases:
        if phase.recover is None or any(n not in facts for n in needs(phase.recover)):
            continue
        try:
            call(phase.recover, facts)
        except Exception as e:  # noqa: BLE001 - a recover step must not hide the failure that called it
            facts["progress"](f"lab-up: the '{phase.name}' phase's recover step failed too: {e}")
