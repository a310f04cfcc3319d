"""Builds gpuemu's drop-in CUDA libraries (libcudart.so.13, libcuda.so.1, ...) with cffi's embedding mode.

Each Library is C prototypes (a .h file, one function a line) implemented in Python (a module's IMPLEMENTATIONS),
plus optional C code, plus the list of every name the real library exports: the builder wraps each prototype in an
exported C function that starts Python on the first call and calls the Python implementation, forwards the
per-thread-stream variants (_ptsz, _ptds), and makes every other exported name a stub that returns
NOT_SUPPORTED (801) and prints one line naming it. One place for all such libraries, so a new one (a GPUOcelot
libgpuocelot.so with ptx_run) is one more Library.
"""
from __future__ import annotations

import ast
import os
import re
import shutil
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
PROTOTYPE = re.compile(r"^(?P<ret>.*?[\s*])(?P<name>\w+)\((?P<params>.*)\);$")
#: what a wrapper returns when gpuemu could not start: cudaErrorInitializationError / CUDA_ERROR_NOT_INITIALIZED
NOT_INITIALIZED = 3
NOT_SUPPORTED = 801
FORWARDED_SUFFIXES = ("_ptsz", "_ptds")


@dataclass
class Prototype:
    returns: str
    name: str
    params: str

    @property
    def argument_names(self) -> List[str]:
        if self.params.strip() in ("", "void"):
            return []
        return [re.findall(r"\w+", param)[-1] for param in _split_params(self.params)]

    def declaration(self, name: str) -> str:
        return f"{self.returns}{'' if self.returns.endswith('*') else ' '}{name}({self.params})"

    def failure(self) -> Optional[str]:
        if "char" in self.returns and "*" in self.returns:
            return '"gpuemu could not start"'
        if "*" in self.returns:
            return "NULL"
        if self.returns.strip() == "void":
            return None
        if self.returns.strip() in ("char", "unsigned", "unsigned int"):
            return "0"
        return str(NOT_INITIALIZED)


@dataclass
class Library:
    """One drop-in shared library."""
    filename: str
    module_name: str
    prototypes: str
    implementation: str
    exports: Sequence[str] = ()
    links: Sequence[str] = ()
    c_source: str = ""
    c_defines: Sequence[str] = ()
    c_cdef: str = ""
    extra_link_args: Sequence[str] = ()
    #: the symbol version programs linked against the real library ask for (default: the file name, as NVIDIA's)
    version_node: str = ""
    #: give the C code gpuemu_lookup(name): every exported function by name (for cuGetProcAddress)
    proc_table: bool = False
    #: prototype name → C statements its wrapper runs instead of failing when gpuemu is not running (the function
    #: must still answer: cuGetErrorName while the host's Python finalises)
    fallbacks: Tuple[Tuple[str, str], ...] = ()

    def read_prototypes(self) -> List[Prototype]:
        prototypes = []
        with open(os.path.join(HERE, self.prototypes), encoding="utf-8") as handle:
            text = re.sub(r"/\*.*?\*/", "", handle.read(), flags=re.DOTALL)
            for line in text.splitlines():
                line = line.strip()
                if not line:
                    continue
                match = PROTOTYPE.match(line)
                if match is None:
                    raise ValueError(f"{self.prototypes}: cannot read the prototype `{line}`")
                prototypes.append(Prototype(match["ret"].strip(), match["name"], match["params"]))
        return prototypes

    def exported_names(self) -> List[str]:
        names = set()
        for path in self.exports:
            with open(os.path.join(HERE, "exports", path), encoding="utf-8") as handle:
                names.update(line.strip() for line in handle if line.strip())
        return sorted(names)


def _split_params(params: str) -> List[str]:
    return [part.strip() for part in params.split(",") if part.strip()]


def _types() -> str:
    with open(os.path.join(HERE, "cuda_types.h"), encoding="utf-8") as handle:
        return re.sub(r"/\*.*?\*/", "", handle.read(), flags=re.DOTALL)


