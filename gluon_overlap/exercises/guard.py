"""Keeping the library's answers out of a learner's answer, whatever the route.

An exercise is passed by the learner's code, not by the library's.  Three checks, each closing the routes the
others leave open:

1. :func:`vet_source` reads an answer *file* before any of it runs: it may import Gluon
   (``triton.experimental.gluon...``), ``math``, and from ``gluon_overlap`` only the helpers the exercise
   names; it may not use the machinery that reaches other code by name or by text (``exec``, ``eval``,
   ``compile``, ``__import__``, ``importlib``, ``sys``, ``getattr``, ``globals``, ``vars``, ``open``,
   ``inspect``, ``linecache``, any ``__dunder__`` attribute...).
2. :func:`foreign_kernel_code` checks the code objects a kernel run actually rebound for the CPU
   (``ExecutionResult.codes``): each must be a function of the checked file, *equal* to what compiling
   that file's text gives (an ``exec`` of other text under the file's name is not), or one of the library
   helpers the exercise allows.
3. :func:`traced_call` runs a function answer (a notebook cell's ``def``) under ``sys.settrace`` and
   returns every code object it ran: one from the library (other than the accessors the exercise allows)
   or one made at run time from text that no file or notebook cell holds (``exec`` of library source)
   refuses the answer.  It also names the line the answer returned from, for the messages.

A copied function object (``types.FunctionType(library_fn.__code__, ...)``) carries the library's code object,
so 2 and 3 see it wherever it came from.
"""

from __future__ import annotations

import ast
import functools
import linecache
import os
import sys
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gluon_overlap

PACKAGE_DIR = str(Path(gluon_overlap.__file__).resolve().parent)

#: modules (and their submodules) any answer file may import
ALLOWED_MODULE_PREFIXES = ("triton.experimental.gluon",)
ALLOWED_MODULES = frozenset({"__future__", "math"})

#: names an answer may not use as a variable: builtins that reach code by name or by text, and the modules that do
FORBIDDEN_NAMES = frozenset(
    {
        "exec",
        "eval",
        "compile",
        "open",
        "getattr",
        "setattr",
        "delattr",
        "globals",
        "locals",
        "vars",
        "breakpoint",
        "input",
        "memoryview",
        "importlib",
        "sys",
        "builtins",
        "inspect",
        "linecache",
        "os",
        "gc",
        "ctypes",
        "types",
        "runpy",
        "pkgutil",
        "subprocess",
        "marshal",
        "pickle",
        "dill",
        "cloudpickle",
        "gluon_overlap",
    }
)
#: attributes an answer may not read: the same, and the ways into a function's module, text or frames
FORBIDDEN_ATTRS = FORBIDDEN_NAMES | frozenset(
    {
        "modules",
        "import_module",
        "reload",
        "getsource",
        "getsourcelines",
        "getlines",
        "get_objects",
        "get_referents",
        "get_referrers",
        "FunctionType",
        "CodeType",
        "MethodType",
        "f_globals",
        "f_locals",
        "f_back",
        "f_code",
        "gi_frame",
        "cr_frame",
        "tb_frame",
        "co_code",
        "pathlib",
        "io",
        "codecs",
        "shutil",
        "tempfile",
        "site",
        "sysconfig",
        "zipimport",
        "exec_module",
        "load_module",
        "spec_from_file_location",
        "find_spec",
        "loader",
        "currentframe",
        "_getframe",
        "fn",
        "src",
        "cache_key",
        "answers",
        "solutions",
    }
)


class Refused(Exception):
    """The answer reaches for code that is not its own; the message names its line."""


def _line_text(text: str, lineno: int) -> str:
    lines = text.splitlines()
    return lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""


def _at(name: str, text: str, lineno: int) -> str:
    return f"{name} line {lineno} `{_line_text(text, lineno)}`"


