"""The machine model mode simulates (``mode: model``); real mode runs on this one.

Kept in its own section so that a what-if ("64 cores") is one visible edit, and so
that real mode can refuse what it cannot honour instead of silently ignoring it.
"""

from __future__ import annotations

from pydantic import Field

from sim.config.types import FrozenModel, NonNegFloat, PathText, PosFloat, PosInt

__all__ = ["MachineConfig"]


class MachineConfig(FrozenModel):
    """Model mode only: cores and the calibration the simulated costs come from."""

    cores: PosInt | None = Field(
        None,
        le=4096,
        description="CPU cores of the simulated machine (model mode); default: the cores "
        "of the machine the calibration was measured on. Real mode runs on this machine "
        "and refuses any other value.",
    )
    background_load: NonNegFloat | None = Field(
        None,
        le=100_000,
        description="Runnable threads of other processes competing for the cores (model "
        "mode; the OS shares the cores among ours and these). Default: what `kvsim "
        "calibrate` measured on this machine; 0 for a machine of one's own. Real mode "
        "runs beside whatever load the machine has.",
    )
    cpu_scale: PosFloat = Field(
        1.0,
        ge=0.01,
        le=100,
        description="Model mode: every CPU cost the calibration measured (load threads' "
        "holds and GIL-free CPU, the harness's, the probe's and the engine's CPU) times "
        "this: 0.5 for a host whose threads run twice as fast. `kvsim validate-model` sets "
        "it per point from the real twin's holds for its speed-matched view. Real mode "
        "runs at this machine's speed and refuses any other value.",
    )
    calibration: PathText = Field(
        "results/calibration.json",
        description="Calibration file written by `kvsim calibrate` (model mode), relative "
        "to the working directory: the measured costs every simulated request is built from.",
    )
