#!/usr/bin/env python3
"""Holds each file of core to the stages its stage may use.

core is built from stages (docs/ARCHITECTURE.md), each an object library that
links only the stages below it, so an include of a stage above fails to
compile. What the link lets through is an include of a stage that is only
linked indirectly: recording links open, which links inference, so a recording
file could include an inference header without recording saying that it uses
inference. This check closes that gap. Every file under core/<stage>/ may
include:

  - memscope/<stage>/x.h, its own stage's public headers;
  - memscope/<dep>/x.h for a stage <dep> that its stage names in DEPENDS
    (core/<stage>/CMakeLists.txt), and, in the stage's sources (src/) but not
    in its public headers, one it names in PRIVATE_DEPENDS: a public header
    that included a private dependency would break whoever includes it;
  - "x.h", a private header beside it (in the same folder);
  - system and third-party headers (<...>).

The stages and their DEPENDS are read from the file that the build writes
(build/core_stages.txt, one "stage: public deps | private deps" line per
stage, bottom up; the bar and what follows it may be left out).

Usage: check_stage_includes.py --stages build/core_stages.txt [--root DIR]
Exit status 0 when every include is allowed, 1 with one line per violation,
2 on bad usage or an unreadable stages file.
"""

import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
STAGED = re.compile(r'^memscope/([a-z_]+)/[A-Za-z0-9_]+\.h$')
SOURCE_SUFFIXES = ('.h', '.hpp', '.cpp', '.cc')


def read_stages(path):
    """Returns {stage: (public deps, private deps)} in file order, or raises ValueError."""
    stages = {}
    with open(path, encoding='utf-8') as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            name, sep, deps = line.partition(':')
            if not sep or not name.strip():
                raise ValueError(f'{path}:{number}: expected "stage: dep dep", got "{line}"')
            name = name.strip()
            public, _, private = deps.partition('|')
            public, private = public.split(), private.split()
            for dep in public + private:
                if dep not in stages:
                    raise ValueError(f'{path}:{number}: stage {name} depends on "{dep}", '
                                     'which is not a stage listed above it')
            stages[name] = (public, private)
    if not stages:
        raise ValueError(f'{path}: no stages listed')
    return stages


def check_file(path, stage, stages, core_dir):
    """Yields one message per include of path that its stage may not use."""
    public, private = stages[stage]
    in_public_header = os.path.relpath(path, os.path.join(core_dir, stage)).split(os.sep)[0] == 'include'
    allowed = {stage, *public} if in_public_header else {stage, *public, *private}
    folder = os.path.dirname(path)
    with open(path, encoding='utf-8', errors='replace') as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            bracket, header = m.groups()
            where = f'{path}:{number}'
            if bracket == '<' and not header.startswith('memscope/'):
                continue  # system or third-party
            if '..' in header.split('/') or '/src/' in f'/{header}':
                yield (f'{where}: includes "{header}": a stage\'s private headers are its own; '
                       'use the other stage\'s public memscope/<stage>/ header')
                continue
            if header.startswith('memscope/'):
                s = STAGED.match(header)
                if not s or s.group(1) not in stages:
                    yield (f'{where}: includes "{header}", which names no stage '
                           f'(core\'s headers are memscope/<stage>/x.h, stages: {" ".join(stages)})')
                    continue
                target = s.group(1)
                if not os.path.isfile(os.path.join(core_dir, target, 'include', header)):
                    yield f'{where}: includes "{header}", which stage {target} does not have'
                elif target not in allowed:
                    above = list(stages).index(target) > list(stages).index(stage)
                    if above:
                        why = 'a stage above it'
                    elif target in private:
                        why = 'a stage it names only in PRIVATE_DEPENDS, in a public header'
                    else:
                        why = 'a stage it does not name in DEPENDS'
                    yield (f'{where}: stage {stage} includes "{header}" of {why} '
                           f'(here {stage} may use: {" ".join(sorted(allowed - {stage})) or "no other stage"})')
                continue
            if bracket == '"' and '/' not in header:
                if not os.path.isfile(os.path.join(folder, header)):
                    yield (f'{where}: includes "{header}", which is not beside it: private headers '
                           'live in their stage\'s src/, public ones are memscope/<stage>/x.h')


def check_tree(root, stages):
    core_dir = os.path.join(root, 'core')
    problems = []
    for stage in stages:
        stage_dir = os.path.join(core_dir, stage)
        if not os.path.isdir(stage_dir):
            problems.append(f'{stage_dir}: stage {stage} has no folder')
            continue
        for dirpath, _, names in os.walk(stage_dir):
            for name in sorted(names):
                if name.endswith(SOURCE_SUFFIXES):
                    problems.extend(check_file(os.path.join(dirpath, name), stage, stages, core_dir))
    # Every folder of core is a stage: a new folder must be added to the build.
    for entry in sorted(os.listdir(core_dir)):
        if os.path.isdir(os.path.join(core_dir, entry)) and entry not in stages:
            problems.append(f'{os.path.join(core_dir, entry)}: a folder of core that is no stage '
                            '(add it with memscope_core_stage in core/CMakeLists.txt)')
    return problems


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--stages', required=True, help='build/core_stages.txt, written by CMake')
    parser.add_argument('--root', default=os.path.join(os.path.dirname(__file__), '..'),
                        help='the repository (default: this script\'s)')
    args = parser.parse_args(argv)
    try:
        stages = read_stages(args.stages)
    except (OSError, ValueError) as e:
        print(f'check_stage_includes: {e}', file=sys.stderr)
        return 2
    problems = check_tree(os.path.normpath(args.root), stages)
    for p in problems:
        print(p)
    if problems:
        print(f'check_stage_includes: {len(problems)} problem(s) with the stages '
              '(see docs/ARCHITECTURE.md)', file=sys.stderr)
        return 1
    print(f'check_stage_includes: every include of {len(stages)} stages is allowed')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