def vet_source(text: str, name: str, allowed: frozenset[str], forbidden_extra: frozenset[str] = frozenset()) -> None:
    """Refuse (:class:`Refused`, naming the line) an answer file that imports what it may not, or uses the
    machinery that runs other code; ``allowed`` are ``"gluon_overlap.module.name"`` helpers it may import,
    ``forbidden_extra`` names of the checked harness it may not use (they hold the answer)."""
    tree = ast.parse(text)
    may = "only " + ", ".join(sorted(n.rsplit(".", 1)[1] for n in allowed)) if allowed else "nothing"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not _module_allowed(alias.name):
                    raise Refused(
                        f"{_at(name, text, node.lineno)} imports {alias.name}: an answer may import Gluon "
                        f"(triton.experimental.gluon...) and math, and from gluon_overlap {may}"
                    )
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                raise Refused(f"{_at(name, text, node.lineno)} is a relative import: import Gluon by its full name")
            if module.split(".")[0] == "gluon_overlap":
                for alias in node.names:
                    full = f"{module}.{alias.name}"
                    if full not in allowed:
                        raise Refused(
                            f"{_at(name, text, node.lineno)} imports the library's {alias.name}: write it "
                            f"yourself (this exercise may import {may} from gluon_overlap)"
                        )
            elif not _module_allowed(module):
                raise Refused(
                    f"{_at(name, text, node.lineno)} imports from {module}: an answer may import Gluon "
                    f"(triton.experimental.gluon...) and math, and from gluon_overlap {may}"
                )
        elif isinstance(node, ast.Name) and (
            node.id in FORBIDDEN_NAMES or _dunder(node.id) or node.id in forbidden_extra
        ):
            raise Refused(f"{_at(name, text, node.lineno)} uses `{node.id}`: {_why(node.id, forbidden_extra)}")
        elif isinstance(node, ast.Attribute) and (
            node.attr in FORBIDDEN_ATTRS or _dunder(node.attr) or node.attr in forbidden_extra
        ):
            raise Refused(f"{_at(name, text, node.lineno)} uses `.{node.attr}`: {_why(node.attr, forbidden_extra)}")
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.arg, ast.alias)):
            ident = getattr(node, "name", None) or getattr(node, "arg", None) or getattr(node, "asname", None)
            if ident and _dunder(ident):
                raise Refused(
                    f"{_at(name, text, node.lineno)} defines `{ident}`: an answer needs no special (dunder) names"
                )
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            raise Refused(f"{_at(name, text, node.lineno)}: an answer needs no global or nonlocal statement")


def _module_allowed(module: str) -> bool:
    return module in ALLOWED_MODULES or any(module == p or module.startswith(p + ".") for p in ALLOWED_MODULE_PREFIXES)


def _dunder(ident: str) -> bool:
    return len(ident) > 4 and ident.startswith("__") and ident.endswith("__")


def _why(ident: str, extra: frozenset[str]) -> str:
    if ident in ("make_plan", "TmemPlan"):
        return "the package's TMEM plan is not for this exercise: derive the layout yourself"
    if ident in extra:
        return "that name of the given kernel holds what this exercise asks for: write it yourself"
    if ident in {"answers", "solutions", "gluon_overlap"}:
        return "the library's answers are not for this exercise: write it yourself"
    return (
        "an answer may not reach other code by name or by text (exec, eval, compile, imports at run time, "
        "getattr, globals, special attributes, files): write the code in your file"
    )


# =====================================================================================
# code objects
# =====================================================================================
def code_objects(code: types.CodeType) -> list[types.CodeType]:
    """``code`` and every code object nested in it (functions, classes, comprehensions)."""
    out = [code]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out += code_objects(const)
    return out


def compiled_codes(text: str, filename: str) -> frozenset[types.CodeType]:
    """Every code object of ``text`` compiled as the file ``filename`` (what its import executes)."""
    return frozenset(code_objects(compile(text, filename, "exec", dont_inherit=True)))


@functools.lru_cache(maxsize=4096)
def _real_path(filename: str) -> str:
    """``os.path.realpath``, kept per file name (the checkers ask about the same few files thousands of times)."""
    return os.path.realpath(filename)


@functools.lru_cache(maxsize=4096)
def library_file(filename: str) -> bool:
    """A file of the gluon_overlap package (its answers, its kernels, its helpers).  Kept per file name: a checker
    asks about the same few files thousands of times (one answer called once per case)."""
    try:
        return os.path.commonpath([os.path.realpath(filename), PACKAGE_DIR]) == PACKAGE_DIR
    except ValueError:
        return False


def describe(code: types.CodeType) -> str:
    """``"gluon_overlap/kernel.py: mma_partition"`` (a path below the package's parent, or as it is)."""
    path = code.co_filename
    if library_file(path):
        path = os.path.relpath(os.path.realpath(path), os.path.dirname(PACKAGE_DIR))
    return f"{path}: {code.co_qualname if hasattr(code, 'co_qualname') else code.co_name}"


def allowed_library_codes(objects: Iterable[Any]) -> frozenset[types.CodeType]:
    """The code objects of library helpers an exercise allows (jit functions, constexpr functions, plain
    functions, aggregates' methods)."""
    out: set[types.CodeType] = set()
    for obj in objects:
        for fn in _functions_of(obj):
            out.update(code_objects(fn.__code__))
    return frozenset(out)


