#!/usr/bin/env python3
"""Conformance cases for wrapbake, observed in PyTorch itself.

Run as ``/usr/bin/python3 tests/torch/gen.py OUT`` with Debian's
python3-torch (1.13).  Each case is a small Python function ``f(*inputs)``
over tensors.  The script runs it eagerly on real ATen kernels and writes to
OUT, in the case-file format that ``tests/torch/driver.c`` reads, three
things:

* the wrapbake text spec of ``f`` (docs/spec-format.md): which inputs it
  mutates and how, which outputs are inputs, alias inputs or alias each
  other;
* the graph values a functionalized graph of ``f`` would hand the wrapper:
  the updated inputs, the outputs, the intermediate bases;
* what a caller observes after the eager call: where every input lies, its
  view and elements, the bytes of every storage, each output's storage,
  view, version counter and elements.

The driver runs the spec and the values through wrapbake and checks that a
caller sees what PyTorch did.

How the spec is derived follows AOTAutograd's trace-time analysis
(``collect_metadata_analysis``) and the epilogue of its runtime wrapper:

* A ``TorchDispatchMode`` sees every ATen op ``f`` runs.  A tensor returned
  by a view op (a return with alias info that does not write) derives from
  the inputs its aliased arguments derive from.  A write through any
  argument marked ``(a!)`` is a data mutation of the inputs that argument
  derives from, except for ``set_`` (a storage mutation, when applied to
  the input object itself) and the ops that only re-view their argument
  (tagged ``inplace_view``, and the ``resize_`` family).
* An argument that *is* an earlier one (the same tensor object) that the
  call mutates is a duplicate of its first occurrence, as
  ``aot_wrapper_dedupe`` decides (``[duplicate=xJ]`` in the spec; one that
  no name mutates stays an input of its own): the graph gets the kept
  inputs alone,
  and a duplicate has no mutation or output of its own.  Every write
  through either name is the one tensor's, so the kept input's kind below
  describes their combined effect, and outputs that are or alias the
  tensor are the kept input's.
* Per kept input, the mutation kind is: ``storage`` when ``set_`` was
  applied to it; else ``resize`` when its storage grew (``out=`` kernels
  resize their ``out`` inside ``at::native::resize_output``, which the mode
  never sees, so sizes and storage bytes are compared before and after
  instead); else ``data_metadata`` or ``metadata`` when its view changed,
  with or without data written; else ``data`` when data was written.
* An output that *is* an input is returned as that input (``Tensor(a!)``
  when mutated, ``Tensor(a) [is_input]`` otherwise).  One that derives from
  an input, or lies on an input's storage, is an alias of that input; its
  graph value is a view of that input, or, where the call moved the input
  onto another storage or grew it, a view or copy of the storage it lies on.
  Outputs that share a storage no input has form an intermediate alias set;
  the output the others view is marked ``[base]``, otherwise the set gets
  an intermediate base value.  Anything else is a non-alias output.
* Input versions follow the epilogue's bumps (the table in the format),
  not eager's version deltas, and the replay below checks them against
  what torch's own ``copy_``, ``as_strided_``, ``set_`` and ``resize_``
  bump; an output's version counter is found in eager, by bumping each
  input's counter and watching which outputs move.

Every case is checked before it is written: the script replays wrapbake's
epilogue in torch from the spec and the values (the graph's values made
once, from the kept inputs; mutations in input order, then the outputs)
and requires it to reproduce exactly what eager PyTorch left behind; a case
marked as refused must instead break one of the checks wrapbake makes
before it mutates anything (a resized storage shared with another mutated
input, a write-back into a view whose elements overlap).  Numbers f returns
(sizes, item(), bools, None) are the spec's int, float, bool and NoneType
returns, passed through.  Each case also runs twice, so that no expectation depends on
uninitialized memory.  A case may make some of its
inputs one list parameter and its outputs one list return, of known length
(``Tensor[n]``).

The ``grad`` cases are training calls (``with training``) that record
autograd state as well: which inputs and graph values require grad before
the call (``requires_grad input I``, ``requires_grad value K``), its grad
mode (``grad_mode off``), and whether each input requires grad after it
(``expect requires_grad I 0|1``).  The inputs that require grad are made
non-leaves (a ``copy_`` from a leaf that requires grad); a value requires
grad as the eager result it stands for does with grad on.  What each input
requires afterwards is observed twice, and both must agree: by f run with
eager autograd in the call's grad mode, and by AOTAutograd's epilogue
(``copy_`` in the caller's grad mode, ``detach().copy_`` for a leaf that
requires grad, ``as_strided_``, ``set_`` under ``no_grad``) replayed in
torch from the flagged values.

A case may pass numbers (int, SymInt, float, bool, Scalar, a list of ints)
and None (for a Tensor?, or an element of a Tensor?[n]) beside its tensors:
``f`` gets them as they are, the spec gives each its type, and the case
lists every argument the graph gets (``arg`` records), in wrapbake's order:
the synthetic bases, the kept inputs outside them, numbers and None
included, then the members.  Training cases may have duplicates and
synthetic bases of views of one tensor, whose base the epilogue replayed
writes as a 1-D view of the members' whole storage.

Calls the format cannot describe are left out rather than refused:
outputs with several possible bases, and out= kernels that resize their
out tensor to the strides of a non-contiguous input (wrapbake's resize
write-back lays the input out contiguously, as resize_ does).
"""

import itertools
import re
import sys
import time
import warnings
import zlib
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Callable, Optional

try:
    import torch
except ImportError:
    print("python3-torch is not installed: apt-get install python3-torch",
          file=sys.stderr)
    sys.exit(3)

from torch.utils._python_dispatch import TorchDispatchMode

F32, F64 = torch.float32, torch.float64
I64, I32 = torch.int64, torch.int32
BOOL, U8 = torch.bool, torch.uint8

WB_DTYPE = {F32: "float32", F64: "float64", I64: "int64", I32: "int32",
            BOOL: "bool", U8: "uint8"}

# Mutation kinds, as the spec's attributes name them.
DATA, METADATA, DATA_METADATA = "data", "metadata", "data_metadata"
STORAGE, RESIZE = "storage", "resize"
# Ops that write their argument's sizes and storage, not its elements,
# though torch 1.13 does not tag them all inplace_view.
RESIZE_OPS = ("resize_", "resize_as_")

# inplace_view overloads torch 1.13 declares but cannot run, with the error
# that proves it (checked at start-up).
UNRUNNABLE_INPLACE_VIEWS = {
    "squeeze_.dimname": "does not yet support this behavior",
}


# ---------------------------------------------------------------------------
# Views, bytes and storages

def ints(xs):
    """An integer list in the format: comma-separated, '-' when empty."""
    return ",".join(str(x) for x in xs) if len(xs) else "-"


def hexbytes(data):
    return data.hex() if data else "-"


def contiguous_strides(size):
    strides, step = [], 1
    for n in reversed(size):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


@dataclass(frozen=True)
class View:
    size: tuple
    stride: tuple
    offset: int

    @staticmethod
    def of(t):
        return View(tuple(t.size()), tuple(t.stride()), t.storage_offset())

    @staticmethod
    def contiguous(size, offset=0):
        return View(tuple(size), contiguous_strides(size), offset)

    def text(self):
        return (f"{len(self.size)} {ints(self.size)} {ints(self.stride)} "
                f"{self.offset}")

    def nbytes(self, itemsize):
        """The bytes of storage the view needs."""
        if 0 in self.size:
            return 0
        last = self.offset + sum((n - 1) * s
                                 for n, s in zip(self.size, self.stride))
        return (last + 1) * itemsize

    def element_offsets(self):
        ranges = [range(n) for n in self.size]
        return [self.offset + sum(i * s for i, s in zip(index, self.stride))
                for index in itertools.product(*ranges)]


def itemsize(dtype):
    return torch.empty(0, dtype=dtype).element_size()


def elem_bytes(t):
    """The bytes of t's elements in row-major order of its view."""
    flat = t.detach().contiguous().reshape(-1)
    return bytes(flat.view(torch.uint8).tolist())


def storage_key(t):
    """The identity of t's StorageImpl, stable when resize_ reallocates."""
    return t.storage()._cdata


def storage_bytes(storage, dtype):
    """The whole storage's bytes, read as dtype elements."""
    return elem_bytes(tensor_on(storage, dtype,
                                View.contiguous((storage.size(),))))


def storage_from_bytes(dtype, data):
    return torch.tensor(list(data), dtype=torch.uint8).view(dtype).storage()


def tensor_on(storage, dtype, view):
    """A tensor of its own (own version counter) viewing storage."""
    return torch.empty(0, dtype=dtype).set_(storage, view.offset, view.size,
                                           view.stride)


def sample_bytes(dtype, numel, seed):
    """Deterministic small values, exact in every dtype used."""
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        t = torch.randint(-8, 9, (numel,), generator=g).to(dtype) / 4
    elif dtype == BOOL:
        t = torch.randint(0, 2, (numel,), generator=g).bool()
    elif dtype == U8:
        t = torch.randint(0, 16, (numel,), generator=g).to(dtype)
    else:
        t = torch.randint(-9, 10, (numel,), generator=g).to(dtype)
    return elem_bytes(t)


# ---------------------------------------------------------------------------
# Describing a case's inputs

@dataclass(frozen=True)
class Part:
    """One storage of a case and the inputs on it: (view, group) pairs, the
    group numbering the version-counter groups within the part."""
    dtype: torch.dtype
    numel: int
    views: tuple


@dataclass(frozen=True)
class Same:
    """An input that is another input's very tensor object: the spec makes
    it a duplicate of that object's first input."""
    index: int


def layout(size, how):
    """(storage numel, view) of an input of these sizes laid out so:
    contig, t (a transposed tensor), slice (x[1:] of one more row),
    step (x[..., ::2]) or offset (three elements into its storage)."""
    size = tuple(size)
    numel = 1
    for n in size:
        numel *= n
    if how == "contig":
        return numel, View.contiguous(size)
    if how == "t":
        return numel, View(size, contiguous_strides(size[::-1])[::-1], 0)
    if how == "slice":
        row = numel // size[0]
        return numel + row, View.contiguous(size, row)
    if how == "step":
        wide = size[:-1] + (2 * size[-1],)
        strides = contiguous_strides(wide)
        return 2 * numel, View(size, strides[:-1] + (2,), 0)
    if how == "offset":
        return numel + 3, View.contiguous(size, 3)
    raise ValueError(f"unknown layout {how!r}")


def T(*size, dtype=F32, how="contig"):
    """An input alone on a storage of its own."""
    numel, view = layout(size, how)
    return Part(dtype, numel, ((view, 0),))


def Shared(numel, *views, dtype=F32):
    """Several inputs on one storage: (size, stride, offset, group) each."""
    return Part(dtype, numel, tuple((View(tuple(s), tuple(st), off), g)
                                    for s, st, off, g in views))


@dataclass(frozen=True)
class Num:
    """A number input: its value and the spec's type of the parameter
    (int, SymInt, float, bool, Scalar, SymInt[2], ...), with the schema's
    default text, if any."""
    value: object
    type: str
    default: Optional[str] = None


class NoneArg:
    """None for an optional tensor (Tensor?, an element of Tensor?[n]): the
    caller passes a NULL tensor."""


NONE = NoneArg()

# The member of wb_value a number input's spec type takes: int64_t,
# double, bool, or the caller's own pointer (Scalar, lists, optionals).
NUMBER_CLASS = {"int": "int", "SymInt": "int", "float": "float",
                "bool": "bool"}


def is_tensor(t):
    return isinstance(t, torch.Tensor)


@dataclass(frozen=True)
class StorageDef:
    dtype: torch.dtype
    data: bytes


@dataclass(frozen=True)
class InputDef:
    storage: int
    group: int
    view: Optional[View]
    same: Optional[int] = None
    kind: str = "tensor"      # tensor, number (a Num), none (a NULL tensor)
    number: Optional[Num] = None

    def text(self, i):
        """The case file's input record."""
        if self.kind == "none":
            return f"input {i} none"
        if self.kind == "number":
            n = self.number
            cls = NUMBER_CLASS.get(n.type, "opaque")
            if cls == "float":
                value = float(n.value).hex()
            elif cls == "opaque":
                value = re.sub(r"[^A-Za-z0-9_.,+-]", "", str(n.value))
            else:
                value = str(int(n.value))
            return f"input {i} number {cls} {value}"
        if self.same is not None:
            return f"input {i} same {self.same}"
        return f"input {i} {self.storage} {self.group} {self.view.text()}"


@dataclass
class Case:
    name: str
    category: str
    fn: Callable
    storages: list
    inputs: list
    refused: bool
    covers: tuple
    lists: tuple         # (first input, count, optional): a list parameter
    list_return: bool    # the outputs are one list return
    grad: Optional["Grad"] = None  # a training call, its autograd state
    kwonly: Optional[int] = None  # the first keyword-only parameter


@dataclass(frozen=True)
class Grad:
    """A training call: the inputs made to require grad before it (each a
    non-leaf, as a copy_ from a leaf that requires grad makes it), and the
    grad mode the call runs in."""
    requires: tuple = ()
    enabled: bool = True


CASES = []


