#!/usr/bin/env python3
"""The include-direction check (scripts/check_stage_includes.py) on small trees
made here: it passes a tree that keeps to its stages and names each wrong
include, and the real tree passes it (run by ctest with the build's stages)."""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, '..', '..', 'scripts', 'check_stage_includes.py')

# analysis's sources, not its public headers, may use base (after the bar).
STAGES = 'base:\nmodel: base\ntimeline: base model\nanalysis: model timeline | base\n'


def write(root, rel, text=''):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)


def make_tree(root):
    """Four stages, each with one public header and one source that keeps to the rules."""
    for stage in ('base', 'model', 'timeline', 'analysis'):
        write(root, f'core/{stage}/include/memscope/{stage}/{stage}_api.h', '#pragma once\n')
        write(root, f'core/{stage}/src/{stage}_private.h', '#pragma once\n#include <vector>\n')
        write(root, f'core/{stage}/src/{stage}.cpp',
              f'#include "memscope/{stage}/{stage}_api.h"\n#include "{stage}_private.h"\n')
    write(root, 'core/timeline/src/uses_below.cpp',
          '#include "memscope/model/model_api.h"\n#include "memscope/base/base_api.h"\n')
    write(root, 'stages.txt', STAGES)


def run_check(root, stages=None):
    proc = subprocess.run([sys.executable, CHECK, '--stages', stages or os.path.join(root, 'stages.txt'),
                           '--root', root], capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


class StageIncludes(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = self.dir.name
        make_tree(self.root)

    def tearDown(self):
        self.dir.cleanup()

    def assertFlags(self, rel, text, *expected, where=None):
        write(self.root, rel, text)
        rc, out = run_check(self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn(where or rel, out)
        for e in expected:
            self.assertIn(e, out)

    def test_a_tree_that_keeps_to_its_stages_passes(self):
        rc, out = run_check(self.root)
        self.assertEqual(rc, 0, out)
        self.assertIn('every include of 4 stages is allowed', out)

    def test_an_include_of_a_stage_above_fails(self):
        self.assertFlags('core/timeline/src/planted.cpp', '#include "memscope/analysis/analysis_api.h"\n',
                         'stage timeline includes "memscope/analysis/analysis_api.h" of a stage above it',
                         'here timeline may use: base model')

    def test_an_undeclared_stage_below_fails_although_the_link_lets_it_through(self):
        # analysis links timeline, which links model: the compiler would accept this.
        with open(os.path.join(self.root, 'stages.txt'), 'w') as f:
            f.write(STAGES.replace('analysis: model timeline | base', 'analysis: timeline'))
        self.assertFlags('core/analysis/src/planted.cpp', '#include "memscope/model/model_api.h"\n',
                         'a stage it does not name in DEPENDS')

    def test_a_private_dependency_serves_the_sources_but_not_the_public_headers(self):
        write(self.root, 'core/analysis/src/uses_private.cpp', '#include "memscope/base/base_api.h"\n')
        rc, out = run_check(self.root)
        self.assertEqual(rc, 0, out)
        self.assertFlags('core/analysis/include/memscope/analysis/planted.h', '#include "memscope/base/base_api.h"\n',
                         'a stage it names only in PRIVATE_DEPENDS, in a public header')

    def test_another_stages_private_header_fails(self):
        self.assertFlags('core/analysis/src/planted.cpp', '#include "../../model/src/model_private.h"\n',
                         "private headers are its own")

    def test_a_header_that_is_not_beside_it_fails(self):
        self.assertFlags('core/analysis/src/planted.cpp', '#include "model_private.h"\n', 'not beside it')

    def test_an_unstaged_or_missing_core_header_fails(self):
        self.assertFlags('core/model/src/planted.cpp', '#include "memscope/trace.h"\n', 'names no stage')
        os.remove(os.path.join(self.root, 'core/model/src/planted.cpp'))
        self.assertFlags('core/model/src/planted.cpp', '#include "memscope/base/nothing.h"\n',
                         'which stage base does not have')

    def test_a_folder_that_is_no_stage_fails(self):
        self.assertFlags('core/extra/src/x.cpp', '', 'a folder of core that is no stage', where='core/extra:')

    def test_system_and_third_party_headers_pass(self):
        write(self.root, 'core/base/src/third.cpp', '#include <zstd.h>\n#include <rapidjson/document.h>\n')
        rc, out = run_check(self.root)
        self.assertEqual(rc, 0, out)

    def test_a_stages_file_that_names_a_stage_above_is_refused(self):
        with open(os.path.join(self.root, 'stages.txt'), 'w') as f:
            f.write('base: | model\nmodel:\n')
        rc, out = run_check(self.root)
        self.assertEqual(rc, 2, out)
        self.assertIn('not a stage listed above it', out)

    def test_a_missing_stages_file_is_an_error_not_a_pass(self):
        rc, out = run_check(self.root, stages=os.path.join(self.root, 'absent.txt'))
        self.assertEqual(rc, 2, out)
        self.assertIn('absent.txt', out)


if __name__ == '__main__':
    unittest.main()