def _functions_of(obj: Any) -> list[types.FunctionType]:
    inner = getattr(obj, "fn", obj)  # a JITFunction / ConstexprFunction wraps its Python function
    if isinstance(inner, types.FunctionType):
        return [inner]
    if isinstance(obj, type):  # a class (an aggregate): the methods its body defines
        found = []
        for member in vars(obj).values():
            if isinstance(member, (staticmethod, classmethod)):
                member = member.__func__
            for fn in _functions_of(member) if not isinstance(member, type) else []:
                if fn.__qualname__.startswith(obj.__qualname__ + "."):
                    found.append(fn)
        return found
    return []


def referenced_codes(namespace: dict) -> frozenset[types.CodeType]:
    """The code objects of the jit functions, constexpr functions and aggregates a module's namespace refers to
    directly: what its kernel can call by name."""
    out: set[types.CodeType] = set()
    for value in list(namespace.values()):
        is_kernel_code = hasattr(value, "fn") or getattr(value, "__triton_aggregate__", False)
        if is_kernel_code:
            for fn in _functions_of(value):
                out.update(code_objects(fn.__code__))
    return frozenset(out)


def foreign_kernel_code(
    codes: Iterable[types.CodeType],
    own: dict[str, frozenset[types.CodeType]],
    allowed: frozenset[types.CodeType],
    referenced: frozenset[types.CodeType] = frozenset(),
) -> types.CodeType | None:
    """The first code object of a kernel run that is not accounted for, or None.  ``codes``: what the run rebound
    (the functions its kernel's module refers to, and theirs, transitively); ``own``: per file, the code objects
    its verified text compiles to; ``allowed``: the library helpers the exercise lets the module refer to;
    ``referenced``: what the checked module refers to directly.  A code object of a checked file must be one its
    text compiles to; a library function the module refers to directly must be allowed (what the library's
    helpers use in turn is theirs); a code object of any other origin (an ``exec``) is foreign."""
    for code in sorted(codes, key=lambda c: (c.co_filename, c.co_firstlineno)):
        mine = own.get(code.co_filename)
        if mine is not None:
            if code not in mine:
                return code
        elif library_file(code.co_filename):
            if code in referenced and code not in allowed:
                return code
        else:
            return code
    return None


def foreign_code_message(code: types.CodeType, own_files: Iterable[str], label: str) -> str:
    """Why a foreign code object refuses the answer, in one line."""
    if code.co_filename in set(own_files):
        return (
            f"{label}: the function {code.co_name} (line {code.co_firstlineno}) that ran is not the one your file "
            "defines there (code made at run time from other text): write it in your file"
        )
    if library_file(code.co_filename):
        return (
            f"{label}: the kernel ran the library's {describe(code)}, which your file brought in: write that part "
            "yourself"
        )
    return (
        f"{label}: the kernel ran {code.co_name} from {code.co_filename}, not from your file: write that part yourself"
    )


# =====================================================================================
# running a function answer
# =====================================================================================
@dataclass
class Traced:
    """What one traced call of a function answer did."""

    value: Any = None
    error: BaseException | None = None
    codes: set[types.CodeType] = field(default_factory=set)
    return_line: tuple[str, int, str] | None = None  # (file, line, text) of the answer's last line run


def _source_known(code: types.CodeType) -> bool:
    """Whether the text that ``code`` was compiled from is in a file (or a notebook cell linecache holds), or
    ``code`` is one the standard library makes at run time (``dataclasses`` writes ``__init__`` that way)."""
    name = code.co_filename
    if name.startswith("<frozen ") or os.path.isfile(name):
        return True
    if getattr(code, "co_qualname", "").startswith("__create_fn__.<locals>.") and not _is_library_answer(code):
        return True
    return bool(linecache.getlines(name))


def _shape(code: types.CodeType) -> tuple:
    """What a code object does, whatever its name, file and line: its bytecode and the names it uses."""
    return (code.co_code, code.co_names)


@functools.cache
def _library_answer_shapes() -> frozenset[tuple]:
    import gluon_overlap.exercises.solutions as solutions

    shapes: set[tuple] = set()
    for value in vars(solutions).values():
        if isinstance(value, types.FunctionType):
            shapes.update(_shape(c) for c in code_objects(value.__code__))
    return frozenset(shapes)


def _is_library_answer(code: types.CodeType) -> bool:
    return _shape(code) in _library_answer_shapes()