BOOT = r"""
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
static pthread_once_t gpuemu_once = PTHREAD_ONCE_INIT;
static int gpuemu_state = 0;
static int gpuemu_owns_python = 0;

static void gpuemu_start(void)
{
    if (!Py_IsInitialized()) {
        PyConfig config;
        PyStatus status;
        Dl_info python_library;
        /* a program that dlopens this library (NVIDIA's static runtime loads libcuda.so.1 so) gets Python's
           symbols local to it, where Python's own extension modules (cffi's backend) cannot find them */
        if (dladdr((void *)Py_IsInitialized, &python_library) && python_library.dli_fname != NULL)
            dlopen(python_library.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
        PyConfig_InitPythonConfig(&config);
        config.install_signal_handlers = 0;
        config.parse_argv = 0;
        config.use_environment = 0;
        config.user_site_directory = 0;
        status = PyConfig_SetBytesString(&config, &config.executable, GPUEMU_PYTHON);
        if (!PyStatus_Exception(status))
            status = PyConfig_SetBytesString(&config, &config.program_name, GPUEMU_PYTHON);
        if (!PyStatus_Exception(status))
            status = Py_InitializeFromConfig(&config);
        PyConfig_Clear(&config);
        if (PyStatus_Exception(status)) {
            fprintf(stderr, "gpuemu: %s cannot start Python %s (%s)\n", GPUEMU_LIBRARY, GPUEMU_PYTHON,
                    status.err_msg ? status.err_msg : "unknown error");
            gpuemu_state = -1;
            return;
        }
        gpuemu_owns_python = 1;
        PyEval_SaveThread();
    }
    {
        /* Before Python 3.12, cffi's start-up spin lock is PyCapsule_Type.tp_version_tag and expects it to read 0,
           but the interpreter's type cache gives the type a tag once any capsule's attribute is looked up (torch
           does): cffi then aborts. Invalidating the type's cache, under the GIL, sets the tag back to 0. */
        PyGILState_STATE gil = PyGILState_Ensure();
#if PY_VERSION_HEX < 0x030C0000
        PyType_Modified(&PyCapsule_Type);
#endif
        gpuemu_state = py_gpuemu_start(gpuemu_owns_python) == 1 ? 1 : -1;
        PyGILState_Release(gil);
    }
    if (gpuemu_state != 1)
        fprintf(stderr, "gpuemu: %s could not load gpuemu from %s (the lines above say why); every call fails\n",
                GPUEMU_LIBRARY, GPUEMU_PYTHON);
}

static int gpuemu_ready(void)
{
    pthread_once(&gpuemu_once, gpuemu_start);
    /* after the host process's Python has finalised (C++ thread-local destructors at exit), every call fails */
    return gpuemu_state == 1 && Py_IsInitialized();
}

/* the host process's Python has finalised (or is finalising) after gpuemu started in it: module teardown and C++
   destructors at exit still free what they hold */
static int gpuemu_finalised(void)
{
    return gpuemu_state == 1 && !Py_IsInitialized();
}

static int gpuemu_missing(const char *name)
{
    if (gpuemu_ready())
        return py_gpuemu_missing(name);
    return NOT_SUPPORTED_CODE;
}

static void gpuemu_write(int to_stderr, const char *text, size_t size)
{
    fwrite(text, 1, size, to_stderr ? stderr : stdout);
}

static void gpuemu_flush(void)
{
    fflush(stdout);
    fflush(stderr);
}
"""

HELPERS_CDEF = """
extern "Python" int py_gpuemu_start(int owns_python);
extern "Python" int py_gpuemu_missing(const char *name);
void gpuemu_write(int to_stderr, const char *text, size_t size);
void gpuemu_flush(void);
"""


def generate(library: Library) -> Tuple[str, str, List[str]]:
    """(cdef, C source, stubbed names) of a library."""
    prototypes = library.read_prototypes()
    implemented = {p.name: p for p in prototypes}
    defined_in_c = set(library.c_defines)
    cdef = [_types(), HELPERS_CDEF, library.c_cdef]
    forward = ["static int py_gpuemu_start(int owns_python);", "static int py_gpuemu_missing(const char *name);"]
    forward += [f"static {p.declaration('py_' + p.name)};" for p in prototypes]
    source = [_types(), *forward, BOOT.replace("NOT_SUPPORTED_CODE", str(NOT_SUPPORTED)), library.c_source]
    fallbacks = dict(library.fallbacks)
    for prototype in prototypes:
        cdef.append(f'extern "Python" {prototype.declaration("py_" + prototype.name)};')
        source.append(_wrapper(prototype, prototype.name, fallbacks.get(prototype.name)))
    stubs = []
    for name in library.exported_names():
        if name in implemented or name in defined_in_c:
            continue
        base = next((name[:-len(s)] for s in FORWARDED_SUFFIXES if name.endswith(s)), None)
        if base in implemented:
            source.append(_wrapper(implemented[base], name, fallbacks.get(base)))
            continue
        stubs.append(name)
        source.append(f'int {name}(void) {{ return gpuemu_missing("{name}"); }}')
    if library.proc_table:
        exported = sorted(set(library.exported_names()) | set(implemented) | defined_in_c)
        rows = ",\n".join(f'    {{"{name}", (void *){name}}}' for name in exported)
        source.append("static const struct { const char *name; void *function; } gpuemu_exports[] = {\n" + rows +
                      "\n};\nstatic void *gpuemu_lookup(const char *name)\n{\n"
                      "    size_t low = 0, high = sizeof gpuemu_exports / sizeof gpuemu_exports[0];\n"
                      "    while (low < high) {\n"
                      "        size_t middle = (low + high) / 2;\n"
                      "        int order = strcmp(name, gpuemu_exports[middle].name);\n"
                      "        if (order == 0) return gpuemu_exports[middle].function;\n"
                      "        if (order < 0) high = middle; else low = middle + 1;\n"
                      "    }\n    return NULL;\n}")
    return "\n".join(cdef), "\n".join(source), stubs


