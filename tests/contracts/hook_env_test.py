#!/usr/bin/env python3
"""The hook's validation of its environment (profiler/pyhook's config.py)
against the one table of cases that hook_env.h (what `record` and the merge
check) is tested against too: tests/contracts/hook_env_cases.json. Each case
is accepted or refused, and parsed to the same canonical text, on both sides;
and Config.from_env turns a refused value into a warning, never into a value
the merge would then refuse."""

import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'profiler', 'pyhook'))

from memscope_hook import config  # noqa: E402

with open(os.path.join(HERE, 'hook_env_cases.json'), encoding='utf-8') as f:
    CASES = json.load(f)['cases']


class HookEnvTable(unittest.TestCase):
    def test_every_case_as_the_table_says(self):
        self.assertGreater(len(CASES), 40)
        for case in CASES:
            with self.subTest(name=case['name'], value=case['value']):
                got = config.check_variable(case['name'], case['value'])
                if case['accept']:
                    self.assertEqual(got, case['parsed'])
                else:
                    self.assertIsNone(got)

    def test_from_env_takes_accepted_values_and_warns_on_refused_ones(self):
        base = {'MEMSCOPE_OUTPUT_DIR': '/tmp/x'}
        for case in CASES:
            with self.subTest(name=case['name'], value=case['value']):
                if case['value'] == '':
                    continue  # unset: the default, no warning
                cfg = config.Config.from_env(dict(base, **{case['name']: case['value']}))
                warned = any(case['name'] in w for w in cfg.warnings)
                self.assertEqual(warned, not case['accept'], cfg.warnings)
                if case['name'] == 'MEMSCOPE_STEPS':
                    want = (tuple(int(n) for n in case['parsed'].split(':'))
                            if case['accept'] else None)
                    self.assertEqual(cfg.steps, want)
                    # What hook.json will say: numbers the merge reads as int32.
                    doc = cfg.capture_document()
                    if doc is not None:
                        self.assertTrue(all(0 <= n <= config.INT32_MAX for n in doc['steps']))


if __name__ == '__main__':
    unittest.main()
