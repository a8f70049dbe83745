#!/usr/bin/env python3
"""The environment contract between `memscope-cli record` and the Python hook:
record_env.h's kHookVariables (the MEMSCOPE_* variables record passes to the
hook) and the variables the hook's Python reads (config.py, sitecustomize.py,
any module under profiler/pyhook) are the same set, and kDefaultModuleDepth is
config.py's DEFAULT_MODULE_DEPTH. Run by ctest; the checker is also run on
small trees made here, so that it is seen to fail where one side adds or drops
a variable."""

import ast
import io
import os
import re
import shutil
import sys
import tempfile
import tokenize
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..'))
HEADER = os.path.join('profiler', 'cupti', 'include', 'memscope_cupti', 'record_env.h')
PYHOOK = os.path.join('profiler', 'pyhook')
CONFIG = os.path.join(PYHOOK, 'memscope_hook', 'config.py')

VARIABLE = re.compile(r'MEMSCOPE_[A-Z0-9_]+')


def header_contract(text):
    """({constant: value} of the header's strings, [kHookVariables' values],
    kDefaultModuleDepth or None)."""
    strings = dict(re.findall(
        r'inline\s+constexpr\s+const\s+char\s*\*\s*(k\w+)\s*=\s*"([^"]*)"\s*;', text))
    m = re.search(r'\bkHookVariables\s*\{([^}]*)\}', text)
    if m is None:
        raise ValueError('record_env.h has no kHookVariables{...}')
    names = [n.strip() for n in m.group(1).split(',') if n.strip()]
    unknown = [n for n in names if n not in strings]
    if unknown:
        raise ValueError('kHookVariables names constants record_env.h does not define: %s'
                         % ', '.join(unknown))
    depth = re.search(r'\bkDefaultModuleDepth\s*=\s*(\d+)\s*;', text)
    return strings, [strings[n] for n in names], int(depth.group(1)) if depth else None


def python_variables(root):
    """{variable: [file:line]} for every string literal in the hook's Python
    that is exactly a MEMSCOPE_* name (comments and prose do not count)."""
    found = {}
    for folder, _, files in os.walk(os.path.join(root, PYHOOK)):
        for name in sorted(files):
            if not name.endswith('.py'):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding='utf-8') as f:
                source = f.read()
            for tok in tokenize.generate_tokens(io.StringIO(source).readline):
                if tok.type != tokenize.STRING:
                    continue
                try:
                    value = ast.literal_eval(tok.string)
                except (ValueError, SyntaxError):
                    continue
                if isinstance(value, str) and VARIABLE.fullmatch(value):
                    where = '%s:%d' % (os.path.relpath(path, root), tok.start[0])
                    found.setdefault(value, []).append(where)
    return found


def config_default_depth(root):
    with open(os.path.join(root, CONFIG), encoding='utf-8') as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == 'DEFAULT_MODULE_DEPTH'):
            return ast.literal_eval(node.value)
    return None


def check(root):
    """The contract's breaches, one line each (none: kept)."""
    with open(os.path.join(root, HEADER), encoding='utf-8') as f:
        strings, hook, depth = header_contract(f.read())
    problems = []
    if len(set(hook)) != len(hook):
        problems.append('kHookVariables lists a variable twice')
    read = python_variables(root)
    defined = set(strings.values())
    for var in sorted(set(read) - set(hook)):
        where = ', '.join(read[var])
        if var in defined:
            problems.append('the hook reads %s (%s), which record_env.h does not list in '
                            'kHookVariables' % (var, where))
        else:
            problems.append('the hook reads %s (%s), which record_env.h does not define'
                            % (var, where))
    for var in sorted(set(hook) - set(read)):
        problems.append('kHookVariables lists %s, which the hook (%s) never reads'
                        % (var, PYHOOK))
    py_depth = config_default_depth(root)
    if depth != py_depth:
        problems.append('kDefaultModuleDepth is %s, config.py\'s DEFAULT_MODULE_DEPTH is %s'
                        % (depth, py_depth))
    return problems


class RecordEnvContract(unittest.TestCase):
    def test_the_tree_keeps_the_contract(self):
        problems = check(ROOT)
        self.assertEqual(problems, [], '\n'.join(problems))
        with open(os.path.join(ROOT, HEADER), encoding='utf-8') as f:
            _, hook, _ = header_contract(f.read())
        self.assertGreaterEqual(len(hook), 10)  # the parse found the list


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)


HEADER_TEXT = '''namespace memscope::cupti::env {
inline constexpr const char* kOutputDir = "MEMSCOPE_OUTPUT_DIR";  // default: cwd
inline constexpr const char* kStacks =
    "MEMSCOPE_STACKS";  // the injection library's
inline constexpr const char* kSteps = "MEMSCOPE_STEPS";
inline constexpr int kDefaultModuleDepth = 6;
inline constexpr std::array kHookVariables{
    kOutputDir, kSteps,
};
}
'''
CONFIG_TEXT = '''"""Reads MEMSCOPE_NOT_A_READ in prose only."""
DEFAULT_MODULE_DEPTH = 6
def from_env(env):
    # "MEMSCOPE_IN_A_COMMENT"
    return env.get("MEMSCOPE_OUTPUT_DIR"), env.get('MEMSCOPE_STEPS')
'''


class CheckerOnMadeTrees(unittest.TestCase):
    def tree(self, header=HEADER_TEXT, config=CONFIG_TEXT, extra=None):
        root = tempfile.mkdtemp(prefix='memscope-contract-')
        self.addCleanup(shutil.rmtree, root)
        write(root, HEADER, header)
        write(root, CONFIG, config)
        if extra:
            write(root, os.path.join(PYHOOK, 'sitecustomize.py'), extra)
        return root

    def test_a_kept_contract_passes(self):
        self.assertEqual(check(self.tree()), [])

    def test_a_variable_the_hook_reads_and_the_header_lacks_fails(self):
        problems = check(self.tree(extra='import os\nos.environ.get("MEMSCOPE_NEW")\n'))
        self.assertEqual(len(problems), 1, problems)
        self.assertIn('MEMSCOPE_NEW', problems[0])
        self.assertIn('does not define', problems[0])

    def test_a_header_variable_missing_from_the_list_fails(self):
        problems = check(self.tree(extra='import os\nos.environ.get("MEMSCOPE_STACKS")\n'))
        self.assertEqual(len(problems), 1, problems)
        self.assertIn('does not list in kHookVariables', problems[0])

    def test_a_listed_variable_the_hook_dropped_fails(self):
        config = CONFIG_TEXT.replace(", env.get('MEMSCOPE_STEPS')", '')
        problems = check(self.tree(config=config))
        self.assertEqual(len(problems), 1, problems)
        self.assertIn('MEMSCOPE_STEPS', problems[0])
        self.assertIn('never reads', problems[0])

    def test_a_different_default_depth_fails(self):
        problems = check(self.tree(config=CONFIG_TEXT.replace('= 6', '= 4')))
        self.assertEqual(len(problems), 1, problems)
        self.assertIn('DEFAULT_MODULE_DEPTH', problems[0])

    def test_a_list_naming_an_undefined_constant_is_refused(self):
        header = HEADER_TEXT.replace('kOutputDir, kSteps', 'kOutputDir, kStep')
        with self.assertRaises(ValueError):
            check(self.tree(header=header))


if __name__ == '__main__':
    if len(sys.argv) > 1 and sys.argv[1] == '--check':
        # The contract alone, as a message: scripts and humans.
        problems = check(ROOT)
        print('\n'.join(problems) or 'record_env.h and the hook agree')
        sys.exit(1 if problems else 0)
    unittest.main()