def add(category, name, fn, *parts, refused=False, covers=(), lists=(),
        list_return=False, grad=None, kwonly=None):
    """Registers a case: f and its inputs, described by T, Shared, Same,
    Num (a number) and NONE (None for a Tensor?); kwonly is the first
    keyword-only parameter, after the spec's `*`.
    lists makes inputs one list parameter each, Tensor[n] (Tensor?[n] when
    optional), and list_return the outputs one list return, Tensor[n];
    grad (a Grad) makes it a training call that compares requires-grad."""
    seed = zlib.crc32(name.encode())
    storages, inputs, groups = [], [], 0
    for part in parts:
        if isinstance(part, Num):
            inputs.append(InputDef(-1, -1, None, kind="number", number=part))
            continue
        if isinstance(part, NoneArg):
            inputs.append(InputDef(-1, -1, None, kind="none"))
            continue
        if isinstance(part, Same):
            ref = inputs[part.index]
            root = part.index if ref.same is None else ref.same
            inputs.append(replace(ref, same=root))
            continue
        data = sample_bytes(part.dtype, part.numel, seed + len(storages))
        for view, group in part.views:
            inputs.append(InputDef(len(storages), groups + group, view))
        storages.append(StorageDef(part.dtype, data))
        groups += 1 + max(group for _, group in part.views)
    CASES.append(Case(f"{category}/{name}", category, fn, storages, inputs,
                      refused, covers, tuple(lists), list_return, grad,
                      kwonly))


def case(category, name, *parts, **options):
    """add() as a decorator, for functions of several statements."""
    def register(fn):
        add(category, name, fn, *parts, **options)
        return fn
    return register


def build(case):
    """Fresh storages with the case's bytes and fresh inputs on them: the
    first input of a counter group set_ onto its storage, the others views
    of it, as the driver makes them with wrapbake."""
    storages = [storage_from_bytes(s.dtype, s.data) for s in case.storages]
    inputs, firsts = [], {}
    for d in case.inputs:
        if d.kind == "number":
            inputs.append(d.number.value)
        elif d.kind == "none":
            inputs.append(None)
        elif d.same is not None:
            inputs.append(inputs[d.same])
        elif d.group in firsts:
            inputs.append(torch.as_strided(firsts[d.group], d.view.size,
                                           d.view.stride, d.view.offset))
        else:
            dtype = case.storages[d.storage].dtype
            firsts[d.group] = tensor_on(storages[d.storage], dtype, d.view)
            inputs.append(firsts[d.group])
    return storages, inputs


# ---------------------------------------------------------------------------
# Watching f run

def op_name(func):
    schema = func._schema
    return f"{schema.name.split('::')[-1]}.{schema.overload_name or 'default'}"