#: what a function that releases something returns once the host's Python has finalised: success, as CUDA's does
#: at exit (the emulated device goes with the process); any other call gets DEINITIALIZED / cudaErrorCudartUnloading
RELEASES = re.compile(r"Free|Unload|Destroy|Release|Unregister|Reset")
DEINITIALIZED = 4


def _wrapper(prototype: Prototype, exported_name: str, fallback: Optional[str] = None) -> str:
    call = f"py_{prototype.name}({', '.join(prototype.argument_names)})"
    failure = prototype.failure()
    if failure is None:
        body = f"if (gpuemu_ready()) {call};"
    elif fallback is not None:
        body = f"if (!gpuemu_ready()) {{ {fallback} }} return {call};"
    elif failure == str(NOT_INITIALIZED):
        at_exit = 0 if RELEASES.search(prototype.name) else DEINITIALIZED
        body = (f"if (!gpuemu_ready()) return gpuemu_finalised() ? {at_exit} : {failure}; return {call};")
    else:
        body = f"if (!gpuemu_ready()) return {failure}; return {call};"
    return f"__attribute__((visibility(\"default\"))) {prototype.declaration(exported_name)} {{ {body} }}"


def init_code(library: Library) -> str:
    """The Python that runs inside the library when it starts: put gpuemu on sys.path, bind the implementations."""
    root = os.path.dirname(os.path.dirname(HERE))
    return (f"import sys\n"
            f"if {root!r} not in sys.path:\n"
            f"    sys.path.insert(0, {root!r})\n"
            f"from {library.module_name} import ffi, lib\n"
            f"from emulator.cudart import binding\n"
            f"binding.bind(ffi, lib, {library.implementation!r}, {library.filename!r})\n")


def implemented_names(module_name: str) -> set:
    """The functions a module registers with @IMPLEMENTATIONS.error/.query/.value, read from its source (no
    import: the install-time build runs where gpuemu's dependencies may not be installed yet)."""
    path = os.path.join(os.path.dirname(HERE), *module_name.split(".")[1:]) + ".py"
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Attribute) and isinstance(decorator.value, ast.Name) \
                        and decorator.value.id == "IMPLEMENTATIONS":
                    names.add(node.name)
    return names


def check_implementation(library: Library) -> None:
    """Every prototype has a Python implementation and every implementation a prototype."""
    declared = {p.name for p in library.read_prototypes()}
    implemented = implemented_names(library.implementation)
    if declared != implemented:
        missing, extra = sorted(declared - implemented), sorted(implemented - declared)
        raise ValueError(f"{library.filename}: prototypes without implementation {missing}, "
                         f"implementations without prototype {extra}")


def build(library: Library, directory: str, *, verbose: bool = False) -> str:
    """Compile the library into directory (its links beside it); returns the library's path."""
    import cffi
    check_implementation(library)
    cdef, source, _stubs = generate(library)
    os.makedirs(directory, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gpuemu-build-") as scratch:
        script = os.path.join(scratch, "versions.map")
        with open(script, "w", encoding="utf-8") as handle:
            handle.write(f"{library.version_node or library.filename} {{ global: *; }};\n")
        ffi = cffi.FFI()
        ffi.embedding_api("")
        ffi.cdef(cdef)
        defines = [("GPUEMU_PYTHON", _c_string(sys.executable)), ("GPUEMU_LIBRARY", _c_string(library.filename))]
        ffi.set_source(library.module_name, source, define_macros=defines, extra_compile_args=["-w"],
                       extra_link_args=[f"-Wl,-soname,{library.filename}",
                                        f"-Wl,-rpath,{sysconfig.get_config_var('LIBDIR') or ''}",
                                        f"-Wl,--version-script={script}", "-lpthread", "-ldl", *library.extra_link_args])
        ffi.embedding_init_code(init_code(library))
        built = ffi.compile(tmpdir=scratch, target=library.filename, verbose=verbose)
        target = os.path.join(directory, library.filename)
        staged = target + ".new"
        shutil.copyfile(built, staged)
        os.chmod(staged, 0o755)
        os.replace(staged, target)
    for link in library.links:
        path = os.path.join(directory, link)
        staged = path + ".new"
        if os.path.lexists(staged):
            os.unlink(staged)
        os.symlink(library.filename, staged)
        os.replace(staged, path)
    return target


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
