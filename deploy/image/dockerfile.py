"""Reads our Dockerfile into stages (ARG, ENV, RUN, COPY, ENTRYPOINT) with its
variables expanded, so that the replay runs the image's own steps and the tests
check the stages against each other. Standard library only: the replay runs
before any virtual environment exists.

It understands the Dockerfile syntax that ours uses (line continuations,
comments, ``ARG`` with defaults, ``ENV k=v ...``, shell-form ``RUN``,
exec-form ``ENTRYPOINT``), not every Dockerfile.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


class DockerfileError(ValueError):
    """The Dockerfile has a form this reader does not follow."""


@dataclass
class Stage:
    name: str
    base: str
    args: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)
    copies: list[list[str]] = field(default_factory=list)  # each: [--from=..., src..., dest]
    workdir: str = "/"
    entrypoint: list[str] = field(default_factory=list)
    user: str | None = None
    expose: list[str] = field(default_factory=list)
    healthcheck: str | None = None


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, rest) pairs, continuations joined and comment lines dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue  # Docker drops comment lines, also inside a continued instruction
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    if pending.strip():
        raise DockerfileError("the Dockerfile ends inside a continued line")
    return out


def expand(value: str, names: dict[str, str]) -> str:
    return _VAR.sub(lambda m: names.get(m.group(1) or m.group(2), m.group(0)), value)


def parse(path: Path) -> dict[str, Stage]:
    """The stages by name (unnamed ones by their index)."""
    return parse_text(path.read_text())


def parse_text(text: str) -> dict[str, Stage]:
    global_args: dict[str, str] = {}
    stages: dict[str, Stage] = {}
    stage: Stage | None = None
    for word, rest in instructions(text):
        if word == "FROM":
            parts = rest.split()
            name = parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else str(len(stages))
            stage = stages[name] = Stage(name=name, base=expand(parts[0], global_args))
            continue
        if word == "ARG":
            key, eq, default = rest.partition("=")
            target = global_args if stage is None else stage.args
            if eq:
                target[key] = expand(shlex.split(default)[0] if default else "", _names(stage, global_args))
            elif stage is not None and key in global_args:
                target[key] = global_args[key]  # a stage's bare ARG takes the global default
            else:
                target[key] = ""
            continue
        if stage is None:
            raise DockerfileError(f"{word} before the first FROM")
        if word == "ENV":
            for token in shlex.split(rest):
                key, eq, value = token.partition("=")
                if not eq:
                    raise DockerfileError(f"ENV {rest!r}: use the ENV key=value form")
                stage.env[key] = expand(value, _names(stage, global_args))
        elif word == "RUN":
            stage.runs.append(rest)
        elif word == "COPY":
            stage.copies.append(shlex.split(rest))
        elif word == "WORKDIR":
            stage.workdir = expand(rest, _names(stage, global_args))
        elif word == "ENTRYPOINT":
            stage.entrypoint = json.loads(rest)
        elif word == "USER":
            stage.user = rest
        elif word == "EXPOSE":
            stage.expose += rest.split()
        elif word == "HEALTHCHECK":
            stage.healthcheck = rest
    return stages


def _names(stage: Stage | None, global_args: dict[str, str]) -> dict[str, str]:
    """What $NAME may refer to: before the first FROM the global ARGs, in a stage
    only its own ARGs (a global one redeclared bare) and ENVs, as in Docker."""
    return global_args if stage is None else {**stage.args, **stage.env}
