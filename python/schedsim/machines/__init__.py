"""Machine presets: `python/schedsim/machines/*.toml`, expanded into the core's MachineSpec.

>>> m = load_machine("skylake-8x")
>>> m.ncpus, m.packages, m.freq_range_khz
(8, 1, (800000, 3900000))
>>> spec = m.spec.model_dump()        # the JSON-ready MachineSpec of config.rs
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..spec import MachineSpec
from .preset import Preset, parse_preset
from .sources import ValueSource, value_sources

__all__ = ["Machine", "ValueSource", "list_machines", "load_machine", "preset_dir"]


def preset_dir() -> Path:
    """The directory holding the shipped presets."""
    return Path(str(resources.files(__name__)))


def list_machines() -> list[str]:
    """Names of the shipped presets, sorted."""
    return sorted(p.stem for p in preset_dir().glob("*.toml"))


@dataclass(frozen=True)
class Machine:
    """A validated preset and its expansion."""

    preset: Preset
    path: Path | None
    text: str

    @property
    def name(self) -> str:
        return self.preset.machine.name

    @cached_property
    def spec(self) -> MachineSpec:
        return self.preset.expand()

    @property
    def arch(self) -> str:
        return self.preset.machine.arch

    @property
    def vendor(self) -> str:
        return self.preset.machine.vendor

    @property
    def hwp(self) -> bool:
        return self.preset.machine.hwp

    @property
    def ncpus(self) -> int:
        return len(self.spec.cpus)

    @property
    def packages(self) -> int:
        return self.preset.topology.packages

    @property
    def nodes(self) -> int:
        return self.preset.topology.packages * self.preset.topology.nodes_per_package

    @property
    def ncores(self) -> int:
        return len({c.core for c in self.spec.cpus})

    @property
    def smt(self) -> int:
        return self.preset.topology.smt

    @property
    def freq_range_khz(self) -> tuple[int, int]:
        khz = [o.khz for fd in self.spec.freq_domains for o in fd.opps]
        return min(khz), max(khz)

    @property
    def max_khz(self) -> int:
        """The highest frequency any CPU can run (1-core turbo on x86, top OPP on Arm)."""
        return self.freq_range_khz[1]

    def sources(self) -> list[ValueSource]:
        """Every value line of the preset file with its source comment (key path, value, source)."""
        return value_sources(self.text)

    def header_comment(self) -> str:
        """The comment block at the top of the preset file (format notes and source keys)."""
        lines = []
        for line in self.text.splitlines():
            if not line.startswith("#"):
                break
            lines.append(line[1:].removeprefix(" "))
        return "\n".join(lines)


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load_machine(name: str, overrides: dict[str, Any] | None = None) -> Machine:
    """Load a preset by name (or a path to a preset TOML file), with optional overrides.

    `overrides` is merged into the raw preset before validation, e.g.
    `{"topology": {"freq_domain": "core"}}` for one cpufreq policy per core.
    Raises ConfigError for an unknown name (listing the presets) or an invalid preset.
    """
    path: Path | None
    candidate = Path(name)
    if name.endswith(".toml") and candidate.is_file():
        path = candidate
    else:
        path = preset_dir() / f"{name}.toml"
        if not path.is_file():
            raise ConfigError(f"unknown machine '{name}'; allowed: {', '.join(list_machines())}")
    text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"machine preset {path}: invalid TOML: {err}") from None
    if overrides is not None and not isinstance(overrides, Mapping):
        raise ConfigError(
            f"machine '{name}': overrides {overrides!r}: expected a mapping like "
            "{'topology': {'freq_domain': 'core'}}"
        )
    if overrides:
        data = _deep_merge(data, overrides)
    preset = parse_preset(data, str(path))
    if path.parent == preset_dir() and preset.machine.name != path.stem:
        raise ConfigError(
            f"machine preset {path}: machine.name '{preset.machine.name}' differs from the "
            f"file name '{path.stem}'"
        )
    machine = Machine(preset=preset, path=path, text=text)
    _ = machine.spec  # expand now so that errors surface at load time
    return machine
