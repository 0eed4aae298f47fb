"""The pictures' log axes: the ticks a reader sees are matplotlib's own, made without the ones it
would make and not draw."""

from __future__ import annotations

import io

import pytest

from sectorlab.analysis import plots


@pytest.mark.parametrize("low, high", [(0.05, 0.4), (0.0011, 870.0), (3.1, 3.9), (12.0, 12000.0)])
def test_a_log_axis_makes_only_the_ticks_it_draws_and_draws_matplotlibs(low, high):
    from matplotlib.ticker import LogLocator
    plt = plots.pyplot()
    drawn = {}
    for how in ("ours", "matplotlib's"):
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot([low, high], [1, 2])
        plots.log_axis(ax, "x")
        if how != "ours":
            ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.xaxis.set_minor_locator(LogLocator(base=10, subs=(3.0, 4.0, 6.0, 7.0, 8.0, 9.0)))
        fig.savefig(io.BytesIO(), format="png")
        view = sorted(ax.get_xlim())
        made = len(ax.xaxis.get_major_ticks()) + len(ax.xaxis.get_minor_ticks())
        seen = [(round(t.get_loc(), 12), t.label1.get_text()) for t in ax.xaxis.get_major_ticks()
                if view[0] * (1 - 1e-9) <= t.get_loc() <= view[1] * (1 + 1e-9)]
        minor = sorted(round(t, 12) for t in ax.xaxis.get_minorticklocs()
                       if view[0] * (1 - 1e-9) <= t <= view[1] * (1 + 1e-9))
        drawn[how] = (sorted(seen), minor, made)
        plt.close(fig)
    assert drawn["ours"][:2] == drawn["matplotlib's"][:2]
    assert drawn["ours"][0], "no labelled tick in view"
    assert drawn["ours"][2] < drawn["matplotlib's"][2], (drawn["ours"][2], drawn["matplotlib's"][2])