def tensors_in(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return []


def bind(schema, args, kwargs):
    """(schema argument, value) for every argument given to an op."""
    bound = []
    for index, arg in enumerate(schema.arguments):
        if not arg.kwarg_only and index < len(args):
            bound.append((arg, args[index]))
        elif arg.name in kwargs:
            bound.append((arg, kwargs[arg.name]))
    return bound


class Tracer(TorchDispatchMode):
    """Sees every ATen op f runs: which inputs f set_, which it wrote the
    data of, and which tensors derive from which inputs through views."""

    def __init__(self, inputs):
        super().__init__()
        self.inputs = inputs
        self.ops = set()
        self.set_on = set()
        self.written = set()
        self._origins = {}
        for i, t in enumerate(inputs):
            if is_tensor(t):
                self._derive(t, {i})

    def origin(self, t):
        """The inputs t derives from through view ops (itself included)."""
        entry = self._origins.get(id(t))
        return entry[1] if entry and entry[0] is t else frozenset()

    def _derive(self, t, inputs):
        self._origins[id(t)] = (t, self.origin(t) | frozenset(inputs))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = op_name(func)
        self.ops.add(name)
        bound = bind(func._schema, args, kwargs)
        for arg, value in bound:
            if arg.alias_info is not None and arg.alias_info.is_write:
                self._note_write(func, name, value)
        out = func(*args, **kwargs)
        self._note_views(func._schema, bound, out)
        return out

    def _note_write(self, func, name, value):
        reviews = (torch.Tag.inplace_view in func.tags
                   or name.split(".")[0] in RESIZE_OPS)
        for t in tensors_in(value):
            if name.startswith("set_."):
                self.set_on.update(i for i, x in enumerate(self.inputs)
                                   if x is t)
            elif not reviews:
                self.written |= self.origin(t)

    def _note_views(self, schema, bound, out):
        results = out if len(schema.returns) > 1 else (out,)
        for ret, value in zip(schema.returns, results):
            info = ret.alias_info
            if info is None or info.is_write:
                continue
            sources = set()
            for arg, given in bound:
                shared = arg.alias_info and (arg.alias_info.before_set
                                             & info.before_set)
                if shared:
                    for t in tensors_in(given):
                        sources |= self.origin(t)
            if sources:
                for t in tensors_in(value):
                    self._derive(t, sources)


@dataclass
class Run:
    """One eager call of a case's f on fresh inputs."""
    storages: list
    inputs: list
    before: list         # View of each input before the call
    before_keys: list    # its storage's identity
    before_nbytes: list
    outputs: list
    tracer: Optional[Tracer]


def flatten(result):
    if result is None:
        return []
    if isinstance(result, (list, tuple)):
        return list(result)
    return [result]


def run_eager(case, traced):
    storages, inputs = build(case)
    before = [View.of(t) if is_tensor(t) else None for t in inputs]
    keys = [storage_key(t) if is_tensor(t) else None for t in inputs]
    nbytes = [t.storage().nbytes() if is_tensor(t) else None for t in inputs]
    tracer = Tracer(inputs) if traced else None
    with tracer or nullcontext():
        result = case.fn(*inputs)
    return Run(storages, inputs, before, keys, nbytes, flatten(result), tracer)


def fingerprint(run):
    """Everything a run left, for comparing two runs of one case."""
    def of(t):
        return (View.of(t), elem_bytes(t),
                storage_bytes(t.storage(), t.dtype)) \
            if isinstance(t, torch.Tensor) else t
    return [of(t) for t in run.inputs + run.outputs]


# ---------------------------------------------------------------------------
# Deriving the spec and the graph values

@dataclass(frozen=True)
class Output:
    kind: str            # is_input, alias, non_alias, intermediate, number
    input: int = -1      # is_input, alias: the input
    aset: int = -1       # intermediate: the alias set, in order of appearance
    base: bool = False   # intermediate: this output is its set's base
    number: str = ""     # number: int, float, bool or None
    merged: bool = False  # is_input of a synthetic base's member, which
                          # AOTAutograd returns as a view of the base


def number_type(value):
    """The spec's type of a number f returned: bool before int, which
    Python's bool is."""
    if value is None:
        return "None"
    for kind in (bool, int, float):
        if isinstance(value, kind):
            return kind.__name__
    raise AssertionError(f"{type(value).__name__} is neither a tensor nor a "
                         f"number")


def number_text(value):
    """A number as the case file writes it: TYPE V, or None."""
    kind = number_type(value)
    if kind == "None":
        return "None"
    if kind == "float":
        return f"float {value.hex()}"
    return f"{kind} {int(value)}"


@dataclass(frozen=True)
class Value:
    kind: str            # new, view, of, input, number
    ref: int = -1        # view, input: the input; of: the value viewed
    view: Optional[View] = None
    dtype: Optional[torch.dtype] = None
    data: bytes = b""
    source: Optional[int] = None   # new: the eager storage it copies
    number: object = None          # number: the number itself

    def text(self):
        if self.kind == "number":
            return f"number {number_text(self.number)}"
        if self.kind == "new":
            return (f"new {WB_DTYPE[self.dtype]} {len(self.data)} "
                    f"{hexbytes(self.data)} {self.view.text()}")
        if self.kind == "input":
            return f"input {self.ref}"
        return f"{self.kind} {self.ref} {self.view.text()}"


def contiguous_value(t):
    return Value("new", view=View.contiguous(t.size()), dtype=t.dtype,
                 data=elem_bytes(t))


def storage_value(t):
    """A fresh copy of t's whole storage, viewed as t is."""
    return Value("new", view=View.of(t), dtype=t.dtype,
                 data=storage_bytes(t.storage(), t.dtype),
                 source=storage_key(t))


@dataclass
class Derivation:
    kept: list           # per input: the input whose object it is (itself
                         # when kept, else the one it duplicates)
    kinds: list          # per input: a mutation kind or None
    outputs: list        # Output per output
    values: list         # Value per graph value
    groups: list         # synthetic bases: the kept inputs of each

    @property
    def members(self):
        return {i for g in self.groups for i in g}

    @property
    def updated(self):
        """The inputs written back from values of their own: the mutated
        ones outside synthetic bases."""
        return [i for i, kind in enumerate(self.kinds)
                if kind and i not in self.members]

    def update_value(self, i):
        """The graph value input i is written back from: after the
        synthetic bases' values."""
        return len(self.groups) + self.updated.index(i)

    @property
    def first_output(self):
        return len(self.groups) + len(self.updated)

    def group_of(self, i):
        return next((g for g in self.groups if i in g), None)

    @property
    def new_views(self):
        """The members whose view changes, which take it from a value
        after the outputs."""
        return [i for i in sorted(self.members)
                if self.kinds[i] in (METADATA, DATA_METADATA)]

    def is_duplicate(self, i):
        return self.kept[i] != i


def dedupe(run):
    """Per input, the input it keeps, as aot_wrapper_dedupe decides: an
    argument that `is` an earlier one duplicates the first occurrence of
    its object when the call mutates that object, and the graph gets the
    first occurrences alone; an object no name mutates stays an input per
    argument (AOTAutograd makes each later one a leaf of its own)."""
    mutated = {id(t) for i, t in enumerate(run.inputs)
               if mutation_kind(run, i) is not None}
    first = {}
    return [first.setdefault(id(t), i) if id(t) in mutated else i
            for i, t in enumerate(run.inputs)]


def mutation_kind(run, i):
    t = run.inputs[i]
    if not is_tensor(t):
        return None  # a number or None, which nothing mutates
    if i in run.tracer.set_on:
        return STORAGE
    assert storage_key(t) == run.before_keys[i], "storage changed without set_"
    written = i in run.tracer.written
    if t.storage().nbytes() > run.before_nbytes[i]:
        return RESIZE
    if View.of(t) != run.before[i]:
        return DATA_METADATA if written else METADATA
    return DATA if written else None


def classify_outputs(run, kept):
    """Output per output, and the intermediate alias sets: (members, base
    output or None) in order of first appearance.  The input an output is
    or aliases is a kept one: a duplicate's are its kept input's."""
    after = [storage_key(t) if is_tensor(t) else None for t in run.inputs]
    outputs, by_storage = [], {}
    for k, o in enumerate(run.outputs):
        if not isinstance(o, torch.Tensor):
            outputs.append(Output("number", number=number_type(o)))
            continue
        same = [i for i, t in enumerate(run.inputs)
                if o is t and is_tensor(t)]
        origin = run.tracer.origin(o)
        if same:
            outputs.append(Output("is_input", input=kept[same[0]]))
        elif origin:
            outputs.append(Output("alias", input=kept[min(origin)]))
        elif storage_key(o) in after:
            outputs.append(Output("alias",
                                  input=kept[after.index(storage_key(o))]))
        else:
            outputs.append(None)
            by_storage.setdefault(storage_key(o), []).append(k)
    sets = []
    for members in by_storage.values():
        first = run.outputs[members[0]]
        if len(members) == 1 and first._base is None:
            outputs[members[0]] = Output("non_alias")
            continue
        base = intermediate_base(run, members)
        for k in members:
            outputs[k] = Output("intermediate", aset=len(sets), base=k == base)
        sets.append((members, base))
    return outputs, sets


def intermediate_base(run, members):
    """The output of an alias set that the others view, or None when they
    all view one intermediate f did not return."""
    for b in members:
        o = run.outputs[b]
        if o._base is None and all(run.outputs[k]._base is o
                                   for k in members if k != b):
            return b
    root = run.outputs[members[0]]._base
    assert root is not None and all(run.outputs[k]._base is root
                                    for k in members), \
        "outputs share a storage without one base"
    return None


def input_view_value(run, t, prefer):
    """`view J` for t when the graph can make it so: t lies on the storage
    input J had before the call, within the bytes it had (input prefer
    first, then the lowest); else a fresh copy of t's storage."""
    view = View.of(t)
    for j in [prefer] + list(range(len(run.inputs))):
        if (run.before_keys[j] == storage_key(t)
                and view.nbytes(t.element_size()) <= run.before_nbytes[j]):
            return Value("view", ref=j, view=view)
    return storage_value(t)


def updated_value(run, i, kind):
    t = run.inputs[i]
    if kind in (DATA, RESIZE):
        return contiguous_value(t)
    if kind == METADATA:
        return Value("view", ref=i, view=View.of(t))
    if kind == STORAGE:
        return input_view_value(run, t, i)
    return storage_value(t)


def synthetic_groups(run, kept):
    """The synthetic bases AOTAutograd's merge_view_inputs makes: the kept
    inputs on one storage, when one of them has its data written and two
    of them overlap, all of them merged into one."""
    by_storage = {}
    for i, k in enumerate(kept):
        if k == i and is_tensor(run.inputs[i]):
            by_storage.setdefault(run.before_keys[i], []).append(i)
    groups = []
    for members in by_storage.values():
        offsets = [set(run.before[i].element_offsets()) for i in members]
        overlap = any(offsets[a] & offsets[b]
                      for a in range(len(members))
                      for b in range(a + 1, len(members)))
        if overlap and any(i in run.tracer.written for i in members):
            groups.append(members)
    return groups


def base_value(run, members):
    """A synthetic base's updated value: its whole storage after the call,
    one dimension, as the base is."""
    t = run.inputs[members[0]]
    data = storage_bytes(t.storage(), t.dtype)
    return Value("new", view=View.contiguous((len(data) // t.element_size(),)),
                 dtype=t.dtype, data=data)


def derive(run):
    """The spec's facts and the graph's values.  A duplicate has no
    mutation of its own: every write through it or its kept input is one
    tensor's, whose combined effect the kept input's kind describes, and
    the graph returns one updated value for it.  Inputs merged into a
    synthetic base give the graph's base value first, and the members
    whose view changes their views after the outputs, as AOTAutograd's
    synthetic-base wrapper adds them to the user's outputs, before the
    intermediate bases."""
    kept = dedupe(run)
    kinds = [mutation_kind(run, i) if kept[i] == i else None
             for i in range(len(run.inputs))]
    groups = synthetic_groups(run, kept)
    members = {i for g in groups for i in g}
    outputs, sets = classify_outputs(run, kept)
    outputs = [replace(o, merged=True)
               if o.kind == "is_input" and o.input in members else o
               for o in outputs]
    values = [base_value(run, g) for g in groups]
    values += [updated_value(run, i, kind) for i, kind in enumerate(kinds)
               if kind and i not in members]
    first_output = len(values)
    new_views = [i for i in sorted(members)
                 if kinds[i] in (METADATA, DATA_METADATA)]
    first_base = first_output + len(outputs) + len(new_views)
    set_value, bases = [], []
    for members, base in sets:
        if base is None:
            bases.append(run.outputs[members[0]]._base)
            set_value.append(first_base + len(bases) - 1)
        else:
            set_value.append(first_output + base)
    for out, o in zip(outputs, run.outputs):
        if out.kind == "number":
            values.append(Value("number", number=o))
        elif out.kind == "is_input" and not out.merged:
            values.append(Value("input", ref=out.input))
        elif out.kind in ("alias", "is_input"):
            values.append(input_view_value(run, o, out.input))
        elif out.kind == "non_alias" or out.base:
            values.append(storage_value(o))
        elif out.kind == "intermediate":
            values.append(Value("of", ref=set_value[out.aset],
                                view=View.of(o)))
    values += [Value("view", ref=i, view=View.of(run.inputs[i]))
               for i in new_views]
    values += [storage_value(b) for b in bases]
    d = Derivation(kept, kinds, outputs, values, groups)
    assert d.new_views == new_views
    return d


# ---------------------------------------------------------------------------
# The spec text

def set_names(count):
    letters = "abcdefghijklmnopqrstuvwxyz"
    assert count <= len(letters), "too many alias sets for single letters"
    return letters[:count]


def spec_text(name, d, lists=(), list_return=False, inputs=(), kwonly=None):
    """The spec: a parameter per input, but for the inputs a list of
    `lists` groups, and a return per output, or one list of them all.  A
    number input is a parameter of its type, None a Tensor? (an element
    of a Tensor?[n]), and kwonly the first parameter after `*`."""
    nin = len(d.kinds)
    names = set_names(nin + 1 + max([o.aset for o in d.outputs], default=-1))
    aliased = {o.input for o in d.outputs if o.input >= 0}
    params = []   # (type, attributes) per input
    for i, kind in enumerate(d.kinds):
        group = d.group_of(i)
        tied = [f"aliases=x{group[0]}"] if group and group[0] != i else []
        given = inputs[i] if inputs else None
        if given is not None and given.kind == "number":
            n = given.number
            default = f"={n.default}" if n.default is not None else ""
            params.append((n.type, default))
        elif given is not None and given.kind == "none":
            params.append(("Tensor", ""))
        elif d.is_duplicate(i):
            params.append(("Tensor", f" [duplicate=x{d.kept[i]}]"))
        elif kind:
            params.append((f"Tensor({names[i]}!)",
                           f" [{', '.join([kind] + tied)}]"))
        elif i in aliased:
            params.append((f"Tensor({names[i]})",
                           f" [{tied[0]}]" if tied else ""))
        else:
            params.append(("Tensor", f" [{tied[0]}]" if tied else ""))
    grouped = {first: (count, optional) for first, count, optional in lists}
    text, i = [], 0
    while i < nin:
        count, optional = grouped.get(i, (1, None))
        members = range(i, i + count)
        star = ["*"] if kwonly == i else []
        text += star
        if optional is None and inputs and inputs[i].kind == "number":
            text.append(f"{params[i][0]} x{i}{params[i][1]}")
        elif optional is None:
            mark = "?" if inputs and inputs[i].kind == "none" else ""
            text.append(f"{params[i][0]}{mark} x{i}{params[i][1]}")
        else:
            # One set, one kind: every element is as the first.
            assert all(not d.is_duplicate(j) and d.kept.count(j) == 1
                       and j not in aliased and d.kinds[j] == d.kinds[i]
                       and inputs[j].kind in ("tensor", "none")
                       for j in members), "a list's elements differ"
            assert optional or all(inputs[j].kind == "tensor"
                                   for j in members), "None in a Tensor[n]"
            assert not (optional and d.kinds[i]), "a mutated optional"
            mark = "?" if optional else ""
            text.append(f"{params[i][0]}{mark}[{count}] x{i}{params[i][1]}")
        i += count
    rets = []     # (type, attributes) per output
    for o in d.outputs:
        if o.kind == "number":
            rets.append(({"None": "NoneType"}.get(o.number, o.number), ""))
        elif o.kind == "is_input" and d.kinds[o.input]:
            rets.append((f"Tensor({names[o.input]}!)", ""))
        elif o.kind == "is_input":
            rets.append((f"Tensor({names[o.input]})", " [is_input]"))
        elif o.kind == "alias":
            rets.append((f"Tensor({names[o.input]})", ""))
        elif o.kind == "intermediate":
            rets.append((f"Tensor({names[nin + o.aset]})",
                         " [base]" if o.base else ""))
        else:
            rets.append(("Tensor", ""))
    if list_return:
        assert len(set(rets)) == 1 and rets[0][1] != " [base]", \
            "the outputs are not alike: no list of them"
        rets = [(f"{rets[0][0]}[{len(rets)}]", rets[0][1])]
    rets = [t + a for t, a in rets]
    returns = rets[0] if len(rets) == 1 else f"({', '.join(rets)})"
    return f"{name}({', '.join(text)}) -> {returns}"


PARAM = re.compile(r"Tensor(?:\((\w+)(!?)\))?\??(?:\[(\d+)\])? x(\d+)"
                   r"(?: \[([^\]]*)\])?")


def spec_value_count(text):
    """N = updated values + outputs + intermediate bases + members' new
    views, read back from the spec text alone: a synthetic base (inputs
    tied by aliases=) gives one updated value, and each member mutated in
    its view one more."""
    params, returns = text.split(" -> ")
    root, info = {}, []
    for m in PARAM.finditer(params):
        aset, bang, n, index, attrs = m.groups()
        attrs = attrs.split(", ") if attrs else []
        tied = [int(a[len("aliases=x"):]) for a in attrs
                if a.startswith("aliases=x")]
        root[int(index)] = root[tied[0]] if tied else int(index)
        info.append((int(index), aset, bang, int(n or 1), attrs))
    members = {i for i, r in root.items() if r != i}
    members |= {root[i] for i in members}
    owned = {aset for _, aset, _, _, _ in info if aset}
    mutated = sum(n for i, _, bang, n, _ in info if bang and i not in members)
    mutated += len({root[i] for i in members})
    mutated += sum(1 for i, _, _, _, attrs in info if i in members and
                   {"metadata", "data_metadata"} & set(attrs))
    rets = re.findall(r"Tensor(?:\((\w+)!?\))?(?:\[(\d+)\])?( \[base\])?",
                      returns)
    bases = {s for s, _, base in rets if s and s not in owned and not base}
    based = {s for s, _, base in rets if base}
    numbers = re.findall(r"\b(?:int|float|bool|NoneType)(?:\[(\d+)\])?",
                         returns)
    return mutated + sum(int(n or 1) for _, n, _ in rets) + \
        sum(int(n or 1) for n in numbers) + len(bases - based)


def spec_duplicates(text):
    """{I: J} for each parameter xI the spec text marks [duplicate=xJ],
    read back from the text alone; a duplicate has no alias set, mutation
    or flag of its own."""
    params = text.split(" -> ")[0]
    found = {}
    for m in re.finditer(r"(Tensor(?:\(\w+!?\))?) x(\d+) \[duplicate=x(\d+)\]",
                         params):
        assert m.group(1) == "Tensor", f"duplicate x{m.group(2)} is annotated"
        found[int(m.group(2))] = int(m.group(3))
    assert params.count("duplicate=") == len(found), "a duplicate with flags"
    return found


# ---------------------------------------------------------------------------
# What a caller observes

BUMPS = {DATA: 1, METADATA: 1, DATA_METADATA: 2, STORAGE: 1, RESIZE: 1}


def version_deltas(case, run, d):
    """DVERSION per input: the epilogue's bumps of every mutated input in
    its counter group; a set_ bumps only its own input's counter (and so
    its duplicates', which are that tensor).  A duplicate is in its kept
    input's group and has no bumps of its own."""
    groups = [x.group for x in case.inputs]
    members = d.members

    def bumps(j):
        kind = d.kinds[j]
        if j in members:  # its data is the base's; its view, as_strided_
            return 1 if kind in (METADATA, DATA_METADATA) else 0
        return BUMPS.get(kind, 0)
    deltas = [sum(bumps(j) for j in range(len(groups))
                  if groups[j] == groups[i] and d.kinds[j]
                  and (d.kinds[j] != STORAGE or j == d.kept[i]))
              for i in range(len(groups))]
    # A synthetic base's copy bumps its members' counter when they share
    # one (their _base's), and a counter of its own otherwise.
    for g in d.groups:
        shared = {groups[i] for i in g}
        if len(shared) == 1:
            deltas = [n + (c in shared) for n, c in zip(deltas, groups)]
    return deltas


def counter_shares(inputs, outputs):
    """For each output, 'iN' for the lowest input whose version counter it
    shares, else '-': each input's counter is bumped in turn by as_strided_
    onto its own view, an in-place op that changes nothing else."""
    shares = ["-"] * len(outputs)
    for n, t in enumerate(inputs):
        if not is_tensor(t):
            continue
        seen = [o._version for o in outputs]
        t.as_strided_(t.size(), t.stride(), t.storage_offset())
        for k, o in enumerate(outputs):
            if shares[k] == "-" and o._version != seen[k]:
                shares[k] = f"i{n}"
    return shares


def observe(case, storages, inputs, outputs, labels, dversion, private=(),
            views=()):
    """The expect lines for what lies in storages, inputs and outputs after
    a call, and the dtypes and storage sizes, which the lines leave out but
    the replay must match too.  The outputs in private share no input's
    version counter, whatever eager's do (views of a synthetic base with a
    counter of its own)."""
    def where(t):
        assert storage_key(t) in labels, "a tensor on an unnamed storage"
        return labels[storage_key(t)]

    tensors = [o for o in outputs if isinstance(o, torch.Tensor)]
    shares = iter(counter_shares(inputs, tensors))
    lines = []
    for i, t in enumerate(inputs):
        if not is_tensor(t):
            continue  # a number or None: the graph's argument, checked there
        lines.append(f"expect input {i} {where(t)} {View.of(t).text()} "
                     f"{dversion[i]}")
        lines.append(f"expect elems {i} {hexbytes(elem_bytes(t))}")
    for s, st in enumerate(storages):
        if st.nbytes() == len(case.storages[s].data):
            data = storage_bytes(st, case.storages[s].dtype)
            lines.append(f"expect storage {s} {hexbytes(data)}")
    for k, o in enumerate(outputs):
        if not isinstance(o, torch.Tensor):
            lines.append(f"expect output {k} number {number_text(o)}")
            continue
        share = next(shares)
        if k in private:
            share = "-"
        same = [i for i, t in enumerate(inputs)
                if o is t and is_tensor(t) and k not in views]
        lines.append(f"expect output {k} is_input {same[0]}" if same else
                     f"expect output {k} {where(o)} {View.of(o).text()} "
                     f"{share} {hexbytes(elem_bytes(o))}")
    extra = ([t.dtype for t in inputs + tensors if is_tensor(t)],
             [st.nbytes() for st in storages])
    return lines, extra


def eager_labels(run, d):
    labels = {st._cdata: f"s{s}" for s, st in enumerate(run.storages)}
    for k, v in enumerate(d.values):
        if v.source is not None:
            labels.setdefault(v.source, f"v{k}")
    return labels


# ---------------------------------------------------------------------------
# wrapbake's side: its refusals and its epilogue, replayed in torch

def refusal(case, d):
    """Why wrapbake refuses the call before mutating anything, or None:
    the checks of src/abi/args.c (distinct tensors) and src/abi/mutate.c
    (the copies of the write-back).  One tensor passed for several inputs
    is never refused: derive() makes the later ones duplicates of the
    first, so that no two inputs the spec mutates are one tensor."""
    for g in d.groups:
        for i in g:
            if d.kinds[i] in (STORAGE, RESIZE):
                return (f"input {i} is in a synthetic base, and its "
                        f"{d.kinds[i]} mutation is not one a member has "
                        f"(PyTorch's functionalization refuses to grow a "
                        f"view of the base too)")
    for i, kind in enumerate(d.kinds):
        if i in d.members:
            continue  # written back through its synthetic base
        for j in range(len(d.kinds)):
            if (kind == RESIZE and j != i and d.kinds[j]
                    and case.inputs[j].storage == case.inputs[i].storage):
                return (f"input {j} shares a storage with input {i}, whose "
                        f"resize mutation may move it")
        destination = write_back_view(case, d, i)
        if destination and self_overlaps(destination):
            return (f"two elements of input {i} share a memory location, so "
                    f"its updated value cannot be copied into it")
    return None


def write_back_view(case, d, i):
    """The view a data write-back of input i copies into, or None."""
    kind, before = d.kinds[i], case.inputs[i].view
    value = d.values[d.update_value(i)] if kind else None
    if kind == DATA:
        return before
    if kind == DATA_METADATA:
        return value.view
    if kind == RESIZE and value.view.size != before.size:
        return View.contiguous(value.view.size, before.offset)
    if kind == RESIZE:
        return before
    return None


def self_overlaps(view):
    offsets = view.element_offsets()
    return len(set(offsets)) < len(offsets)


def make_values(values, inputs):
    """The graph's values as the driver makes them: new storages, views of
    the inputs as they are when the graph runs, views of other values."""
    made = [None] * len(values)
    for k, v in enumerate(values):
        if v.kind == "new":
            made[k] = tensor_on(storage_from_bytes(v.dtype, v.data), v.dtype,
                                v.view)
        elif v.kind == "view":
            made[k] = torch.as_strided(inputs[v.ref], v.view.size,
                                       v.view.stride, v.view.offset)
        elif v.kind == "input":
            made[k] = inputs[v.ref]
        elif v.kind == "number":
            made[k] = v.number
    for k, v in enumerate(values):
        if v.kind == "of":
            made[k] = torch.as_strided(made[v.ref], v.view.size,
                                       v.view.stride, v.view.offset)
    return made


def write_back(t, kind, v):
    """One mutation of the epilogue, as wrapbake commits it."""
    if kind in (METADATA, DATA_METADATA):
        t.as_strided_(v.size(), v.stride(), v.storage_offset())
    if kind == STORAGE:
        t.set_(v)
    if kind == RESIZE and t.size() != v.size():
        t.resize_(v.size())
    if kind in (DATA, DATA_METADATA, RESIZE):
        t.copy_(v)


def private(case, d):
    """The outputs that alias a member of a synthetic base whose members
    have counters of their own: views of the base, they share its."""
    apart = [g for g in d.groups
             if len({case.inputs[i].group for i in g}) > 1]
    return {k for k, o in enumerate(d.outputs)
            if (o.kind == "alias" or o.merged)
            and any(o.input in g for g in apart)}


def merged_views(d):
    """The outputs that are a synthetic base's member, which AOTAutograd
    returns as views of the base rather than the member itself."""
    return {k for k, o in enumerate(d.outputs) if o.merged}


def replay(case, d, dversion):
    """wrapbake's epilogue on fresh inputs: mutations in input order, then
    the outputs; returns what a caller would observe.  The graph gets the
    kept inputs alone and computes its values once, one updated value per
    mutated kept input: a duplicate is its kept input's very tensor, which
    the epilogue mutates once, and which every value naming either one
    views."""
    storages, inputs = build(case)
    start = [t._version if is_tensor(t) else 0 for t in inputs]
    kept = [i for i in range(len(inputs)) if d.kept[i] == i]
    args = [inputs[i] for i in kept]
    assert {id(t) for t in inputs} == {id(t) for t in args}, \
        "the graph would miss a tensor"
    assert all(sum(inputs[i] is u for u in args) == 1
               for i, kind in enumerate(d.kinds) if kind), \
        "the graph would get a mutated tensor twice"
    assert all(d.kept[i] == i for i in d.updated), "a duplicate is mutated"
    # A value names the user's input I: the graph's argument of I's kept
    # input, which is I's very object.
    by_user = [args[kept.index(d.kept[i])] for i in range(len(inputs))]
    assert all(t is u for t, u in zip(by_user, inputs))
    made = make_values(d.values, by_user)
    # Each synthetic base: a view of its first member's storage, whole,
    # sharing the members' counter when they share one, else a tensor of
    # its own on the storage.
    bases = []
    for g in d.groups:
        t = inputs[g[0]]
        numel = t.storage().nbytes() // t.element_size()
        if len({case.inputs[i].group for i in g}) == 1:
            bases.append(torch.as_strided(t, (numel,), (1,), 0))
        else:
            bases.append(torch.empty(0, dtype=t.dtype).set_(
                t.storage(), 0, (numel,), (1,)))
    for b, base in enumerate(bases):
        base.copy_(made[b])
    for i in d.updated:
        write_back(inputs[i], d.kinds[i], made[d.update_value(i)])
    outputs = []
    for k, o in enumerate(d.outputs):
        v = made[d.first_output + k]
        group = d.group_of(o.input) if o.kind == "alias" or o.merged \
            else None
        if o.kind == "is_input" and not o.merged:
            outputs.append(inputs[o.input])
        elif o.kind in ("alias", "is_input"):
            base = bases[d.groups.index(group)] if group else inputs[o.input]
            outputs.append(torch.as_strided(base, v.size(), v.stride(),
                                            v.storage_offset()))
        else:
            outputs.append(v)
    # Then the members' new views.
    first_view = d.first_output + len(d.outputs)
    for k, i in enumerate(d.new_views):
        v = made[first_view + k]
        inputs[i].as_strided_(v.size(), v.stride(), v.storage_offset())
    # The versions the cases expect are the bumps of the epilogue's own
    # ops, as torch counts them: copy_, as_strided_, set_, resize_.
    bumped = [t._version - n if is_tensor(t) else 0
              for t, n in zip(inputs, start)]
    assert bumped == list(dversion), \
        f"torch bumps the inputs by {bumped} in the epilogue's ops, " \
        f"where the case expects {list(dversion)}"
    labels = {st._cdata: f"s{s}" for s, st in enumerate(storages)}
    for k, v in enumerate(d.values):
        if v.kind == "new":
            labels.setdefault(storage_key(made[k]), f"v{k}")
    return observe(case, storages, inputs, outputs, labels, dversion,
                   private(case, d), merged_views(d))


# ---------------------------------------------------------------------------
# Requires-grad in training: eager autograd, and the epilogue replayed
#
# AOTAutograd's epilogue (runtime_wrappers.py) writes an input's data back
# as original.copy_(updated) in the caller's grad mode, or
# original.detach().copy_(updated) for a leaf that requires grad; a
# metadata mutation is as_strided_, and set_ runs under no_grad.  torch's
# own copy_ then decides whether the input requires grad afterwards.  The
# cases' inputs that require grad are non-leaves, on which eager's
# in-place ops run, so eager autograd observes the same, and both are
# required to agree.

def make_requiring(case, inputs):
    """Makes case.grad.requires require grad: a copy_ of its own elements
    from a leaf that requires grad, which leaves a non-leaf (and the base
    of a view requiring grad as well)."""
    with torch.enable_grad():
        for i in case.grad.requires:
            t = inputs[i]
            t.copy_(t.detach().clone().requires_grad_())
    return [is_tensor(t) and t.requires_grad for t in inputs]


def grad_eager(case, enabled):
    """f run eagerly with autograd in grad mode `enabled`: whether each
    input requires grad before and after, and each output after."""
    _, inputs = build(case)
    before = make_requiring(case, inputs)
    with torch.set_grad_enabled(enabled):
        result = flatten(case.fn(*inputs))
    return (before, [is_tensor(t) and t.requires_grad for t in inputs],
            [isinstance(o, torch.Tensor) and o.requires_grad for o in result])


def value_grads(d, grad_on):
    """Per graph value, whether it requires grad, as the functional result
    it stands for does with grad on: an updated input's, an output's.  An
    output that is an input is that input, which the driver does not
    flag."""
    _, inputs, outputs = grad_on
    flags = [any(inputs[i] for i in g) for g in d.groups]
    flags += [inputs[i] for i in d.updated]
    flags += [o and v.kind != "input"
              for o, v in zip(outputs, d.values[d.first_output:])]
    return flags


def replay_grads(case, d, before, values):
    """Whether each input requires grad after AOTAutograd's epilogue, in
    torch, from inputs and values flagged as the case says."""
    _, inputs = build(case)
    assert make_requiring(case, inputs) == before
    made = make_values(d.values, inputs)
    for k, v in enumerate(d.values):
        if values[k] and v.kind == "new":
            made[k].requires_grad_()
        assert v.kind in ("new", "input", "number") or \
            made[k].requires_grad == values[k], \
            f"value {k}, a view, cannot require grad as recorded"
    with torch.set_grad_enabled(case.grad.enabled):
        # Each synthetic base: a view of its members' whole storage, as
        # wrapbake makes it of members that are views of one tensor (it
        # requires them to be, in training), its value copied in.
        for b, g in enumerate(d.groups):
            t = inputs[g[0]]
            numel = t.storage().nbytes() // t.element_size()
            torch.as_strided(t, (numel,), (1,), 0).copy_(made[b])
        for i in d.updated:
            t, kind, v = inputs[i], d.kinds[i], made[d.update_value(i)]
            if kind == STORAGE:
                with torch.no_grad():
                    t.set_(v)
                continue
            if kind in (METADATA, DATA_METADATA):
                t.as_strided_(v.size(), v.stride(), v.storage_offset())
            if kind == RESIZE and t.size() != v.size():
                t.resize_(v.size())
            if kind != METADATA:
                dst = t.detach() if t.is_leaf and t.requires_grad else t
                dst.copy_(v)
    return [is_tensor(t) and t.requires_grad for t in inputs]


def grad_lines(case, d):
    """The records of a training case: the inputs and values that require
    grad before the call, its grad mode, and whether each input requires
    grad after it, as eager autograd and the epilogue replayed agree."""
    assert len(d.values) == d.first_output + len(d.outputs), \
        "a training case has no intermediate bases or members' new views"
    assert all(len({case.inputs[i].group for i in g}) == 1
               for g in d.groups), \
        "a training case's synthetic bases are views of one tensor"
    grad_on = grad_eager(case, True)
    before, after, _ = grad_eager(case, case.grad.enabled)
    values = value_grads(d, grad_on)
    replayed = replay_grads(case, d, before, values)
    assert replayed == after, \
        f"the epilogue leaves requires-grad {replayed}, eager {after}"
    lines = [f"requires_grad input {i}" for i, on in enumerate(before)
             if on and case.inputs[i].same is None]
    lines += [f"requires_grad value {k}" for k, on in enumerate(values) if on]
    lines += [] if case.grad.enabled else ["grad_mode off"]
    expects = [f"expect requires_grad {i} {int(on)}"
               for i, on in enumerate(after)
               if case.inputs[i].kind == "tensor"]
    return lines, expects


# ---------------------------------------------------------------------------
# One case, checked and written

def spec_name(index, case):
    slug = re.sub(r"[^A-Za-z0-9]+", "_", case.name.split("/", 1)[1])
    return f"c{index:03d}_{slug.strip('_')[:40]}"


def generate(index, case):
    """The lines of one case, and the ops it ran."""
    run = run_eager(case, traced=True)
    again = run_eager(case, traced=False)
    d = derive(run)
    dversion = version_deltas(case, run, d)
    lines, extra = observe(case, run.storages, run.inputs, run.outputs,
                           eager_labels(run, d), dversion, private(case, d),
                           merged_views(d))
    assert fingerprint(run) == fingerprint(again), \
        "two eager runs differ (uninitialized memory?)"
    why = refusal(case, d)
    assert bool(why) == case.refused, \
        f"marked refused={case.refused}, but wrapbake's checks give {why!r}"
    if not why:
        replayed = replay(case, d, dversion)
        assert replayed == (lines, extra), \
            "wrapbake's epilogue would not reproduce eager PyTorch: " + \
            first_difference(replayed, (lines, extra))
    spec = spec_text(spec_name(index, case), d, case.lists,
                     case.list_return, case.inputs, case.kwonly)
    check_case(case, spec, d, lines)
    grads, grad_expects = grad_lines(case, d) if case.grad else ([], [])
    spec += " with training" if case.grad else ""
    out = [f"case {case.name}", f"spec {spec}"]
    for s, st in enumerate(case.storages):
        out.append(f"storage {s} {WB_DTYPE[st.dtype]} {len(st.data)} "
                   f"{hexbytes(st.data)}")
    out += [x.text(i) for i, x in enumerate(case.inputs)]
    out += [f"value {k} {v.text()}" for k, v in enumerate(d.values)]
    out += [f"arg {a} {what}" for a, what in enumerate(graph_args(d))]
    out += grads
    out += [f"refuse {why}"] if why else lines + grad_expects
    out.append("end")
    return out, run.tracer.ops


def graph_args(d):
    """What the graph gets, in wrapbake's order (graph-contract.md): the
    synthetic bases (each named by its first member), the kept inputs
    outside them, numbers and None included, in input order, then the
    members, for their views."""
    members = d.members
    args = [f"base {g[0]}" for g in d.groups]
    args += [f"input {i}" for i, k in enumerate(d.kept)
             if k == i and i not in members]
    return args + [f"input {i}" for i in sorted(members)]


def first_difference(replayed, eager):
    (lines, extra), (want, want_extra) = replayed, eager
    for got, expected in zip(lines + [extra], want + [want_extra]):
        if got != expected:
            return f"it gives {got!r} where eager gives {expected!r}"
    return "the number of lines differs"


def check_case(case, spec, d, lines):
    """Invariants of the written case: the values fit the spec, and the
    driver can make each of them before the call."""
    assert len(d.values) == spec_value_count(spec), "values do not fit spec"
    # The spec's duplicates are the case's same inputs whose tensor the
    # call mutates, each naming the first input of its tensor object,
    # which is kept; the others are inputs of their own.
    roots = [i if x.same is None else x.same
             for i, x in enumerate(case.inputs)]
    assert spec_duplicates(spec) == {i: k for i, k in enumerate(d.kept)
                                     if k != i}, "duplicates do not fit"
    assert all(k in (i, roots[i]) for i, k in enumerate(d.kept)), \
        "the eager objects do not fit the case"
    new = {k for k, v in enumerate(d.values) if v.kind == "new"}
    for k, v in enumerate(d.values):
        if v.kind == "of":
            assert v.ref in new, f"value {k} views value {v.ref}, not new"
            room, dtype = len(d.values[v.ref].data), d.values[v.ref].dtype
        elif v.kind == "view":
            storage = case.storages[case.inputs[v.ref].storage]
            room, dtype = len(storage.data), storage.dtype
        else:
            continue
        assert v.view.nbytes(itemsize(dtype)) <= room, \
            f"value {k} does not fit the storage it views"
    for line in lines:
        for k in re.findall(r" v(\d+) ", line):
            assert int(k) in new, f"{line!r}: value {k} is not new"


# ===========================================================================
# The cases

LAYOUTS = ("contig", "t", "slice", "step", "offset")


def _setitem(x, index, value):
    x[index] = value
    return x


def returns_nothing(fn):
    """f that runs fn for its effects only: a call with no outputs."""
    return lambda *args: (fn(*args), None)[1]


# ---- 1. in-place ops --------------------------------------------------------

IDX = torch.tensor([0, 2])
SCATTER_IDX = torch.tensor([[2, 0, 1], [1, 2, 0]])
FLOAT_INPLACE = [
    ("add_", lambda x, y: x.add_(y), 1),
    ("add_alpha", lambda x, y: x.add_(y, alpha=2), 1),
    ("sub_", lambda x, y: x.sub_(y), 1),
    ("mul_", lambda x, y: x.mul_(y), 1),
    ("div_", lambda x, y: x.div_(y.abs() + 1), 1),
    ("copy_", lambda x, y: x.copy_(y), 1),
    ("addcmul_", lambda x, y, z: x.addcmul_(y, z, value=0.5), 2),
    ("addcdiv_", lambda x, y, z: x.addcdiv_(y, z.abs() + 1, value=2), 2),
    ("lerp_", lambda x, y: x.lerp_(y, 0.25), 1),
    ("clamp_", lambda x: x.clamp_(-0.5, 0.5), 0),
    ("clamp_min_", lambda x: x.clamp_min_(0), 0),
    ("fill_", lambda x: x.fill_(2.5), 0),
    ("zero_", lambda x: x.zero_(), 0),
    ("neg_", lambda x: x.neg_(), 0),
    ("abs_", lambda x: x.abs_(), 0),
    ("relu_", lambda x: torch.relu_(x), 0),
    ("exp_", lambda x: x.exp_(), 0),
    ("sigmoid_", lambda x: x.sigmoid_(), 0),
    ("floor_", lambda x: x.mul_(1.5).floor_(), 0),
    ("pow_", lambda x: x.pow_(2), 0),
    ("sign_", lambda x: x.sign_(), 0),
    ("index_fill_", lambda x: x.index_fill_(1, IDX, -1), 0),
    ("scatter_", lambda x, s: x.scatter_(1, SCATTER_IDX, s), 1),
    ("scatter_add_", lambda x, s: x.scatter_add_(1, SCATTER_IDX, s), 1),
    ("index_add_", lambda x, s: x.index_add_(0, torch.tensor([1, 0]), s), 1),
    ("tril_", lambda x: x.tril_(), 0),
    ("triu_", lambda x: x.triu_(1), 0),
    ("setitem_row", lambda x: _setitem(x, 0, 5.0), 0),
    ("setitem_col", lambda x: _setitem(x, (slice(None), 1), -2.0), 0),
    ("iadd_slice", lambda x, y: x[:, 1:].add_(y[:, 1:]), 1),
]


def inplace_result(fn, mode):
    """f returning the op's result, nothing, or a new tensor made from it."""
    if mode == "self":
        return fn
    if mode == "none":
        return returns_nothing(fn)
    return lambda x, *rest: (fn(x, *rest), x * 2)[1]


for n, (opname, fn, extra_args) in enumerate(FLOAT_INPLACE):
    how = LAYOUTS[n % len(LAYOUTS)]
    mode = ("self", "none", "new")[n % 3]
    add("inplace", f"{opname}/{how}/{mode}", inplace_result(fn, mode),
        T(2, 3, how=how), *[T(2, 3) for _ in range(extra_args)])

for how in LAYOUTS[1:]:
    add("inplace", f"add_/{how}/self", lambda x, y: x.add_(y),
        T(2, 3, how=how), T(2, 3))
add("inplace", "masked_fill_/t", lambda x, m: x.masked_fill_(m, 0.5),
    T(2, 3, how="t"), T(2, 3, dtype=BOOL))
add("inplace", "masked_fill_/int64", lambda x, m: x.masked_fill_(m, 7),
    T(3, 2, dtype=I64), T(3, 2, dtype=BOOL))
add("inplace", "add_/int64/slice", lambda x, y: x.add_(y),
    T(3, 2, dtype=I64, how="slice"), T(3, 2, dtype=I64))
add("inplace", "add_/int32/step", lambda x: x.add_(3),
    T(2, 3, dtype=I32, how="step"))
add("inplace", "bitwise_and_/int64", lambda x, y: x.bitwise_and_(y),
    T(4, dtype=I64), T(4, dtype=I64))
add("inplace", "ior/int32/t", lambda x, y: x.__ior__(y),
    T(2, 2, dtype=I32, how="t"), T(2, 2, dtype=I32))
add("inplace", "mul_/uint8", lambda x: x.mul_(3), T(2, 4, dtype=U8))
add("inplace", "logical_not_/bool", lambda x: x.logical_not_(),
    T(2, 3, dtype=BOOL))
add("inplace", "fill_/bool/offset", lambda x: x.fill_(True),
    T(5, dtype=BOOL, how="offset"))
add("inplace", "xor/bool", lambda x, y: x.bitwise_xor_(y),
    T(6, dtype=BOOL), T(6, dtype=BOOL))
add("inplace", "div_/float64/t", lambda x: x.div_(3),
    T(3, 2, dtype=F64, how="t"))
add("inplace", "exp_/float64/slice", lambda x: x.exp_(),
    T(2, 2, dtype=F64, how="slice"))
add("inplace", "copy_/from_int64", lambda x, y: x.copy_(y),
    T(2, 3), T(2, 3, dtype=I64))
add("inplace", "copy_/broadcast", lambda x, y: x.copy_(y), T(2, 3), T(3))
add("inplace", "zero_/0d", lambda x: x.zero_(), T())
add("inplace", "add_/empty", lambda x: x.add_(1), T(0))
add("inplace", "clamp_/int32", lambda x: x.clamp_(-2, 2), T(3, 3, dtype=I32))
add("inplace", "row_through_view", returns_nothing(lambda x: x[1].mul_(10)),
    T(3, 2, how="t"))


# ---- 2. out= ops ------------------------------------------------------------

# How the out tensor lies: (sizes or None for the result's own, layout);
# 'small' grows its storage, 'reshape' and 'big' re-view it.
OUT_MODES = {
    "right": (None, "contig"),
    "strided": (None, "t"),
    "small": ((2,), "contig"),
    "reshape": ("flip", "contig"),
    "big": ((9,), "contig"),
    "empty": ((0,), "contig"),
    "small_offset": ((2,), "offset"),
}


def out_part(shape, mode, dtype=F32):
    size, how = OUT_MODES[mode]
    if size is None:
        size = shape
    elif size == "flip":
        size = tuple(reversed(shape))
    return T(*size, dtype=dtype, how=how)


# (name, f(out, *inputs), input parts, result shape and dtype, out modes)
OUT_OPS = [
    ("add", lambda o, a, b: torch.add(a, b, out=o), (T(2, 3), T(2, 3)),
     (2, 3), F32, ("right", "small", "reshape")),
    ("mul", lambda o, a, b: torch.mul(a, b, out=o), (T(2, 3), T(3)),
     (2, 3), F32, ("strided", "big")),
    ("sub", lambda o, a, b: torch.sub(a, b, alpha=2, out=o),
     (T(2, 3), T(2, 3)), (2, 3), F32, ("empty", "small_offset")),
    ("cat", lambda o, a, b: torch.cat([a, b], out=o), (T(1, 3), T(2, 3)),
     (3, 3), F32, ("right", "small", "big")),
    ("cat_dim1", lambda o, a, b: torch.cat([a, b], 1, out=o),
     (T(2, 1), T(2, 2)), (2, 3), F32, ("reshape", "empty")),
    ("stack", lambda o, a, b: torch.stack([a, b], out=o), (T(3), T(3)),
     (2, 3), F32, ("right", "small")),
    ("mm", lambda o, a, b: torch.mm(a, b, out=o), (T(2, 4), T(4, 3)),
     (2, 3), F32, ("right", "strided", "small", "reshape")),
    ("bmm", lambda o, a, b: torch.bmm(a, b, out=o), (T(1, 2, 2), T(1, 2, 3)),
     (1, 2, 3), F32, ("right", "empty")),
    ("addmm", lambda o, c, a, b: torch.addmm(c, a, b, out=o),
     (T(3), T(2, 2), T(2, 3)), (2, 3), F32, ("big",)),
    ("neg", lambda o, a: torch.neg(a, out=o), (T(2, 3, how="t"),),
     (2, 3), F32, ("right", "strided")),
    ("neg_contig", lambda o, a: torch.neg(a, out=o), (T(2, 3),),
     (2, 3), F32, ("small",)),
    ("abs", lambda o, a: torch.abs(a, out=o), (T(4),), (4,), F32,
     ("strided", "big")),
    ("clamp", lambda o, a: torch.clamp(a, -1, 1, out=o), (T(2, 3),),
     (2, 3), F32, ("small_offset",)),
    ("where", lambda o, c, a, b: torch.where(c, a, b, out=o),
     (T(2, 3, dtype=BOOL), T(2, 3), T(2, 3)), (2, 3), F32,
     ("right", "reshape")),
    ("sum_dim", lambda o, a: torch.sum(a, 1, out=o), (T(3, 2),), (3,), F32,
     ("right", "small")),
    ("cumsum", lambda o, a: torch.cumsum(a, 0, out=o), (T(2, 3),), (2, 3),
     F32, ("strided", "empty")),
    ("index_select", lambda o, a: torch.index_select(a, 0, IDX, out=o),
     (T(3, 3),), (2, 3), F32, ("right", "small")),
    ("exp", lambda o, a: torch.exp(a, out=o), (T(2, 2, dtype=F64),), (2, 2),
     F64, ("right", "big")),
    ("arange", lambda o: torch.arange(6, out=o), (), (6,), I64,
     ("right", "small", "big")),
]

for opname, fn, parts, shape, dtype, modes in OUT_OPS:
    for mode in modes:
        add("out", f"{opname}/{mode}", fn, out_part(shape, mode, dtype),
            *parts)

add("out", "add/int64/small", lambda o, a: torch.add(a, 5, out=o),
    T(1, dtype=I64), T(2, 2, dtype=I64))
add("out", "add/returns_none",
    returns_nothing(lambda o, a: torch.add(a, a, out=o)), T(2, 3), T(2, 3))
add("out", "max_dim/two_outs",
    lambda v, i, a: torch.max(a, 1, out=(v, i)),
    T(2), T(1, dtype=I64), T(2, 3))
add("out", "sort/two_outs", lambda v, i, a: torch.sort(a, out=(v, i)),
    T(2, 3, how="t"), T(0, dtype=I64), T(2, 3))
add("out", "topk/small", lambda v, i, a: torch.topk(a, 2, out=(v, i)),
    T(1), T(1, dtype=I64), T(5))
add("out", "into_row_view", lambda o, a: torch.mul(a, 3, out=o[1]),
    T(2, 3), T(3))


# ---- 3. every inplace_view op -----------------------------------------------

def _rename_and_back(x):
    x.rename_("rows", "cols")
    x.rename_(None)
    return x.mul_(2)


INPLACE_VIEW = [
    ("transpose_/contig", lambda x: x.transpose_(0, 1), T(2, 3), ()),
    ("transpose_/3d", lambda x: x.transpose_(0, 2).sum(), T(2, 3, 2), ()),
    ("transpose_/noop", lambda x: x.transpose_(1, 1), T(2, 3), ()),
    ("transpose_/slice/none", returns_nothing(lambda x: x.transpose_(0, 1)),
     T(3, 2, how="slice"), ()),
    ("transpose_/row_out", lambda x: x.transpose_(0, 1)[0], T(2, 3), ()),
    ("t_/contig", lambda x: x.t_(), T(2, 3), ()),
    ("t_/1d", lambda x: x.t_(), T(4), ()),
    ("t_/step", lambda x: x.t_(), T(2, 2, how="step"), ()),
    ("t_/new_out", lambda x: x.t_() + 1, T(3, 2, how="t"), ()),
    ("squeeze_/all", lambda x: x.squeeze_(), T(2, 1, 3), ()),
    ("squeeze_/ones", lambda x: x.squeeze_(), T(1, 3, 1, how="offset"), ()),
    ("squeeze_/none_to_drop", lambda x: x.squeeze_(), T(2, 3), ()),
    ("squeeze_/dim", lambda x: x.squeeze_(1), T(2, 1, 3), ()),
    ("squeeze_/dim_negative", lambda x: x.squeeze_(-2), T(3, 1, 2, how="t"),
     ()),
    ("squeeze_/dim_kept", lambda x: x.squeeze_(0), T(2, 1), ()),
    ("unsqueeze_/0", lambda x: x.unsqueeze_(0), T(2, 3), ()),
    ("unsqueeze_/last/t", lambda x: x.unsqueeze_(-1), T(2, 3, how="t"), ()),
    ("unsqueeze_/1/slice", lambda x: x.unsqueeze_(1)[0], T(2, 2, how="slice"),
     ()),
    ("unsqueeze_/0d", lambda x: x.unsqueeze_(0), T(), ()),
    ("as_strided_/window", lambda x: x.as_strided_((2, 2), (1, 2), 1), T(6),
     ()),
    ("as_strided_/offset", lambda x: x.as_strided_((3,), (2,), 0),
     T(2, 2, how="offset"), ()),
    ("as_strided_/empty_past_the_end",
     lambda x: x.as_strided_((0, 0), (3, 1), 9), T(2, 3), ()),
    ("as_strided_/same", lambda x: x.as_strided_(x.size(), x.stride(),
                                                 x.storage_offset()),
     T(2, 3, how="t"), ()),
    ("swapdims_", lambda x: x.swapdims_(0, 1), T(2, 3),
     ("swapdims_.default",)),
    ("swapaxes_/3d", lambda x: x.swapaxes_(0, 2), T(2, 3, 1),
     ("swapaxes_.default",)),
    ("detach_", lambda x: x.detach_(), T(2, 3), ("detach_.default",)),
    ("detach_/then_add_", lambda x: x.detach_().add_(1), T(3), ()),
    ("rename_", _rename_and_back, T(2, 2), ("rename_.default",)),
    ("resize_/shrink", lambda x: x.resize_(4), T(2, 3), ()),
]

for name, fn, part, covers in INPLACE_VIEW:
    add("inplace_view", name, fn, part, covers=covers)


# ---- 4. set_ and resize_ ----------------------------------------------------

def _set_fresh_then_add(x):
    x.set_(torch.arange(4.0))
    x.add_(1)
    return x


def _grow_and_fill(x):
    old = x.numel()
    x.resize_(8)
    x[old:].fill_(-1)
    return x


def _grow_by_copy(x):
    x.resize_(2, 4)
    return x.copy_(torch.arange(8.0).view(2, 4))


def _shrink_and_write(x):
    x.resize_(2, 2)
    x.mul_(3)
    return x


def _grow_tail_out(x):
    x.resize_(3, 3)
    x[2].fill_(7)
    return x[1:]


def _set_then_write_source(x, y):
    x.set_(y)
    y.add_(1)
    return x


def _grow_from_empty(x):
    x.resize_(3)
    x.fill_(4)


SET_RESIZE = [
    ("set_/input", lambda x, y: x.set_(y), (T(2, 3), T(3, 2))),
    ("set_/input/no_out", returns_nothing(lambda x, y: x.set_(y)),
     (T(4), T(2, 2, how="t"))),
    ("set_/input_view_out", lambda x, y: (x.set_(y), y.view(-1))[1],
     (T(2), T(2, 2))),
    ("set_/storage", lambda x, y: x.set_(y.storage()), (T(3), T(2, 3))),
    ("set_/storage_offset",
     lambda x, y: x.set_(y.storage(), 1, (2,), (1,)), (T(3), T(2, 3))),
    ("set_/storage_strided",
     lambda x, y: x.set_(y.storage(), 2, (2, 2), (1, 2)), (T(2, 2), T(8))),
    ("set_/own_storage", lambda x: x.set_(x.storage(), 1, (3,), (2,)),
     (T(7),)),
    ("set_/fresh", lambda x: x.set_(torch.arange(4.0)), (T(2, 3),)),
    ("set_/fresh_strided", lambda x: x.set_(torch.ones(2, 3).t()), (T(2),)),
    ("set_/fresh_then_add_", _set_fresh_then_add, (T(2),)),
    ("set_/empty", lambda x: x.set_(), (T(2, 2),)),
    ("set_/then_view_out", lambda x, y: x.set_(y).view(-1), (T(3), T(2, 2))),
    ("set_/fresh_row_out",
     lambda x: x.set_(torch.arange(6.0).view(2, 3))[1], (T(2),)),
    ("set_/then_write_source", _set_then_write_source, (T(2), T(3))),
    ("set_/int64", lambda x, y: x.set_(y), (T(3, dtype=I64), T(2, dtype=I64))),
    ("set_/bool_storage", lambda x, y: x.set_(y.storage(), 0, (2,), (2,)),
     (T(1, dtype=BOOL), T(4, dtype=BOOL))),
    ("resize_/same", lambda x: x.resize_(2, 3), (T(2, 3),)),
    ("resize_/same_then_add_", lambda x: x.resize_(2, 3).add_(1),
     (T(2, 3, how="t"),)),
    ("resize_/shrink_offset", lambda x: x.resize_(2),
     (T(2, 2, how="offset"),)),
    ("resize_/restride", lambda x: x.resize_(3, 2), (T(2, 3, how="t"),)),
    ("resize_/shrink_and_write", _shrink_and_write, (T(3, 3),)),
    ("resize_/to_empty", lambda x: x.resize_(0), (T(4),)),
    ("resize_/grow", _grow_and_fill, (T(6),)),
    ("resize_/grow_offset", _grow_and_fill, (T(4, how="offset"),)),
    ("resize_/grow_2d", _grow_by_copy, (T(3),)),
    ("resize_/grow_alias_out", _grow_tail_out, (T(2, 3),)),
    ("resize_/grow_int64", _grow_and_fill, (T(2, 3, dtype=I64),)),
    ("resize_/grow_from_empty", _grow_from_empty, (T(0),)),
    ("resize_as_/shrink", lambda x, y: x.resize_as_(y), (T(6), T(2, 2))),
    ("resize_as_/grow", lambda x, y: x.resize_as_(y).fill_(1),
     (T(2), T(2, 3))),
]

for name, fn, parts in SET_RESIZE:
    add("set_resize", name, fn, *parts)


# ---- 5. views of inputs -----------------------------------------------------

VIEWS = [
    ("view", lambda x: x.view(-1), "contig"),
    ("view_3_2", lambda x: x.view(3, 2), "offset"),
    ("reshape", lambda x: x.reshape(6), "slice"),
    ("t", lambda x: x.t(), "contig"),
    ("T", lambda x: x.T, "t"),
    ("mT", lambda x: x.mT, "step"),
    ("transpose", lambda x: x.transpose(0, 1), "slice"),
    ("narrow", lambda x: x.narrow(1, 1, 2), "contig"),
    ("select", lambda x: x.select(0, 1), "t"),
    ("index_int", lambda x: x[1], "step"),
    ("slice", lambda x: x[1:], "contig"),
    ("slice_step", lambda x: x[:, ::2], "offset"),
    ("expand", lambda x: x[0].expand(3, 3), "contig"),
    ("diagonal", lambda x: x.diagonal(), "contig"),
    ("diagonal_offset", lambda x: x.diagonal(1), "t"),
    ("unfold", lambda x: x.unfold(1, 2, 1), "contig"),
    ("as_strided", lambda x: torch.as_strided(x, (2, 2), (1, 1), 1), "offset"),
    ("permute", lambda x: x.permute(1, 0), "slice"),
    ("unsqueeze", lambda x: x.unsqueeze(1), "contig"),
    ("squeeze", lambda x: x[:1].squeeze(), "t"),
    ("flatten", lambda x: x.flatten(), "contig"),
    ("unflatten", lambda x: x.unflatten(1, (3, 1)), "contig"),
    ("detach", lambda x: x.detach(), "step"),
    ("alias", lambda x: torch.ops.aten.alias(x), "contig"),
    ("view_as", lambda x: x.view_as(torch.empty(3, 2)), "contig"),
    ("movedim", lambda x: x.movedim(0, 1), "t"),
    ("none_index", lambda x: x[None, :, 1], "slice"),
    ("chain", lambda x: x.t()[1:].unsqueeze(0), "contig"),
]

for name, fn, how in VIEWS:
    add("views", f"{name}/{how}", fn, T(2, 3, how=how))

add("views", "split/3d", lambda x: x.split(1, 2), T(2, 2, 2))
add("views", "chunk", lambda x: x.chunk(2), T(4, 2, how="t"))
add("views", "unbind", lambda x: x.unbind(1), T(2, 3, how="offset"))
add("views", "view_of_second", lambda x, y: y.view(-1), T(2), T(2, 2))
# An empty slice that starts past the end of its storage: no byte of it is
# read, and PyTorch's bounds check skips it.
add("views", "empty_past_the_end", lambda x: x[2:, 3:], T(2, 3))
add("views", "view_and_mutate", lambda x: x.view(-1).add_(1), T(2, 3))
add("views", "view_then_mutate_input", lambda x: (x.t(), x.mul_(2))[0],
    T(2, 3))
add("views", "reshape_copies", lambda x: x.reshape(6), T(2, 3, how="t"))
add("views", "contiguous_copies", lambda x: x.contiguous(), T(2, 3, how="t"))
add("views", "int64_select", lambda x: x[:, 0], T(3, 2, dtype=I64))
add("views", "bool_t", lambda x: x.t(), T(2, 3, dtype=BOOL))


# ---- 6. ops that return the input itself ------------------------------------

RETURNS_SELF = [
    ("contiguous", lambda x: x.contiguous(), T(2, 3)),
    ("to_dtype", lambda x: x.to(x.dtype), T(2, 3, how="t")),
    ("to_self", lambda x: x.to(x), T(4)),
    ("to_cpu", lambda x: x.to("cpu"), T(2, 2, how="slice")),
    ("cpu", lambda x: x.cpu(), T(3)),
    ("type_as", lambda x: x.type_as(x), T(2, 3)),
    ("type_str", lambda x: x.type(x.type()), T(2)),
    ("float", lambda x: x.float(), T(2, 2, how="step")),
    ("double", lambda x: x.double(), T(3, dtype=F64)),
    ("long", lambda x: x.long(), T(2, 2, dtype=I64)),
    ("int", lambda x: x.int(), T(3, dtype=I32)),
    ("bool", lambda x: x.bool(), T(4, dtype=BOOL)),
    ("byte", lambda x: x.byte(), T(2, 2, dtype=U8)),
    ("requires_grad_", lambda x: x.requires_grad_(False), T(3)),
    ("real", lambda x: x.real, T(2, 3, how="offset")),
    ("resolve_conj", lambda x: x.resolve_conj(), T(3)),
    ("contiguous_format",
     lambda x: x.to(memory_format=torch.contiguous_format), T(2, 2)),
    ("add_", lambda x: x.add_(1), T(2, 3, how="t")),
    ("clamp_", lambda x: x.clamp_(0), T(4, how="step")),
    ("t_", lambda x: x.t_(), T(2, 3, how="slice")),
    ("with_other_out", lambda x, y: (x.contiguous(), y + 1), T(2), T(2)),
    ("twice", lambda x: (x.contiguous(), x.to(x.dtype)), T(3)),
]

for name, fn, *parts in RETURNS_SELF:
    add("returns_self", name, fn, *parts)


# ---- 7. multi-output ops ----------------------------------------------------

def _base_first(x):
    y = x * 2
    return y, y[0], y.view(-1)


def _base_last(x):
    y = x + 1
    return y[1], y


def _intermediate_views(x):
    y = x.exp()
    return y.t(), y[0]


MULTI = [
    ("split", lambda x: torch.split(x, 2), T(5)),
    ("split_sizes", lambda x: x.split([1, 2], 1), T(2, 3, how="t")),
    ("chunk", lambda x: x.chunk(3), T(3, 2)),
    ("unbind", lambda x: x.unbind(), T(2, 2, how="slice")),
    ("tensor_split", lambda x: torch.tensor_split(x, 2, 1), T(2, 4)),
    ("max_dim", lambda x: torch.max(x, 1), T(2, 3)),
    ("min_dim_int64", lambda x: torch.min(x, 0), T(3, 2, dtype=I64)),
    ("sort", lambda x: torch.sort(x), T(2, 3, how="t")),
    ("topk", lambda x: torch.topk(x, 2), T(5)),
    ("aminmax", lambda x: torch.aminmax(x, dim=0), T(3, 2)),
    ("kthvalue", lambda x: torch.kthvalue(x, 2), T(2, 3)),
    ("median_dim", lambda x: torch.median(x, 1), T(2, 3, how="step")),
    ("var_mean", lambda x: torch.var_mean(x, 1), T(2, 4, dtype=F64)),
    ("cummax", lambda x: torch.cummax(x, 0), T(4)),
    ("frexp", lambda x: torch.frexp(x), T(3)),
    ("unique_counts", lambda x: torch.unique(x, return_counts=True),
     T(6, dtype=I64)),
    ("broadcast_tensors", lambda x, y: torch.broadcast_tensors(x, y),
     T(2, 1), T(3)),
    ("meshgrid", lambda x, y: torch.meshgrid(x, y, indexing="ij"), T(2), T(3)),
    ("split_of_intermediate", lambda x: torch.split(x + 1, 1), T(3)),
    ("unbind_of_intermediate", lambda x: (x * 3).unbind(1), T(2, 2, how="t")),
    ("intermediate_views", _intermediate_views, T(2, 3)),
    ("base_first", _base_first, T(2, 3)),
    ("base_last", _base_last, T(2, 2)),
    ("view_of_intermediate", lambda x: (x + 1)[1:], T(4)),
    ("mixed", lambda x: (x, x.t(), x * 2, torch.max(x, 0).indices), T(2, 2)),
]

for name, fn, *parts in MULTI:
    add("multi_output", name, fn, *parts)


# ---- 8. several mutations in one call ---------------------------------------

@case("composite", "mul_and_t_", T(2, 2), T(2, 2))
def _(x, y):
    x.mul_(2)
    y.t_()
    return x + y


@case("composite", "t_then_mul_", T(2, 3))
def _(x):
    return x.t_().mul_(2)


@case("composite", "unsqueeze_then_add_", T(3, how="offset"))
def _(x):
    return x.unsqueeze_(0).add_(1)


@case("composite", "add_then_transpose_", T(2, 3, how="t"))
def _(x):
    x.add_(1)
    x.transpose_(0, 1)


@case("composite", "squeeze_then_mul_", T(2, 1, 2), T(2, 2))
def _(x, y):
    return x.squeeze_().mul_(y)


@case("composite", "row_zero_then_t_", T(2, 2))
def _(x):
    x[0].zero_()
    return x.t_()


@case("composite", "three_kinds", T(2), T(2, 2), T(3))
def _(x, y, z):
    x.add_(1)
    y.t_()
    z.set_(torch.zeros(2))
    return x, y[0], z


@case("composite", "data_and_resize", T(2, 2), T(2))
def _(x, y):
    x.mul_(-1)
    torch.cat([x.view(-1), x[0]], out=y)
    return y


@case("composite", "data_and_out_reshape", T(2, 3), T(3, 2))
def _(x, o):
    x.add_(1)
    return torch.mul(x, 2, out=o)


@case("composite", "as_strided_then_fill_", T(6))
def _(x):
    x.as_strided_((2, 2), (2, 1), 2)
    x.fill_(9)
    return x * 1


@case("composite", "outputs_of_every_kind", T(2, 2), T(3))
def _(x, y):
    x.add_(1)
    z = y * 2
    return x, x.t(), y, z, z[1:], y.sum()


@case("composite", "foreach_add_", T(2), T(3, how="t"))
def _(x, y):
    torch._foreach_add_([x, y], 1)


@case("composite", "mutate_and_alias", T(4), T(2, 2))
def _(x, y):
    y.view(-1).copy_(x)
    return y.diagonal(), x


# ---- 9. inputs on one storage -----------------------------------------------

ROWS = ((3, 4), (4, 1), 0, 0)
LAST_ROWS = ((2, 4), (4, 1), 4, 0)
LAST_ROWS_OWN = ((2, 4), (4, 1), 4, 1)
EVEN = ((4,), (2,), 0, 0)
ODD_OWN = ((4,), (2,), 1, 1)


def _add_to_second(x, y):
    y.add_(1)
    return x.sum()


def _mul_first_read_second(x, y):
    x.mul_(2)
    return y.clone()


def _both(x, y):
    x.add_(1)
    y.mul_(3)


def _t_first_read_second(x, y):
    x.t_()
    return y + 1


def _t_mul_first(x, y):
    x.t_().mul_(2)
    return y.sum()


def _t_first_add_second(x, y):
    x.t_()
    y.add_(1)
    return x


def _t_first_add_second_split(x, y):
    x.t_()
    y.add_(1)
    z = (y * 2).view(-1)
    return z[:2], z[2:]


SHARED = [
    ("view_mutated", _add_to_second, Shared(12, ROWS, LAST_ROWS)),
    ("independent_mutated", _add_to_second, Shared(12, ROWS, LAST_ROWS_OWN)),
    ("base_mutated", _mul_first_read_second, Shared(12, ROWS, LAST_ROWS)),
    ("base_mutated_independent", _mul_first_read_second,
     Shared(12, ROWS, LAST_ROWS_OWN)),
    ("interleaved_both", _both, Shared(8, EVEN, ODD_OWN)),
    ("overlapping_both", _both, Shared(12, ROWS, LAST_ROWS)),
    ("overlapping_both_independent", _both, Shared(12, ROWS, LAST_ROWS_OWN)),
    ("metadata_in_group", _t_first_read_second, Shared(12, ROWS, LAST_ROWS)),
    ("data_metadata_in_group", _t_mul_first, Shared(16, ((4, 4), (4, 1), 0, 0),
                                                    ((2, 4), (4, 1), 8, 0))),
    ("metadata_and_data", _t_first_add_second,
     Shared(12, ROWS, LAST_ROWS_OWN)),
    ("alias_out_of_second", lambda x, y: y.add_(1)[0],
     Shared(12, ROWS, LAST_ROWS)),
    ("unmutated_returned", lambda x, y: (x.add_(1), y)[1],
     Shared(12, ROWS, LAST_ROWS_OWN)),
    ("two_storages", returns_nothing(lambda x, y, z: (x.add_(z), y.neg_())),
     Shared(8, EVEN, ODD_OWN), T(4)),
    ("bool_halves", lambda x, y: x.logical_not_(),
     Shared(6, ((3,), (1,), 0, 0), ((3,), (1,), 3, 1), dtype=BOOL)),
]

for name, fn, *parts in SHARED:
    add("shared_storage", name, fn, *parts)

# AOTAutograd's synthetic bases: inputs on one storage that overlap, one of
# them written, are merged into one base the graph gets first (derive()
# finds them as merge_view_inputs does); these add what the cases above
# do not have.
MID_ROWS = ((2, 2), (4, 1), 5, 0)

SYNTHETIC = [
    ("three_members", lambda x, y, z: (x.add_(1), z.mul_(2))[1],
     Shared(12, ROWS, LAST_ROWS, MID_ROWS)),
    ("alias_of_a_member_apart", lambda x, y: y.add_(1)[0],
     Shared(12, ROWS, LAST_ROWS_OWN)),
    ("beside_other_inputs",
     lambda a, x, y, b: (x.mul_(a.sum()), y.add_(b))[1],
     T(1), Shared(12, ROWS, LAST_ROWS_OWN), T(2, 4)),
    ("two_bases", returns_nothing(lambda x, y, u, v: (x.add_(1), v.mul_(2))),
     Shared(12, ROWS, LAST_ROWS), Shared(12, ROWS, LAST_ROWS_OWN)),
    ("new_view_and_data_apart", _t_first_add_second,
     Shared(12, ROWS, ((2, 4), (4, 1), 4, 1))),
    # The member's new view comes before the intermediate base.
    ("new_view_then_intermediate_base", _t_first_add_second_split,
     Shared(12, ROWS, LAST_ROWS_OWN)),
]

for name, fn, *parts in SYNTHETIC:
    add("shared_storage", f"synthetic/{name}", fn, *parts)


# ---- 10. one tensor passed for several inputs ------------------------------
#
# AOTAutograd's AOTDedupeWrapper: a later argument that is an earlier one's
# very object is a duplicate of its first occurrence; the graph gets the
# first occurrences alone, and every write through either name is the kept
# input's mutation.

def _t_and_add(x, y):
    x.t_()
    return y + 1


def _add_then_t_other(a, b):
    a.add_(1)
    b.t_()


def _data_through_both(a, b):
    a.add_(1)
    b.mul_(2)


def _three_times(a, b, c):
    a.add_(b)
    return c.mul_(a)


def _three_times_reshaped(a, b, c):
    a.unsqueeze_(0)
    b.add_(c)


def _mutated_then_aliased(a, b):
    a.mul_(2)
    return b.t(), b[0], a


def _t_then_aliased(a, b):
    a.t_()
    return b[0], b


def _mixed(x, y, x2, z):
    x.add_(z)
    y.t_()
    x2.mul_(y)
    return y, x2.diagonal(), z + x


def _kept_second(y, x, x2):
    x.mul_(y)
    x2.unsqueeze_(0)
    return x2


def _two_pairs(x, y, x2, y2):
    x.add_(1)
    y2.t_()
    return x2 + y.sum(), y


def _set_to_other(x, y, x2):
    x.set_(y)
    return x2


def _in_group(x, v, x2):
    x2.mul_(2)
    v.add_(1)
    return x


def _neg_then_squeeze(a, b):
    a.neg_()
    b.squeeze_()


DEDUP = [
    ("metadata", _t_and_add, (T(2, 3), Same(0))),
    ("data_metadata", lambda x, y: x.t_().mul_(2), (T(2, 3), Same(0))),
    ("data_then_metadata_of_other", _add_then_t_other,
     (T(2, 3, how="slice"), Same(0))),
    ("storage", lambda x, y: x.set_(torch.zeros(3)), (T(2), Same(0))),
    ("resize", lambda x, y: x.resize_(4).fill_(0), (T(2), Same(0))),
    ("data_through_both", _data_through_both, (T(2, 3, how="t"), Same(0))),
    ("add_self", lambda x, y: x.add_(y), (T(2, 3), Same(0))),
    ("read_twice", lambda x, y: (x * y, y), (T(3), Same(0))),
    ("three_times", _three_times, (T(3, how="offset"), Same(0), Same(0))),
    ("three_times_reshaped", _three_times_reshaped,
     (T(2, 2, how="step"), Same(0), Same(0))),
    ("mutated_then_aliased", _mutated_then_aliased, (T(2, 3), Same(0))),
    ("t_then_aliased", _t_then_aliased, (T(2, 3, how="offset"), Same(0))),
    ("views_of_both", lambda x, y: (x.t(), y.view(-1), y), (T(2, 3), Same(0))),
    ("mixed", _mixed, (T(2, 2), T(2, 2, how="t"), Same(0), T(2, 2))),
    ("kept_second", _kept_second, (T(3), T(3, how="step"), Same(1))),
    ("two_pairs", _two_pairs, (T(2, 2), T(2, 3), Same(0), Same(1))),
    ("out_same", lambda x, y, o: torch.mul(x, y, out=o),
     (T(2, 3), T(2, 3), Same(0))),
    ("out_grows", lambda o, a, o2: torch.cat([a, a], out=o2),
     (T(2), T(3), Same(0))),
    ("set_to_other", _set_to_other, (T(2), T(2, 2), Same(0))),
    ("in_counter_group", _in_group, (Shared(12, ROWS, LAST_ROWS), Same(0))),
    ("int64", _neg_then_squeeze, (T(1, 3, dtype=I64), Same(0))),
    ("bool", lambda x, y: (x.logical_not_(), y.logical_and(x))[1],
     (T(4, dtype=BOOL), Same(0))),
]

for name, fn, parts in DEDUP:
    add("dedup", name, fn, *parts)


# ---- 11. lists of known length ----------------------------------------------
# A list argument is a list parameter of the spec (Tensor[n], Tensor?[n]),
# an input per element; a list result one list return, an output per
# element.

LIST_RETURNS = [
    ("split", lambda x: torch.split(x, 2), T(5)),
    ("chunk", lambda x: x.chunk(3), T(3, 2, how="t")),
    ("unbind", lambda x: x.unbind(1), T(2, 3, how="offset")),
    ("split_with_sizes", lambda x: x.split([1, 2], 1), T(2, 3, how="step")),
    ("split_of_intermediate", lambda x: (x * 2).split(1), T(3)),
    ("unbind_of_mutated", lambda x: x.mul_(2).unbind(0), T(2, 2, how="t")),
    ("foreach_add", lambda x, y: torch._foreach_add([x, y], 1), T(2),
     T(3, how="slice")),
]

for name, fn, *parts in LIST_RETURNS:
    add("lists", f"returns/{name}", fn, *parts, list_return=True)

LIST_PARAMS = [
    ("index_put_", lambda x, i, j, v: x.index_put_((i, j), v, accumulate=True),
     (T(10, 10), T(3, dtype=I64), T(3, dtype=I64), T(3)), ((1, 2, True),),
     False),
    ("index_put_/then_split",
     lambda x, i, v: x.index_put_((i,), v, accumulate=True).split(5),
     (T(10, 2, how="t"), T(2, dtype=I64), T(2, 2)), ((1, 1, True),), True),
    ("index", lambda x, i, j: x[i, j], (T(10, 10), T(4, dtype=I64),
                                        T(4, dtype=I64)), ((1, 2, True),),
     False),
    ("cat", lambda a, b, c: torch.cat([a, b, c]),
     (T(2), T(3, how="offset"), T(1)), ((0, 3, False),), False),
    ("stack", lambda a, b: torch.stack([a, b], 1),
     (T(2, 2, how="t"), T(2, 2)), ((0, 2, False),), False),
    ("foreach_add_", returns_nothing(lambda x, y: torch._foreach_add_([x, y],
                                                                     1)),
     (T(2), T(3, how="offset")), ((0, 2, False),), False),
    ("foreach_mul_/two_lists",
     returns_nothing(lambda a, b, c, d: torch._foreach_mul_([a, b], [c, d])),
     (T(2), T(2, 2, how="t"), T(2), T(2, 2)), ((0, 2, False), (2, 2, False)),
     False),
    ("foreach_add/of_a_list",
     lambda a, b, x: torch._foreach_add([a, b], [x, x]),
     (T(3), T(3, how="step"), T(3)), ((0, 2, False),), True),
]

for name, fn, parts, lists, list_return in LIST_PARAMS:
    add("lists", f"params/{name}", fn, *parts, lists=lists,
        list_return=list_return)


# ---- 12. numbers among the results ------------------------------------------
# Sizes (SymInts), floats, bools and None that f returns beside tensors: the
# spec's int, float, bool and NoneType returns, passed through.

NUMBERS = [
    ("numel_after_mul_", lambda x: (x.mul_(2), x.numel()), (T(3),)),
    ("sizes", lambda x: (x.t(), x.size(0), x.size(1)), (T(2, 3),)),
    ("stride_and_contiguous", lambda x: (x + 1, x.stride(1),
                                         x.is_contiguous()),
     (T(2, 3, how="t"),)),
    ("item", lambda x: (x.add_(1), x.sum().item()), (T(4),)),
    ("int_item", lambda x: x.max().item(), (T(5, dtype=I64),)),
    ("equal", lambda x, y: torch.equal(x, y), (T(3), T(3))),
    ("none_beside", lambda x: (x.mul_(3), None, x.dim()), (T(2, 2),)),
    ("numbers_first", lambda x: (x.numel(), x.view(-1)), (T(2, 2),)),
]

for name, fn, parts in NUMBERS:
    add("numbers", name, fn, *parts)
add("numbers", "shape_as_list", lambda x: list(x.t().shape), T(2, 3),
    list_return=True)


# ---- 13. numbers and None as arguments --------------------------------------
# Number parameters (int, SymInt, float, bool, Scalar, a list of ints) and
# None for a Tensor? or an element of a Tensor?[n], passed through to the
# graph in their place among its arguments (`arg` records): after the
# synthetic bases, between kept inputs, where a duplicate or a member
# leaves a gap in the caller's order.

def _dup_number_member(x, n, x2, u, v, s):
    x.add_(n)
    x2.mul_(2)
    u.add_(s)
    return v[0], n * 2


def _dup_none_member(x, lo, x2, hi, u, v):
    x2.clamp_(lo, hi)
    u.add_(1)
    return v[1]


ARGUMENTS = [
    ("add_/Scalar_alpha", lambda x, y, a: x.add_(y, alpha=a),
     (T(2, 3), T(2, 3), Num(2, "Scalar", "1")), {"kwonly": 2}),
    ("add_/float_alpha/t", lambda x, y, a: x.add_(y, alpha=a),
     (T(2, 3, how="t"), T(2, 3), Num(-0.5, "float")), {"kwonly": 2}),
    ("narrow/ints", lambda x, d, s, n: x.narrow(d, s, n),
     (T(3, 4, how="slice"), Num(1, "int"), Num(1, "SymInt"),
      Num(2, "SymInt")), {}),
    ("narrow/then_mul_", lambda x, s, n: x.narrow(0, s, n).mul_(3),
     (T(4, 2, how="t"), Num(2, "SymInt"), Num(2, "SymInt")), {}),
    ("select/negative", lambda x, d, i: x.select(d, i),
     (T(2, 3), Num(1, "int"), Num(-1, "SymInt")), {}),
    ("lerp_/float", lambda x, y, w: x.lerp_(y, w),
     (T(2, 2, how="step"), T(2, 2), Num(0.25, "float")), {}),
    ("clamp_/two_floats", lambda x, lo, hi: x.clamp_(lo, hi),
     (T(6, how="offset"), Num(-0.5, "float"), Num(0.75, "float")), {}),
    ("mul_/third", lambda x, w: x.mul_(w), (T(3), Num(1 / 3, "float")), {}),
    ("sum/bool_keepdim", lambda x, keep: x.sum(1, keepdim=keep),
     (T(2, 3), Num(True, "bool")), {}),
    ("index_put_/bool_accumulate",
     lambda x, i, v, acc: torch.ops.aten.index_put_(x, [i], v, acc),
     (T(10, 2), T(3, dtype=I64), T(3, 2), Num(True, "bool")),
     {"lists": ((1, 1, True),)}),
    ("view/int_list", lambda x, shape: x.view(shape),
     (T(2, 3), Num([3, 2], "SymInt[2]")), {}),
    ("number_first", lambda n, x: x.mul_(n), (Num(3, "int"), T(2, 2)), {}),
    ("numbers_returned", lambda x, n: (x.mul_(n), n, x.size(0) * n),
     (T(2, 3, how="offset"), Num(3, "SymInt")), {}),
    ("foreach_add_/Scalar", returns_nothing(
        lambda a, b, s: torch._foreach_add_([a, b], s)),
     (T(2), T(3, how="step"), Num(1.5, "Scalar")),
     {"lists": ((0, 2, False),)}),
    ("int64/int", lambda x, n: x.add_(n), (T(3, dtype=I64), Num(-7, "int")),
     {}),
    ("after_synthetic_base", lambda s, x, y: (x.mul_(s), y[0])[1],
     (Num(2.0, "float"), Shared(12, ROWS, LAST_ROWS)), {}),
    ("between_duplicate_and_member", _dup_number_member,
     (T(2, 4), Num(3, "int"), Same(0), Shared(12, ROWS, LAST_ROWS_OWN),
      Num(0.5, "float")), {}),
    ("none/index_put_", lambda x, i, j, v, acc:
     torch.ops.aten.index_put_(x, [i, j], v, acc),
     (T(10, 4), T(2, dtype=I64), NONE, T(2, 4), Num(True, "bool")),
     {"lists": ((1, 2, True),)}),
    ("none/index_put_/first", lambda x, i, j, v, acc:
     torch.ops.aten.index_put_(x, [i, j], v, acc),
     (T(3, 10, how="t"), NONE, T(2, dtype=I64), T(3, 2),
      Num(False, "bool")),
     {"lists": ((1, 2, True),)}),
    ("none/index", lambda x, i, j: torch.ops.aten.index(x, [i, j]),
     (T(3, 10), NONE, T(3, dtype=I64)), {"lists": ((1, 2, True),)}),
    ("none/clamp_min", lambda x, lo, hi: x.clamp_(lo, hi),
     (T(2, 3), NONE, T(2, 3)), {}),
    ("none/clamp_max/out", lambda x, lo, hi, o: torch.clamp(x, lo, hi, out=o),
     (T(2, 3), T(2, 3, how="t"), NONE, T(2)), {}),
    ("none/between_duplicate_and_member", _dup_none_member,
     (T(2, 4), NONE, Same(0), T(2, 4), Shared(12, ROWS, LAST_ROWS)), {}),
]

for name, fn, parts, options in ARGUMENTS:
    add("arguments", name, fn, *parts, **options)


# ---- 14. requires-grad in training -----------------------------------------
# Training calls (`with training`) whose inputs or updated values require
# grad: whether each input requires grad after the write-back, with grad
# on or off at the call.

def _t_both(x, y, p):
    x.t_()
    y.t_()
    return p * 2


GRAD = [
    ("copy_from_grad", returns_nothing(lambda x, p: x.copy_(p * 2)),
     (T(3), T(3)), Grad(requires=(1,))),
    ("mul_by_grad", returns_nothing(lambda x, p: x.mul_(p)),
     (T(2, 2, how="t"), T(2, 2)), Grad(requires=(1,))),
    ("copy_from_grad/grad_off", returns_nothing(lambda x, p: x.copy_(p * 2)),
     (T(3), T(3)), Grad(requires=(1,), enabled=False)),
    ("grad_only_in_output", lambda x, p: (x.add_(1), p * 2)[1],
     (T(3), T(3)), Grad(requires=(1,))),
    ("view_requires_grad", returns_nothing(lambda x, y: y.mul_(3)),
     (Shared(8, EVEN, ((4,), (2,), 1, 0)),), Grad(requires=(1,))),
    ("metadata_only", _t_both, (T(2, 3), T(3, 2), T(2)),
     Grad(requires=(0, 2))),
    ("data_metadata", returns_nothing(lambda x, p: x.t_().mul_(p)),
     (T(2, 3), T(3, 2)), Grad(requires=(1,))),
    ("resize", returns_nothing(lambda o, p: o.resize_(4).copy_(p)),
     (T(2), T(4)), Grad(requires=(1,))),
]

def _dup_both(x, x2, p):
    x.mul_(p)
    x2.add_(1)


def _dup_t_read(x, x2, p):
    x.t_()
    return x2 * p


GRAD += [
    ("duplicate/written_from_grad", returns_nothing(_dup_both),
     (T(2, 3), Same(0), T(2, 3)), Grad(requires=(2,))),
    ("duplicate/requires_grad", returns_nothing(_dup_both),
     (T(3, how="t"), Same(0), T(3)), Grad(requires=(0,))),
    ("duplicate/requires_grad/grad_off", returns_nothing(_dup_both),
     (T(3), Same(0), T(3)), Grad(requires=(0,), enabled=False)),
    ("duplicate/metadata", _dup_t_read, (T(2, 3), Same(0), T(3, 2)),
     Grad(requires=(0, 2))),
    ("synthetic/member_from_grad",
     returns_nothing(lambda x, y, p: y.mul_(p)),
     (Shared(12, ROWS, LAST_ROWS), T(2, 4)), Grad(requires=(2,))),
    ("synthetic/member_requires_grad",
     returns_nothing(lambda x, y: y.add_(1)),
     (Shared(12, ROWS, LAST_ROWS),), Grad(requires=(1,))),
    ("synthetic/both_written/grad_off",
     returns_nothing(lambda x, y, p: (x.add_(1), y.mul_(p))),
     (Shared(12, ROWS, LAST_ROWS), T(2, 4)),
     Grad(requires=(2,), enabled=False)),
    ("number/float_alpha",
     returns_nothing(lambda x, p, a: x.add_(p, alpha=a)),
     (T(3), T(3), Num(-2.0, "float")), Grad(requires=(1,))),
    ("synthetic/sum_out", lambda x, y, p: (y.mul_(p), x.sum())[1],
     (Shared(12, ROWS, LAST_ROWS), T(2, 4)), Grad(requires=(2,))),
]

for name, fn, parts, grad in GRAD:
    add("grad", name, fn, *parts, grad=grad)


# ---- 15. calls wrapbake refuses ---------------------------------------------

def _resize_and_add(x, y):
    x.resize_(16).fill_(1)
    y.add_(1)


def _resize_and_t(x, y):
    x.resize_(20)
    x.zero_()
    y.t_()


def _overlap_then_write(x):
    x.as_strided_((2, 3), (0, 1))
    x[0].mul_(2)


REFUSED = [
    ("resize_shares_storage", _resize_and_add,
     (Shared(12, ROWS, LAST_ROWS),)),
    ("resize_shares_storage_independent", _resize_and_t,
     (Shared(12, ROWS, LAST_ROWS_OWN),)),
    ("overlapping_input/data", lambda x: x[0].add_(1),
     (Shared(3, ((2, 3), (0, 1), 0, 0)),)),
    ("overlapping_input/windows", lambda x: x[1].zero_(),
     (Shared(4, ((3, 2), (1, 1), 0, 0)),)),
    ("overlapping_after/data_metadata", _overlap_then_write, (T(6),)),
]

for name, fn, parts in REFUSED:
    add("refused", name, fn, *parts, refused=True)


# ===========================================================================
# Start-up checks and the main program

def inplace_view_ops():
    """Every aten overload tagged inplace_view in this torch."""
    found = set()
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::"):
            continue
        name = schema.name[len("aten::"):]
        overload = schema.overload_name or "default"
        packet = getattr(torch.ops.aten, name, None)
        op = getattr(packet, overload, None) if packet is not None else None
        if op is not None and torch.Tag.inplace_view in op.tags:
            found.add(f"{name}.{overload}")
    return found


def check_unrunnable():
    """The inplace_view overloads left without a case must still fail."""
    for name, message in UNRUNNABLE_INPLACE_VIEWS.items():
        x = torch.zeros(2, 1, names=("a", "b"))
        method = getattr(x, name.split(".")[0])
        try:
            method("b")
        except RuntimeError as e:
            assert message in str(e), f"{name}: unexpected error {e}"
        else:
            raise AssertionError(f"{name} now runs: give it a case")


def main(argv):
    if len(argv) != 2:
        print(f"usage: {argv[0]} OUT", file=sys.stderr)
        return 2
    start = time.monotonic()
    torch.set_num_threads(1)
    # Cases resize out= tensors and name dimensions on purpose.
    warnings.filterwarnings("ignore", category=UserWarning)
    check_unrunnable()

    names = [c.name for c in CASES]
    assert len(set(names)) == len(names), "case names repeat"
    assert all(re.fullmatch(r"[A-Za-z0-9_.:/+-]+", n) for n in names)
    lines, seen, counts = [], set(), {}
    for index, c in enumerate(CASES):
        try:
            text, ops = generate(index, c)
        except Exception as e:
            raise SystemExit(f"case {c.name}: {type(e).__name__}: {e}")
        lines += text
        seen |= ops | set(c.covers)
        counts[c.category] = counts.get(c.category, 0) + 1

    missing = inplace_view_ops() - seen - set(UNRUNNABLE_INPLACE_VIEWS)
    assert not missing, f"inplace_view ops without a case: {sorted(missing)}"
    assert len(CASES) >= 150, "the suite needs at least 150 cases"

    with open(argv[1], "w") as f:
        f.write(f"# wrapbake conformance cases from torch {torch.__version__}"
                f", written by tests/torch/gen.py: {len(CASES)} cases\n")
        f.write("\n".join(lines) + "\n")
    for category, count in counts.items():
        print(f"{category}: {count} cases", file=sys.stderr)
    print(f"total: {len(CASES)} cases, "
          f"{sum(c.refused for c in CASES)} refused, "
          f"{time.monotonic() - start:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
