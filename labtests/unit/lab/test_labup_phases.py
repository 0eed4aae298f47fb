"""Lab-up's phases (sectorlab/lab/phases/): the tables hand every phase what it needs, and the
runner keeps its promises (order, facts by name, a route picked by a phase, recover steps in
reverse after a failure or an interrupt, a reroute, the phase named where lab-up stopped). No VM:
the runner is driven with phases of the test's own."""

from __future__ import annotations

import pytest

from sectorlab.errors import UsageError
from sectorlab.lab import phases
from sectorlab.lab.phases import runner
from sectorlab.lab.phases.runner import Phase, Reroute


def test_every_phase_on_every_route_is_given_what_it_needs():
    assert runner.unmet(phases.FIRST, phases.ROUTES, set(phases.GIVEN)) == []


def test_the_routes_keep_the_phase_names_the_output_and_the_interrupt_scenarios_use():
    names = {route: [p.name for p in phases.FIRST + rest] for route, rest in phases.ROUTES.items()}
    assert names["cold"] == ["validate", "image", "choose path", "provision", "models", "start", "wait", "save",
                             "hot-plug", "verify"]
    assert names["warm"] == [n for n in names["cold"] if n != "save"]
    assert names["converge"] == names["warm"]


def test_a_table_that_forgets_a_fact_is_named():
    def needs_ports(ports):
        return None
    broken = (Phase("validate", lambda: {"lab": 1}, gives=("lab",)), Phase("late", needs_ports))
    assert runner.unmet(broken, {"cold": ()}, set()) == ["cold: 'late' needs ports"]


class Journal:
    """The phases of a test, writing what they did."""

    def __init__(self):
        self.said, self.did = [], []

    def phase(self, name, gives=(), fail=None, recover=True, route=None):
        def run(count):
            self.did.append(name)
            if fail is not None:
                raise fail
            out = {g: f"{name}:{g}" for g in gives}
            return {**out, "route": route} if route else out

        def undo(count):
            self.did.append(f"recover {name}")
        return Phase(name, run, gives=tuple(gives) + (("route",) if route else ()), recover=undo if recover else None)

    def facts(self):
        return {"progress": self.said.append, "count": 0, "lab": None}


def test_phases_run_in_order_then_the_route_a_phase_picks():
    j = Journal()
    first = (j.phase("a", gives=["x"]), j.phase("pick", route="two"))
    routes = {"one": (j.phase("never"),), "two": (j.phase("b"), j.phase("c"))}
    facts = runner.run(first, routes, j.facts())
    assert j.did == ["a", "pick", "b", "c"]
    assert facts["x"] == "a:x" and facts["route"] == "two"


def test_a_phase_gets_its_facts_by_name():
    seen = {}

    def second(x, progress):
        seen["x"] = x
    runner.run((Phase("one", lambda: {"x": 42}, gives=("x",)), Phase("two", second)), {}, {"progress": print})
    assert seen == {"x": 42}


def test_a_phase_that_returns_what_it_does_not_declare_is_a_fault():
    with pytest.raises(RuntimeError, match="returned y, which it does not declare"):
        runner.run((Phase("one", lambda: {"y": 1}),), {}, {"progress": print})


@pytest.mark.parametrize("failure, said", [(RuntimeError("boom"), "lab-up stopped in its 'c' phase"),
                                           (KeyboardInterrupt(), "lab-up stopped in its 'c' phase (interrupted)")])
def test_a_failure_recovers_the_phases_run_so_far_in_reverse_and_names_the_phase(failure, said):
    j = Journal()
    first = (j.phase("a"), j.phase("b", recover=False), j.phase("c", fail=failure), j.phase("d"))
    with pytest.raises(type(failure)):
        runner.run(first, {}, j.facts())
    assert j.did == ["a", "b", "c", "recover c", "recover a"]
    assert any(said in line for line in j.said)


def test_bad_input_in_the_first_phase_is_its_own_one_line():
    j = Journal()
    with pytest.raises(UsageError):
        runner.run((j.phase("validate", fail=UsageError("lab.toml: bad")),), {}, j.facts())
    assert not any("stopped in its" in line for line in j.said)


def test_a_recover_step_that_fails_is_said_and_the_others_still_run():
    j = Journal()

    def bad_undo(count):
        raise OSError("cannot")
    first = (j.phase("a"), Phase("b", lambda count: None, recover=bad_undo), j.phase("c", fail=RuntimeError("x")))
    with pytest.raises(RuntimeError, match="x"):
        runner.run(first, {}, j.facts())
    assert j.did == ["a", "c", "recover c", "recover a"]
    assert any("'b' phase's recover step failed too: cannot" in line for line in j.said)


def test_a_reroute_recovers_the_phase_and_runs_the_other_route_from_its_first_phase():
    j = Journal()

    def restore(count):
        j.did.append("restore")
        raise Reroute("cold", {"replace": True})
    first = (j.phase("pick", route="warm"),)
    routes = {"warm": (j.phase("provision"), Phase("start", restore, recover=lambda count: j.did.append("unarm")),
                       j.phase("never")),
              "cold": (j.phase("provision"), j.phase("start cold"))}
    facts = runner.run(first, routes, j.facts())
    assert j.did == ["pick", "provision", "restore", "unarm", "provision", "start cold"]
    assert facts["route"] == "cold" and facts["replace"] is True


def test_a_new_phase_is_one_module_and_one_table_entry(monkeypatch):
    """A phase of the kind a new feature adds (here: a module of the test's own that says hello
    after 'verify') plugs in by its PHASE and one entry in a route; the tables still check."""
    import types
    greet = types.ModuleType("greet")

    def run(lab, rows, progress):
        progress(f"hello from {lab} with {len(rows)} rows")
    greet.PHASE = Phase("greet", run)
    monkeypatch.setitem(phases.ROUTES, "cold", phases.ROUTES["cold"] + (greet.PHASE,))
    assert runner.unmet(phases.FIRST, phases.ROUTES, set(phases.GIVEN)) == []
    said = []
    first = (Phase("validate", lambda: {"lab": "t", "rows": [1, 2]}, gives=("lab", "rows")),
             Phase("pick", lambda: {"route": "cold"}, gives=("route",)))
    runner.run(first, {"cold": (greet.PHASE,)}, {"progress": said.append})
    assert said == ["hello from t with 2 rows"]


def test_up_holds_the_lab_lock_only_while_it_runs(monkeypatch):
    """up() hands the phases an ExitStack for the lab's lock; it is closed when lab-up ends, also
    when a phase fails."""
    closed = []

    def validate(given, held, progress):
        held.callback(lambda: closed.append(True))
        raise UsageError("stop here")
    monkeypatch.setattr(phases, "FIRST", (Phase("validate", validate),))
    with pytest.raises(UsageError):
        phases.up("lab.toml", progress=lambda m: None)
    assert closed == [True]
