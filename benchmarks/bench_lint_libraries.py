"""What each candidate library for Python control and data flow costs on a whole package, and
what it resolves there (docs/LINT.md, "Building on a library").

    python benchmarks/bench_lint_libraries.py PACKAGE_DIR [--only NAME] [--limit N]

For every .py file of the package: ``ast`` (parse) and ``symtable`` (scopes: which names are
local, global, free); ``libcst-parse`` (parse into a concrete tree) and ``libcst`` (that, and its ScopeProvider: the
assignments each name access reaches); ``astroid-build`` (build its tree) and ``astroid``
(that, and infer the callee of every call, as pylint's inference does); ``beniget`` (def-use chains over ``gast``). Prints
CPU seconds and counts, one line per library.
"""

from __future__ import annotations

import argparse
import ast
import os
import resource
import symtable
import sys
import warnings


def _cpu() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def _files(root: str, limit: int | None) -> list[tuple[str, str]]:
    out = []
    for folder, _, names in sorted(os.walk(root)):
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    out.append((path, f.read()))
    return out[:limit] if limit else out


def run_ast(files) -> str:
    trees = scopes = 0
    for path, text in files:
        try:
            ast.parse(text, path)
            table = symtable.symtable(text, path, "exec")
        except SyntaxError:
            continue
        trees += 1
        stack = [table]
        while stack:
            t = stack.pop()
            scopes += 1
            stack += t.get_children()
    return f"{trees} modules parsed, {scopes} scopes with their names classified"


def run_libcst(files) -> str:
    import libcst as cst
    from libcst.metadata import MetadataWrapper, ScopeProvider
    modules = accesses = resolved = 0
    for _path, text in files:
        try:
            wrapper = MetadataWrapper(cst.parse_module(text))
            scopes = wrapper.resolve(ScopeProvider)
        except Exception:                    # noqa: BLE001 - a file libcst cannot take
            continue
        modules += 1
        for scope in set(scopes.values()):
            if scope is None:
                continue
            for access in scope.accesses:
                accesses += 1
                resolved += bool(access.referents)
    return f"{modules} modules; {accesses} name accesses, {resolved} tied to an assignment"


def run_libcst_parse(files) -> str:
    import libcst as cst
    modules = 0
    for _path, text in files:
        try:
            cst.parse_module(text)
        except Exception:                    # noqa: BLE001 - a file libcst cannot take
            continue
        modules += 1
    return f"{modules} modules parsed into concrete trees"


def run_astroid_build(files) -> str:
    import astroid
    builder = astroid.builder.AstroidBuilder(astroid.MANAGER)
    modules = 0
    for path, text in files:
        try:
            builder.string_build(text, path=path)
        except Exception:                    # noqa: BLE001
            continue
        modules += 1
    return f"{modules} modules built"


def run_astroid(files) -> str:
    import astroid
    from astroid import nodes
    builder = astroid.builder.AstroidBuilder(astroid.MANAGER)
    modules = calls = inferred = 0
    for path, text in files:
        try:
            module = builder.string_build(text, path=path)
        except Exception:                    # noqa: BLE001
            continue
        modules += 1
        for call in module.nodes_of_class(nodes.Call):
            calls += 1
            try:
                found = next(call.func.infer(), None)
            except Exception:                # noqa: BLE001 - inference gives up by raising
                found = None
            inferred += found is not None and found is not astroid.Uninferable
    return f"{modules} modules; {calls} calls, {inferred} callees inferred"


def run_beniget(files) -> str:
    import beniget
    import gast
    modules = chains = 0
    for path, text in files:
        try:
            tree = gast.parse(text)
            du = beniget.DefUseChains(path)
            du.visit(tree)
        except Exception:                    # noqa: BLE001
            continue
        modules += 1
        chains += sum(len(c.users()) for c in du.chains.values())
    return f"{modules} modules; {chains} def-use links"


RUNS = {"ast+symtable": run_ast, "libcst-parse": run_libcst_parse, "libcst": run_libcst,
        "astroid-build": run_astroid_build, "astroid": run_astroid,
        "beniget": run_beniget}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package")
    parser.add_argument("--only", choices=sorted(RUNS), action="append")
    parser.add_argument("--limit", type=int, help="the first N files only")
    args = parser.parse_args()
    files = _files(args.package, args.limit)
    sys.setrecursionlimit(10_000)
    warnings.simplefilter("ignore")
    print(f"{len(files)} files, {sum(len(t) for _, t in files) / 2**20:.1f} MiB")
    for name in args.only or RUNS:
        c0 = _cpu()
        what = RUNS[name](files)
        print(f"{name:14s} {_cpu() - c0:8.1f} s CPU  {what}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
