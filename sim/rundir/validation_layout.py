"""The directory ``kvsim validate-model`` writes: four run directories and the files beside.

::

    BASE/                           default results/<name>-validate
        real/  model/  model-idle/  model-matched/      one run directory per mode
        real-again/                 with --aa: the real grid a second time (same seeds)
        background_load.json        the load measured before and after each real point
        calibration-conditions.json the calibration with the conditions measured around
                                    the real runs (what model/ and the mechanism's
                                    replay were given)
        machine_speed.json          the speed probe before and after each real point
                                    (its hold over the calibration's)
        speed_scales.json           each point's speed in its real run against its model
        validation.csv  validation.md   the table and the report

Each of them is an ordinary run directory (sim.rundir.layout); this module owns
the names around them, as layout owns those inside (sim.api.validate_model writes them).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "AGAIN_DIR",
    "CONDITIONS_FILE",
    "IDLE_DIR",
    "LOADS_FILE",
    "MATCHED_DIR",
    "MODEL_DIR",
    "REAL_DIR",
    "REPORT_FILE",
    "SCALES_FILE",
    "SPEEDS_FILE",
    "TABLE_FILE",
    "TOP_FILES",
    "ValidationLayout",
]

#: Sub-directories of a validation, one run directory per mode.
REAL_DIR, MODEL_DIR, IDLE_DIR, MATCHED_DIR = "real", "model", "model-idle", "model-matched"
#: The real grid's second run (validate-model --aa): the real side against itself.
AGAIN_DIR = "real-again"
#: Files a validation writes beside its runs.
CONDITIONS_FILE = "calibration-conditions.json"
LOADS_FILE = "background_load.json"
SCALES_FILE = "speed_scales.json"
SPEEDS_FILE = "machine_speed.json"
REPORT_FILE, TABLE_FILE = "validation.md", "validation.csv"
#: What a validation writes at the top of its directory (beside the four runs).
TOP_FILES = (LOADS_FILE, SPEEDS_FILE, CONDITIONS_FILE, SCALES_FILE, TABLE_FILE, REPORT_FILE)


@dataclass(frozen=True)
class ValidationLayout:
    """Every path of one validation directory, from its ``base``."""

    base: Path

    @classmethod
    def default(cls, name: str) -> ValidationLayout:
        """``results/<name>-validate`` under the working directory."""
        return cls(Path(f"results/{name}-validate").absolute())

    @property
    def real(self) -> Path:
        return self.base / REAL_DIR

    @property
    def again(self) -> Path:
        return self.base / AGAIN_DIR

    @property
    def model(self) -> Path:
        return self.base / MODEL_DIR

    @property
    def idle(self) -> Path:
        return self.base / IDLE_DIR

    @property
    def matched(self) -> Path:
        return self.base / MATCHED_DIR

    @property
    def conditions(self) -> Path:
        return self.base / CONDITIONS_FILE

    @property
    def loads(self) -> Path:
        return self.base / LOADS_FILE

    @property
    def speeds(self) -> Path:
        return self.base / SPEEDS_FILE

    @property
    def scales(self) -> Path:
        return self.base / SCALES_FILE

    @property
    def report(self) -> Path:
        return self.base / REPORT_FILE

    @property
    def table(self) -> Path:
        return self.base / TABLE_FILE

    def top_files(self) -> list[Path]:
        """The files beside the runs (:data:`TOP_FILES`)."""
        return [self.base / name for name in TOP_FILES]