def traced_call(fn: Callable[..., Any], *args: Any) -> Traced:
    """Call ``fn(*args)`` recording every Python code object that runs, and the last line of ``fn``'s own
    frame (its return).  Exceptions are kept, not raised."""
    out = Traced()
    top = getattr(fn, "__code__", None)

    def local(frame: types.FrameType, event: str, arg: Any) -> Any:
        if event in ("line", "return") and frame.f_code is top:
            out.return_line = (
                frame.f_code.co_filename,
                frame.f_lineno,
                linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip(),
            )
        return local

    def tracer(frame: types.FrameType, event: str, arg: Any) -> Any:
        if event == "call":
            out.codes.add(frame.f_code)
            return local if frame.f_code is top else None
        return None

    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        out.value = fn(*args)
    except Exception as exc:  # the learner's code may raise anything: the checker reports it
        out.error = exc
    finally:
        sys.settrace(old)
    return out


#: names a function answer's own code may not use: they read the checker's frames or reach code by name at run time
FORBIDDEN_IN_FUNCTIONS = frozenset(
    {
        "_getframe",
        "currentframe",
        "_current_frames",
        "f_locals",
        "f_globals",
        "f_back",
        "tb_frame",
        "gi_frame",
        "settrace",
        "setprofile",
        "gettrace",
        "getprofile",
        "get_objects",
        "get_referrers",
        "get_referents",
        "modules",
        "import_module",
        "__import__",
        "exec",
        "eval",
        "compile",
        "getattr",
        "globals",
        "locals",
        "vars",
        "stack",
        "attrgetter",
        "methodcaller",
    }
)
#: special names an answer's own code may use (a class body's, a comparison's)
_HARMLESS_DUNDERS = frozenset({"__name__", "__init__", "__class__", "__module__", "__qualname__", "__doc__"})


@functools.cache
def _system_roots() -> tuple[str, ...]:
    """The real folders of Python's standard library and installed packages (fixed for the process's life;
    ``sysconfig.get_paths`` rebuilds them on every call, 3 ms each)."""
    import sysconfig

    paths = sysconfig.get_paths()
    roots = (paths.get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib"))
    return tuple(os.path.realpath(root) + os.sep for root in roots if root)


@functools.lru_cache(maxsize=4096)
def _system_file(filename: str) -> bool:
    """A file of Python's standard library or of an installed package (not the learner's, not ours)."""
    real = os.path.realpath(filename)
    return any(real.startswith(root) for root in _system_roots()) or filename.startswith("<frozen ")


def foreign_function_code(
    traced: Traced, allowed_files: frozenset[str] = frozenset(), allowed: frozenset[types.CodeType] = frozenset()
) -> str | None:
    """Why a traced answer is not the learner's own work (it ran library code outside the allowed files /
    helpers, or code compiled at run time from text no file holds), or None."""
    for code in sorted(traced.codes, key=lambda c: (c.co_filename, c.co_firstlineno)):
        if code in allowed:
            continue
        if library_file(code.co_filename):
            if _real_path(code.co_filename) in allowed_files:
                continue
            return (
                f"your function ran the library's {describe(code)}: work it out yourself (only your own code and "
                "the accessors of the arguments may run)"
            )
        if not _source_known(code) or (not os.path.isfile(code.co_filename) and _is_library_answer(code)):
            return (
                f"your function ran {code.co_name}, compiled at run time from text that is in no file or cell "
                f"({code.co_filename}): write the function itself"
            )
        learners = os.path.isfile(code.co_filename) or bool(linecache.getlines(code.co_filename))
        if learners and not _system_file(code.co_filename):
            used = sorted(
                (set(code.co_names) & FORBIDDEN_IN_FUNCTIONS)
                | {n for n in code.co_names if _dunder(n) and n not in _HARMLESS_DUNDERS}
            )
            if used:
                return (
                    f"your function ({code.co_name}, line {code.co_firstlineno}) uses {', '.join(used)}: an "
                    "answer computes its result from its arguments, not from other code's frames or names"
                )
    return None


def library_files(*modules: types.ModuleType) -> frozenset[str]:
    """The real paths of some library modules (the accessors an exercise allows)."""
    return frozenset(os.path.realpath(m.__file__) for m in modules if m.__file__ is not None)


def where_returned(traced: Traced) -> str:
    """``" (line 3 `return ...`)"`` for a message, or ``""``."""
    if traced.return_line is None:
        return ""
    _, lineno, text = traced.return_line
    return f" (line {lineno} `{text}`)" if text else f" (line {lineno})"
